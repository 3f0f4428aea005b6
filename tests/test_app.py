"""Streamlit pages through AppTest: roles decide the pages, the Datasets page shows the store."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from streamlit.testing.v1 import AppTest

from foil_studio.annotate import browse
from foil_studio.data import store
from foil_studio.views.registry import PAGES, ROLES
from foil_studio.views.text import WORD_JOINER
from tests.conftest import ADMIN_PAGES, FOIL_CLI, REPO, SMALL_DEMO, dataset_box, visit_admin_pages
from tests.conftest import APP_ADMIN as ADMIN


def texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def test_admin_sees_datasets_with_counts_and_items(app):
    at = app(ADMIN)
    assert not at.exception
    assert [t.value for t in at.title] == ["Datasets"]
    table = at.dataframe[0].value
    assert table.set_index("dataset").loc["demo-sugarcrepe", "items"] == 7 * SMALL_DEMO.pairs_per_category
    assert (
        table.set_index("dataset").loc["demo-bivlc", "images missing"] == 0
        and table.set_index("dataset").loc["demo-bivlc", "images"] == "all found"
    )
    assert texts(at)[0].startswith(f"1 of {7 * SMALL_DEMO.pairs_per_category}  ") and texts(at)[0].endswith(
        "(pair, #1)"
    )  # numbered within the dataset
    assert texts(at)[1].startswith("positive: ") and texts(at)[2].startswith("negative: ")
    assert len(at.get("image")) == 10  # one image per pair on the first page


def test_item_browser_filters_by_dataset_category_and_page(app):
    at = app(ADMIN)
    at.selectbox(key="dataset").set_value("demo-hard-positives").run()
    at.selectbox(key="category").set_value("swap_att").run()
    shown = [t for t in texts(at) if " of " in t and "(triple, #" in t]
    assert shown and all(" swap_att " in t for t in shown)
    assert any(t.startswith("hard positive: ") for t in texts(at))
    assert any(t.startswith("The altered caption is ") for t in texts(at))  # ground truth in words, not raw JSON
    assert not at.json
    first_page = shown
    at.number_input(key="page").set_value(2).run()
    assert not at.exception
    assert [t for t in texts(at) if " of " in t and "(triple, #" in t] != first_page


def test_item_browser_grid_marks_candidates_and_numbers_items_within_the_dataset(app, demo_db):
    at = app(ADMIN)
    at.selectbox(key="dataset").set_value("demo-bivlc-candidates").run()
    at.radio(key="items_layout").set_value("grid").run()
    assert not at.exception
    headings = [t for t in texts(at) if "(#" in t]
    n_items = store.count_items(demo_db, store.get_dataset(demo_db, "demo-bivlc-candidates")["id"])
    assert [h.split(".")[0] for h in headings] == [str(i) for i in range(1, min(24, n_items) + 1)]
    captions = [image.caption for element in at.get("image") for image in element.proto.imgs]
    item = store.list_items(demo_db, store.get_dataset(demo_db, "demo-bivlc-candidates")["id"], limit=1)[0]
    best = chr(ord("A") + item["truth"]["best"])
    assert any(f"candidate {best} (valid, best)" in c for c in captions)  # the truth marked on the images


def test_an_image_folder_is_attached_after_an_import_that_found_none(app, demo_db, tmp_path):
    from PIL import Image

    data = tmp_path / "data"
    data.mkdir()
    (data / "swap_att.json").write_text(
        json.dumps(
            {
                "0": {"filename": "a.jpg", "caption": "a red cup", "negative_caption": "a cup red"},
                "1": {"filename": "b.jpg", "caption": "a blue box", "negative_caption": "a box blue"},
            }
        )
    )
    at = app(ADMIN)
    at.selectbox(key="import_format").set_value("sugarcrepe").run()
    at.text_input(key="import_path").set_value(str(data)).run()
    at.text_input(key="import_name").set_value("mine").run()
    at.button(key="import").click().run()
    assert at.dataframe[0].value.set_index("dataset").loc["mine", "images missing"] == 2
    folder = tmp_path / "images"
    folder.mkdir()
    for name in ("a.jpg", "b.jpg"):
        Image.new("RGB", (32, 32), "red").save(folder / name)
    at.selectbox(key="dataset").set_value("mine").run()
    at.text_input(key="attach_folder:mine").set_value(str(folder)).run()
    at.button(key="attach_images").click().run()
    assert not at.exception
    row = at.dataframe[0].value.set_index("dataset").loc["mine"]
    assert (row["images found"], row["images missing"], row["items"]) == (2, 0, 2)  # nothing imported twice


def test_datasets_page_imports_a_benchmark_and_names_bad_rows(app, demo_db, fixtures, tmp_path):
    at = app(ADMIN)
    at.selectbox(key="import_format").set_value("sugarcrepe").run()
    at.text_input(key="import_path").set_value(str(fixtures / "sugarcrepe" / "data")).run()
    at.text_input(key="import_name").set_value("sugarcrepe-real").run()
    at.button(key="import").click().run()
    assert not at.exception
    assert any(s.value.startswith("sugarcrepe-real: 7511 new of 7511 items") for s in at.success)
    assert at.selectbox(key="dataset").value == "sugarcrepe-real"  # the page opens on the new dataset
    assert at.dataframe[0].value.set_index("dataset").loc["sugarcrepe-real", "items"] == 7511
    bad = tmp_path / "swap_att.json"
    bad.write_text('{"7": {"filename": "a.jpg", "caption": "a cat"}}')
    at.text_input(key="import_path").set_value(str(bad)).run()
    at.text_input(key="import_name").set_value("broken").run()
    at.button(key="import").click().run()
    assert not at.exception and any(e.value.startswith("Nothing was imported") for e in at.error)
    shown = [
        c.value for c in at.code if "swap_att.json, row 7" in c.value
    ]  # exact text, copyable: no invisible joiners
    assert shown and "negative_caption" in shown[0] and "\u2060" not in shown[0] and str(bad) in shown[0]
    assert "broken" not in store.dataset_names(demo_db)
    assert not at.get("progress")  # no half-full bar left under the error


def test_a_broken_image_file_is_named_not_a_crash(app, demo_db, tmp_path):
    from PIL import Image

    from foil_studio.data.loading import import_path

    Image.new("RGB", (900, 900), "white").save(tmp_path / "fine.jpg")
    (tmp_path / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    lines = [
        json.dumps(
            {
                "kind": "pair",
                "category": "replace_att",
                "id": str(n),
                "captions": ["a red cup", "a blue cup"],
                "images": [name],
            }
        )
        for n, name in enumerate(["fine.jpg", "broken.jpg"])
    ]
    (tmp_path / "two.jsonl").write_text("\n".join(lines))
    import_path(demo_db, "jsonl", tmp_path / "two.jsonl", images=tmp_path)
    at = app(ADMIN)
    at.selectbox(key="dataset").set_value("two").run()
    assert not at.exception
    assert len(at.get("image")) == 1 and any(c.value == "image: image file unreadable" for c in at.caption)


@pytest.fixture
def downloads(monkeypatch):
    """What each download button of a page would hand the browser: file name -> bytes.

    AppTest keeps no media files after a run, so the calls are recorded on their way in."""
    import streamlit
    from streamlit.delta_generator import DeltaGenerator

    captured: dict[str, bytes] = {}
    original = DeltaGenerator.download_button

    def record(self, label, data, file_name=None, *args, **kwargs):
        captured[file_name] = data if isinstance(data, bytes) else str(data).encode()
        return original(self, label, data, file_name, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", record)
    monkeypatch.setattr(streamlit, "download_button", lambda *a, **k: record(streamlit._main, *a, **k))
    return captured


def test_datasets_page_exports_a_dataset_as_a_zip(app, demo_db, tmp_path, downloads):
    from foil_studio.analysis import exports
    from foil_studio.analysis.exports import export_archive

    at = app(ADMIN)
    at.selectbox(key="dataset").set_value("demo-bivlc").run()
    at.selectbox(key="export_format").set_value("bivlc").run()
    # the count and size said before the export (read off the store's image records, not the files)
    files = exports.image_files(demo_db, "demo-bivlc")
    size = sum(path.stat().st_size for path in files.values())
    assert at.checkbox(key="export_images").label.startswith(
        f"Include the images ({len(files):,} files, {size / 1e6:,.1f} MB)"
    )
    at.button(key="export").click().run()
    assert not at.exception and len(at.get("download_button")) == 1
    report, archive = export_archive(demo_db, "demo-bivlc", "bivlc", tmp_path / "export")
    names = zipfile.ZipFile(io.BytesIO(archive)).namelist()
    assert (
        "bivlc.csv" in names
        and sum(n.startswith("images/") for n in names) == 2 * SMALL_DEMO.n_groups == 2 * report["n_items"]
    )
    offered = zipfile.ZipFile(io.BytesIO(downloads["demo-bivlc-bivlc.zip"]))  # the bytes the button hands out
    assert sorted(offered.namelist()) == sorted(names)
    assert offered.read("bivlc.csv") == zipfile.ZipFile(io.BytesIO(archive)).read("bivlc.csv")
    at.selectbox(key="export_format").set_value("sugarcrepe").run()
    at.button(key="export").click().run()
    assert any("the sugarcrepe layout holds pair items; demo-bivlc has group items" in e.value for e in at.error)


def test_datasets_page_opens_no_image_file_to_say_what_an_export_holds(app, monkeypatch):
    """At 100,000 items the page looked up every item's image file on every render (2.7 s of its
    3.5 s); the count and size come from the store's image records now."""
    from foil_studio.analysis import exports

    def looked_up(*args, **kwargs):
        raise AssertionError("the Datasets page looked up every image file")

    monkeypatch.setattr(exports, "image_files", looked_up)
    at = app(ADMIN)
    at.selectbox(key="dataset").set_value("demo-bivlc").run()
    assert not at.exception and at.checkbox(key="export_images").label.startswith("Include the images (")


def test_datasets_page_exports_negclips_training_table(app, demo_db, downloads):
    """The CLI's `export --format negclip-csv` was missing from the page's formats."""
    from foil_studio.annotate import batches, simulation

    at = app(ADMIN)
    at.selectbox(key="dataset").set_value("demo-sugarcrepe").run()
    at.selectbox(key="export_format").set_value("negclip-csv").run()
    assert not [s for s in at.selectbox if s.key == "export_subset"]  # the validated items, no subset
    at.button(key="export").click().run()
    assert any("demo-sugarcrepe has no validate_negative batch" in e.value for e in at.error)
    spec = batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("ada",), 1, 12, seed=4)
    simulation.simulate(demo_db, batches.create_batch(demo_db, spec)["batch"], accuracies=1.0)
    at.button(key="export").click().run()
    assert not at.exception
    table = zipfile.ZipFile(io.BytesIO(downloads["demo-sugarcrepe-negclip-csv.zip"])).read("negclip.tsv").decode()
    header, *rows = table.splitlines()
    assert header.split("\t") == ["filepath", "title", "neg_caption", "neg_image"] and 0 < len(rows) <= 12


def test_captions_are_plain_text_not_markup(app, demo_db):
    db = demo_db
    from foil_studio.data.formats import Parsed
    from foil_studio.data.items import Item
    from foil_studio.data.loading import store_parsed

    parsed = Parsed("jsonl", "html")
    parsed.add(Item("pair", "add_obj", "x", ("<b>bold</b> <script>alert(1)</script>", "**not bold**")), "x.jsonl", 1)
    store_parsed(db, parsed, source_format="jsonl", path="x.jsonl")
    at = app(ADMIN)
    at.selectbox(key="dataset").set_value("html").run()
    assert "positive: <b>bold</b> <script>alert(1)</script>" in texts(at)
    assert not any("<script>" in m.value for m in at.markdown)


def test_without_a_token_only_sign_in_exists(app):
    at = app(None)
    assert not at.exception
    assert [t.value for t in at.title] == ["Foil Studio"]
    assert len(at.dataframe) == 0


def test_a_wrong_token_is_refused(app):
    at = app("not-a-token")
    assert [t.value for t in at.title] == ["Foil Studio"]
    assert any("not valid" in e.value for e in at.error)
    assert len(at.dataframe) == 0


def test_an_annotator_token_never_reaches_the_datasets_page(app, demo_db):
    token = store.issue_token(demo_db, store.ensure_annotator(demo_db, "ada")["id"])
    at = app(token)
    assert not at.exception
    assert [t.value for t in at.title] == ["Welcome, ada"]
    assert len(at.dataframe) == 0
    # The admin pages are not even registered for an annotator's session.
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page("views/datasets.py")


def role_token(role: str, db) -> str | None:
    """A link token of the role: the admin's, a new annotator's, or none."""
    if role == "admin":
        return ADMIN
    return store.issue_token(db, store.ensure_annotator(db, "page-visitor")["id"]) if role == "annotator" else None


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.url_path)
def test_every_registered_page_opens_for_its_role_and_no_other(app, demo_db, page):
    """Every page of `views/registry.py` runs for its role and draws a title (and the dataset box its
    record names, listing the datasets of its rule); the other roles do not have it."""
    at = app(role_token(page.role, demo_db))
    at.switch_page(page.path).run()
    assert not at.exception and at.title, (page.path, at.exception)
    if page.box:
        rule = browse.datasets_holding(demo_db, page.box.item_kinds, with_runs=page.box.with_runs)
        if rule:
            assert dataset_box(at, page.path, page.box) == rule, page.path
        else:  # nothing to choose from: the page says why instead of drawing an empty box
            assert at.info, page.path
    for other in (r for r in ROLES if r != page.role):
        with pytest.raises(ValueError, match="Could not find a navigation page"):
            app(role_token(other, demo_db)).switch_page(page.path)


def test_model_scores_page_compares_runs_per_category(app, demo_db):
    from foil_studio.analysis.models import ModelSpec, load_model
    from foil_studio.analysis.scoring import score_dataset

    db = demo_db
    loaded = load_model(ModelSpec("foil-demo-clip", "none"), device="cpu")
    for run in ("page-a", "page-b"):
        score_dataset(db, "demo-bivlc", loaded, run=run)
    at = app(ADMIN)
    at.switch_page("views/model_scores.py").run()
    assert not at.exception
    at.selectbox(key="scores_dataset").set_value("demo-bivlc").run()
    overview = at.dataframe[0].value
    assert {"page-a", "page-b"} <= set(overview["run"]) and "group" in overview.columns
    at.selectbox(key="scores_metric:demo-bivlc").set_value("group").run()
    table = at.dataframe[1].value.set_index("category")
    assert {"replace_obj", "swap_att", "(all)"} <= set(table.index) and not {"replace", "swap", "add"} & set(
        table.index
    )
    assert table.loc["(all)", "n"] == store.count_items(db, store.get_dataset(db, "demo-bivlc")["id"])
    assert len(at.get("plotly_chart")) == 1
    at.radio(key="scores_level:demo-bivlc").set_value("type").run()  # BiVLC's types on their own axis
    by_type = at.dataframe[1].value.set_index("category")
    assert set(by_type.index) == {"add", "replace", "swap", "(all)"}
    assert by_type.drop(index="(all)")["n"].sum() == table.loc["(all)", "n"]


def test_the_app_shows_the_intervals_the_cli_prints(app, demo_db):
    """One computation, one seed: the page's 95% intervals are the CLI's, to the digit shown."""
    import subprocess

    from foil_studio.analysis.models import demo_model_spec, load_model
    from foil_studio.analysis.scoring import score_dataset

    score_dataset(demo_db, "demo-sugarcrepe", load_model(demo_model_spec(), device="cpu"), run="demo-clip")
    done = subprocess.run(
        [
            *FOIL_CLI,
            "metrics",
            "demo-sugarcrepe",
            "--run",
            "demo-clip",
            "--json",
            "--db",
            str(store.location(demo_db)),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    cli = json.loads(done.stdout)
    at = app(ADMIN)
    at.switch_page("views/model_scores.py").run()
    at.selectbox(key="scores_dataset").set_value("demo-sugarcrepe").run()
    at.multiselect(key="scores_runs:demo-sugarcrepe").set_value(["demo-clip"]).run()
    at.selectbox(key="scores_metric:demo-sugarcrepe").set_value("accuracy_micro").run()
    shown = at.dataframe[1].value.set_index("category")["demo-clip 95% CI"].to_dict()
    expected = {c: cli["category_intervals"][c]["accuracy_micro"] for c in cli["by_category"]} | {
        "(all)": cli["intervals"]["accuracy_micro"]
    }
    assert shown == {c: f"{low:.2f} to {high:.2f}" for c, (low, high) in expected.items()}


def test_retrieval_scores_draw_the_chance_of_their_own_number_of_captions(app, demo_db):
    from foil_studio.analysis.models import demo_model_spec, load_model
    from foil_studio.analysis.scoring import score_dataset

    score_dataset(demo_db, "demo-crepe", load_model(demo_model_spec(), device="cpu"), run="demo-clip")
    at = app(ADMIN)
    at.switch_page("views/model_scores.py").run()
    at.selectbox(key="scores_dataset").set_value("demo-crepe").run()
    at.selectbox(key="scores_metric:demo-crepe").set_value("recall_at_1").run()
    layout = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]
    assert [a["text"] for a in layout["annotations"]] == ["chance 25.0"]  # one true caption among four


def test_model_scores_page_puts_humans_next_to_the_model(app, demo_db):
    from foil_studio.analysis.models import ModelSpec, load_model
    from foil_studio.analysis.scoring import score_dataset
    from foil_studio.annotate import batches, simulation

    score_dataset(demo_db, "demo-bivlc", load_model(ModelSpec("foil-demo-clip", "none"), device="cpu"), run="model")
    for task in ("baseline_i2t", "baseline_t2i"):
        created = batches.create_batch(demo_db, batches.BatchSpec("demo-bivlc", task, ("ada",), 1, 20, seed=1))
        simulation.simulate(demo_db, created["batch"], accuracies=1.0)
    at = app(ADMIN)
    at.switch_page("views/model_scores.py").run()
    at.selectbox(key="scores_dataset").set_value("demo-bivlc").run()
    at.multiselect(key="scores_runs:demo-bivlc").set_value(["model"]).run()
    at.selectbox(key="scores_metric:demo-bivlc").set_value("group").run()
    table = at.dataframe[1].value.set_index("category")
    assert table.loc["(all)", "humans"] == "100.00" and "model" in table.columns
    assert not at.exception
    traces = json.loads(at.get("plotly_chart")[0].proto.spec)["data"]
    assert [(t["type"], t["name"]) for t in traces] == [
        ("bar", "model"),
        ("scatter", f"humans ({table.loc['(all)', 'humans n']} items)"),
    ]  # a human line over the bars
    assert (
        table.loc["(all)", "humans 95% CI"] and table.loc["(all)", "humans n"] < table.loc["(all)", "n"]
    )  # humans answered a sample, said so
    # 20 of 20 right: Clopper-Pearson's lower end 0.025^(1/20), not the bootstrap's 100.00, and too few to cite
    n = table.loc["(all)", "humans n"]
    assert table.loc["(all)", "humans 95% CI"] == f"{100 * 0.025 ** (1 / n):.2f} to 100.00"
    said = " ".join(c.value for c in at.caption).replace(WORD_JOINER, "")
    assert f"Humans' group: 100.00 from {n} items (95% CI " in said and "too few for a baseline (30 needed)." in said


def test_model_scores_with_a_baseline_answered_in_one_category_leaves_the_others_empty_and_says_why(app, demo_db):
    """A baseline batch with no answer yet, and one drawn with --category and answered: the page
    opened on a TypeError (the humans' missing intervals); no human figure is shown before an
    item is decided, and a category without one has empty humans cells and a sentence saying so."""
    from foil_studio.analysis.models import ModelSpec, load_model
    from foil_studio.analysis.scoring import score_dataset
    from foil_studio.annotate import batches, simulation

    score_dataset(demo_db, "demo-sugarcrepe", load_model(ModelSpec("foil-demo-clip", "none"), device="cpu"), run="m")
    batches.create_batch(demo_db, batches.BatchSpec("demo-sugarcrepe", "baseline_i2t", ("ada",), 1, 6, name="empty"))
    at = app(ADMIN)
    at.switch_page("views/model_scores.py").run()
    at.selectbox(key="scores_dataset").set_value("demo-sugarcrepe").run()
    assert not at.exception
    assert "humans" not in at.dataframe[1].value.columns  # nothing decided: no human column, no sentence
    assert not any("Humans:" in c.value for c in at.caption)

    spec = batches.BatchSpec("demo-sugarcrepe", "baseline_i2t", ("ada",), 1, None, categories=("swap_att",), seed=2)
    simulation.simulate(demo_db, batches.create_batch(demo_db, spec)["batch"], accuracies=1.0)
    at.run()
    assert not at.exception
    table = at.dataframe[1].value.set_index("category")
    assert table.loc["swap_att", "humans"] == "100.00" and table.loc["swap_att", "humans 95% CI"]
    others = table.drop(index=["swap_att", "(all)"])
    assert (others["humans"] == "").all() and (others["humans 95% CI"] == "").all() and (others["humans n"] == 0).all()
    said = " ".join(c.value for c in at.caption)
    assert "No item of add_att, add_obj" in said and "their humans cells are empty" in said
    assert "None" not in at.dataframe[0].value.to_string()  # the runs table: no "None" for a missing pretrained tag


def test_score_now_with_the_defaults_scores_offline_and_shows_the_new_run(app, demo_db):
    at = app(ADMIN)
    at.switch_page("views/model_scores.py").run()
    at.selectbox(key="score_dataset").set_value("demo-crepe").run()
    assert at.text_input(key="score_run").placeholder == "foil-demo-clip"  # the demo model, named once
    at.text_input(key="score_run").set_value("my-first-run").run()
    at.button(key="score_now").click().run()
    assert not at.exception
    n_items = store.count_items(demo_db, store.get_dataset(demo_db, "demo-crepe")["id"])
    assert any(f"Scored {n_items} items as run my-first-run" in s.value for s in at.success)
    assert "my-first-run" in [r["run"] for r in store.list_runs(demo_db, "demo-crepe")]
    assert at.selectbox(key="scores_dataset").value == "demo-crepe" and at.multiselect(
        key="scores_runs:demo-crepe"
    ).value == ["my-first-run"]
    assert "my-first-run" in at.dataframe[1].value.columns  # its figures are on screen


def test_score_now_with_an_open_clip_model_names_the_run_after_it(app, demo_db):
    at = app(ADMIN)
    at.switch_page("views/model_scores.py").run()
    at.selectbox(key="score_dataset").set_value("demo-crepe").run()
    at.radio(key="score_source").set_value("an open_clip model").run()
    at.text_input(key="score_arch").set_value("foil-demo-clip").run()
    at.text_input(key="score_tag").set_value("none").run()
    assert at.selectbox(key="score_precision").value == "auto"
    at.button(key="score_now").click().run()
    assert not at.exception
    import torch

    from foil_studio.analysis.models import resolve_precision

    precision, why = resolve_precision("auto", torch.device("cpu"))  # this machine's answer, read at run time
    run = "foil-demo-clip-none" + ("-bf16" if precision == "bf16" else "")
    assert run in [r["run"] for r in store.list_runs(demo_db, "demo-crepe")]
    assert store.get_run(demo_db, "demo-crepe", run)["meta"]["precision_reason"] == why


def test_score_now_reports_missing_weights_without_a_trace(app, demo_db, tmp_path):
    at = app(ADMIN)
    at.switch_page("views/model_scores.py").run()
    at.radio(key="score_source").set_value("an open_clip model").run()
    at.text_input(key="score_arch").set_value("foil-demo-clip").run()
    at.text_input(key="score_checkpoint").set_value(str(tmp_path / "missing.pt")).run()
    at.button(key="score_now").click().run()
    assert not at.exception and any("does not exist" in e.value for e in at.error)


@pytest.mark.slow
def test_every_admin_page_renders_every_dataset_and_run(demo_db, fixtures, admin_page):
    """A smoke test over everything the store can hold: demo datasets of the five item kinds the demo holds,
    scored, plus imported BiVLC, SugarCrepe-correct and GPT-4V runs; no page may fail on any."""
    from foil_studio.analysis.models import ModelSpec, load_model
    from foil_studio.analysis.scoring import score_dataset
    from foil_studio.data.loading import import_path

    model = load_model(ModelSpec("foil-demo-clip", "none"), device="cpu")
    for name in store.dataset_names(demo_db):
        score_dataset(demo_db, name, model, run="random")
    import_path(demo_db, "bivlc-results", fixtures / "bivlc" / "results" / "BiVLC_CLIP_COCO.csv")
    import_path(demo_db, "sugarcrepe-correct", fixtures / "bivlc" / "results" / "SUGARCREPE_CORRECT_CLIP_COCO.csv")
    import_path(demo_db, "gpt4v", fixtures / "sugarcrepe" / "gpt4v")
    visited = visit_admin_pages(admin_page, store.location(demo_db))
    # every page opened on each dataset its record's rule lists (`visit_admin_pages` checks the lists): all
    # 6 demo and 2 imported datasets somewhere, and every page with a box on at least one
    assert {d for _, d in visited} == set(store.dataset_names(demo_db))
    assert {page for page, _ in visited} == {page for page, _ in ADMIN_PAGES}
