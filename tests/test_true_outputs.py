"""What the tool hands out is true of what was stored: the protocol paragraph, p-values and
intervals written one way, answers and truths in words (issue "Everything the tool hands out is true")."""

from __future__ import annotations

import re
import subprocess
from collections import Counter

import pytest

from foil_studio.annotate import batch_reports, batches, browse, export, simulation
from foil_studio.data import plain_text, store
from tests.conftest import FOIL_CLI, REPO

NUMBER = re.compile(r"-?\d+(?:\.\d+)")  # figures with decimals: the coefficients and their intervals


def simulated_batch(db, task: str, dataset: str, *, gold: float = 0.0, accuracy: float = 0.8) -> str:
    spec = batches.BatchSpec(dataset, task, ("ada", "ben", "cleo"), 2, 24, gold_share=gold, seed=3, min_seconds=0)
    name = batches.create_batch(db, spec)["batch"]
    simulation.simulate(db, name, accuracies=accuracy, seed=3)
    return name


def test_every_figure_of_the_protocol_paragraph_is_in_the_batch_pages_table(demo_db, admin_page):
    name = simulated_batch(demo_db, "validate_negative", "demo-sugarcrepe", gold=0.1)
    paragraph = export.protocol_paragraph(demo_db, name)
    at = admin_page(store.location(demo_db), "views/batches.py")
    at.selectbox(key="batch").set_value(name).run()
    assert not at.exception
    table = next(frame.value for frame in at.dataframe if "coefficient" in frame.value.columns)
    shown = {v for v in table["value"] if v}  # written with two decimals on the page, empty where undefined
    shown |= {end for interval in table["95% interval"] if interval for end in interval.split(" to ")}
    agreement = paragraph[paragraph.index("Agreement on") : paragraph.index("intervals from")]
    figures = NUMBER.findall(agreement)
    assert len(figures) >= 8 and set(figures) <= shown, set(figures) - shown
    for coefficient, interval in zip(table["coefficient"], table["95% interval"]):
        if interval:
            assert f"{coefficient} " in paragraph and f"(95% CI {interval})" in paragraph
    report = batch_reports.batch_agreement(demo_db, name)
    assert f"{report['bootstrap']['resamples']:,} bootstrap resamples" in paragraph
    assert "-0.00" not in paragraph and not re.search(r"\b(\d+)-\1\b", paragraph)  # no "10-10 items", no negative zero


def test_the_randomisation_sentence_follows_the_stored_orders(demo_db):
    fixed = simulated_batch(demo_db, "validate_negative", "demo-sugarcrepe")
    shuffled = simulated_batch(demo_db, "pick_image", "demo-bivlc-candidates")
    for name, varies in ((fixed, False), (shuffled, True)):
        labels = store.batch_labels(demo_db, store.get_batch(demo_db, name)["id"])
        orders = Counter(tuple(label["displayed_order"]) for label in labels)
        assert (len(orders) > 1) == varies
        paragraph = export.protocol_paragraph(demo_db, name)
        if varies:
            assert "shuffled" in paragraph and f"{len(orders)} different orders among {len(labels)} labels" in paragraph
        else:
            assert (
                "shown in the same order on every item" in paragraph
                and "shuffled" not in paragraph
                and "randomised" not in paragraph
            )


def test_counts_in_the_paragraph_are_the_stored_ones(demo_db):
    name = simulated_batch(demo_db, "validate_negative", "demo-sugarcrepe", gold=0.1)
    labels = store.batch_labels(demo_db, store.get_batch(demo_db, name)["id"])
    per_annotator = Counter(label["annotator"] for label in labels)
    paragraph = export.protocol_paragraph(demo_db, name)
    assert paragraph.startswith(f"{len(per_annotator)} annotators labelled ")
    assert (
        f"each annotator labelled {plain_text.count_range(min(per_annotator.values()), max(per_annotator.values()))} "
        "items" in paragraph
    )
    assert (
        f"{len(labels)} of the {len(labels)} labels were simulated" in paragraph
    )  # and so no person's time is claimed
    assert "Median time per item" not in paragraph
    assert all(
        row["median_seconds"] is None for row in batch_reports.batch_progress(demo_db, name)
    )  # nor on the progress table


def test_mcnemar_p_reads_the_same_in_the_cli_and_on_the_page(demo_db, tmp_path):
    import pandas as pd

    from foil_studio.analysis.inspection import compare_correctness, comparison_for_people

    a = pd.DataFrame({"item": range(60), "category": ["x"] * 60, "correct": [True] * 60})
    b = pd.DataFrame({"item": range(60), "correct": [False] * 50 + [True] * 10})
    table = compare_correctness(a, b, "A", "B")
    p = float(table.loc[table["category"] == "(all)", "McNemar p"].iloc[0])
    assert p < 1e-10  # 50 discordant pairs, all one way
    written = comparison_for_people(table).loc[table["category"] == "(all)", "McNemar p"].iloc[0]
    assert written == plain_text.p_value_text(p) and written != "0.00" and "e-" in written


def test_p_values_and_intervals_are_written_one_way():
    assert plain_text.p_value_text(0.5) == "0.500" and plain_text.p_value_text(2e-14) == "2.0e-14"
    assert plain_text.interval_text((-32.857, -24.29)) == "-32.86 to -24.29"
    assert plain_text.cell(-0.0001) == "0.00" and plain_text.figure(-0.004) == "0.00"


def test_valse_truth_is_said_with_its_crowd_votes(fresh_db, fixtures):
    from foil_studio.data.loading import import_path

    import_path(fresh_db, "valse", fixtures / "valse" / "data" / "existence.json")
    items = store.list_items(fresh_db, store.get_dataset(fresh_db, "valse")["id"], limit=5)
    cards = browse.cards_for(fresh_db, "valse", [i["id"] for i in items])
    for card, item in zip(cards, items):
        lines = browse.truth_in_words(card)
        votes = item["meta"]["votes"]
        assert not any("valid_foil" in line for line in lines)
        assert any(f"{votes['caption']} of {sum(votes.values())} workers chose the caption" in line for line in lines)


def test_answer_charts_use_the_options_words(demo_db):
    name = simulated_batch(demo_db, "validate_negative", "demo-sugarcrepe")
    words = {row["answer"] for row in browse.answers_in_words(demo_db, name)}
    assert words <= {"Altered is wrong", "Altered is also true", "Unsure"} and words
    ranked = simulated_batch(demo_db, "rank_captions", "demo-hard-positives")
    answers = browse.answers_in_words(demo_db, ranked)
    assert all("rank_" not in row["answer"] and "rank of the negative caption" in row["answer"] for row in answers)


@pytest.mark.parametrize(
    ("task", "dataset", "words"),
    [
        ("baseline_i2t", "demo-sugarcrepe", {"chose the positive", "chose the negative"}),
        ("validate_negative", "demo-sugarcrepe", {"Altered is wrong", "Altered is also true", "Unsure"}),
        ("pick_image", "demo-bivlc-candidates", {*(f"chose candidate {c}" for c in "ABCD"), "chose none"}),
    ],
)
def test_an_answer_is_said_in_the_same_words_on_the_item_cards_and_in_the_answer_chart(demo_db, task, dataset, words):
    """One function puts a stored answer in words (`TaskType.answer_words`): in the item's terms
    (which caption, which candidate), never by the position it happened to be shown in."""
    name = simulated_batch(demo_db, task, dataset)
    charted = [row["answer"] for row in browse.answers_in_words(demo_db, name)]
    assert set(charted) <= words and len(set(charted)) > 1
    labels = store.batch_labels(demo_db, store.get_batch(demo_db, name)["id"])
    cards = browse.cards_for(demo_db, dataset, sorted({label["item"] for label in labels}))
    lines = [line for found in browse.human_label_lines(demo_db, cards).values() for line in found]
    mine = [line.split(f"{name} ({task})", 1)[1] for line in lines if f"{name} ({task})" in line]
    said = [line.split(": ", 1)[1] for line in mine]  # "{answer} (right) · simulated"
    on_cards = [next(w for w in words if text == w or text.startswith((f"{w} (", f"{w} ·"))) for text in said]
    assert Counter(on_cards) == Counter(charted)


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_the_help_make_run_points_to_works_from_a_terminal(flag):
    done = subprocess.run([*FOIL_CLI, flag], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr and "migrate-store" in done.stdout


# --- links -----------------------------------------------------------------------------------------


def test_links_start_with_the_configured_or_requested_address(monkeypatch):
    from foil_studio.annotate import links

    monkeypatch.delenv(links.BASE_URL_VARIABLE, raising=False)
    assert links.app_address("http://10.0.0.5:8765/batches?token=t") == "http://10.0.0.5:8765"
    assert links.app_address(None) is None
    monkeypatch.setenv(links.BASE_URL_VARIABLE, "https://annotate.lab.org/foil/")
    assert (
        links.app_address("http://127.0.0.1:8501/") == "https://annotate.lab.org/foil"
    )  # behind a proxy, the configured one
    assert links.crowd_link("https://x.org", "tok").startswith("https://x.org/?study=tok&PROLIFIC_PID=")


def test_cli_links_never_guess_a_port(tmp_path, monkeypatch):
    db = tmp_path / "f.db"
    env = {k: v for k, v in __import__("os").environ.items() if k != "FOIL_BASE_URL"}

    def run(*a, **extra):
        return subprocess.run(
            [*FOIL_CLI, *a, "--db", str(db), "--json"],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=120,
            env={**env, **extra},
        )

    import json

    plain = run("annotator", "add", "ada")
    assert (
        json.loads(plain.stdout)["url"].startswith("/?token=")
        and "8501" not in plain.stdout
        and "--base-url" in plain.stderr
    )
    given = json.loads(run("annotator", "add", "ben", "--base-url", "http://lab:9100/").stdout)
    assert given["url"].startswith("http://lab:9100/?token=")
    configured = json.loads(
        subprocess.run(
            [*FOIL_CLI, "annotator", "link", "ada", "--db", str(db), "--json"],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=120,
            env={**env, "FOIL_BASE_URL": "https://l.org"},
        ).stdout
    )
    assert configured["url"] == f"https://l.org/?token={configured['token']}"


@pytest.mark.both_engines
def test_a_lost_link_is_issued_again_and_the_old_one_kept_or_revoked(demo_db):
    first = store.ensure_annotator(demo_db, "zora")["token"]
    kept = batches.reissue_link(demo_db, "zora", revoke_old=False)
    assert store.annotator_by_token(demo_db, first)["name"] == store.annotator_by_token(demo_db, kept)["name"] == "zora"
    fresh = batches.reissue_link(demo_db, "zora", revoke_old=True)
    assert store.annotator_by_token(demo_db, first) is None and store.annotator_by_token(demo_db, kept) is None
    assert store.annotator_by_token(demo_db, fresh)["name"] == "zora"
    stored = {row[0] for row in demo_db.execute("SELECT token_hash FROM annotator_tokens").fetchall()}
    assert fresh not in stored  # only hashes are kept
    with pytest.raises(batches.BatchError, match="no annotator named"):
        batches.reissue_link(demo_db, "nobody", revoke_old=True)


def test_the_batch_page_builds_links_from_the_configured_address(demo_db, admin_page, monkeypatch):
    monkeypatch.setenv("FOIL_BASE_URL", "http://annotate.example.org:8765")
    at = admin_page(store.location(demo_db), "views/batches.py")
    assert (
        at.text_input(key="base_url").value == "http://annotate.example.org:8765"
    )  # next to Create batch, before any batch
    at.selectbox(key="new_dataset").set_value("demo-sugarcrepe").run()
    at.multiselect(key="new_annotators").set_value([]).run()
    at.text_input(key="new_names").set_value("ada, ben").run()
    at.text_input(key="new_batch_name").set_value("pilot negatives").run()
    at.button(key="create_batch").click().run()
    assert not at.exception and at.selectbox(key="batch").value == "pilot negatives"  # the name chosen on the page
    shown = [c.value for c in at.code]
    assert len(shown) == 2 and all(s.startswith("http://annotate.example.org:8765/?token=") for s in shown)
    at.selectbox(key="relink_name").set_value("ada").run()
    at.checkbox(key="relink_revoke").check().run()
    at.button(key="relink").click().run()
    relinked = [c.value for c in at.code if c.value.startswith("http://annotate.example.org:8765/?token=")]
    assert relinked and store.annotator_by_token(demo_db, relinked[-1].split("token=")[1])["name"] == "ada"
    ada_first = next(
        s for s in shown if store.annotator_by_token(demo_db, s.split("token=")[1]) is None
    )  # revoked: ada's first link
    assert (
        ada_first and len([s for s in shown if store.annotator_by_token(demo_db, s.split("token=")[1])]) == 1
    )  # ben's still works


def test_an_export_with_its_images_imports_back_elsewhere(demo_db, tmp_path):
    import io
    import zipfile

    from foil_studio.analysis import exports
    from foil_studio.data.loading import import_path

    report, archive = exports.export_archive(demo_db, "demo-sugarcrepe", "jsonl", tmp_path / "out", with_images=True)
    unpacked = tmp_path / "elsewhere"
    zipfile.ZipFile(io.BytesIO(archive)).extractall(unpacked)
    assert report["images"] == len(exports.image_files(demo_db, "demo-sugarcrepe")) > 0
    other = store.open_db(tmp_path / "other.db")
    back = import_path(other, "jsonl", unpacked / "demo-sugarcrepe.jsonl", images=unpacked / "images", name="moved")
    assert back.n_items == report["n_items"] and back.missing_images == 0
