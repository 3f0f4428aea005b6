"""Inspection: gaps, run comparison with McNemar, failure patterns, and the page on demo and imported runs."""

from __future__ import annotations

import json

import pytest
from scipy.stats import binomtest

from foil_studio.analysis import inspection
from foil_studio.analysis.models import ModelSpec, demo_model_spec, load_model
from foil_studio.analysis.results import UnsupportedRunError
from foil_studio.analysis.scoring import score_dataset
from foil_studio.annotate import baselines, batches, browse, simulation
from foil_studio.data import plain_text, store
from foil_studio.data.loading import import_path


def bivlc_group_discordance(fixtures) -> tuple[int, int]:
    """Items whose BiVLC group score is right only for ViT-B-32, and only for CLIP_COCO, from the CSVs."""
    import csv

    def groups(model: str) -> list[bool]:
        with open(fixtures / "bivlc" / "results" / f"BiVLC_{model}.csv", newline="", encoding="utf-8") as handle:
            return [row["group_score"] == "True" for row in csv.DictReader(handle)]

    vit, coco = groups("ViT-B-32"), groups("CLIP_COCO")
    return sum(v and not c for v, c in zip(vit, coco)), sum(c and not v for v, c in zip(vit, coco))


@pytest.fixture
def scored(demo_db):
    score_dataset(demo_db, "demo-sugarcrepe", load_model(demo_model_spec(), device="cpu"), run="demo-clip")
    score_dataset(
        demo_db, "demo-sugarcrepe", load_model(ModelSpec("foil-demo-clip", "none"), device="cpu"), run="random"
    )
    return demo_db


def test_gaps_match_correctness(scored):
    table = inspection.item_table(scored, "demo-sugarcrepe", "demo-clip")
    assert ((table["s(c) - s(c_n)"] > 0) == table["correct"]).all()
    assert inspection.share_below_zero(table["s(c) - s(c_n)"]) == pytest.approx(100 * (~table["correct"]).mean())


def test_run_comparison_counts_add_up_and_mcnemar_sees_a_real_difference(scored):
    compared = inspection.compare_runs(scored, "demo-sugarcrepe", "demo-clip", "random").set_index("category")
    overall = compared.loc["(all)"]
    a, b = (
        inspection.item_table(scored, "demo-sugarcrepe", run).set_index("item")["correct"]
        for run in ("demo-clip", "random")
    )
    recount = {
        "both right": int((a & b).sum()),
        "only demo-clip": int((a & ~b).sum()),
        "only random": int((~a & b).sum()),
        "both wrong": int((~a & ~b).sum()),
    }
    assert {k: int(overall[k]) for k in recount} == recount and overall["n"] == len(a)
    assert overall["McNemar p"] < 0.001  # the trained model is not the random one


def test_failure_patterns_and_margins(scored):
    trained, random_model = (inspection.item_table(scored, "demo-sugarcrepe", run) for run in ("demo-clip", "random"))
    page, total = inspection.failures(trained, random_model, pattern="wrong for A, right for B", page_size=5)
    assert total > 0 and len(page) == min(5, total)
    assert (~page["correct"] & page["correct_b"]).all()
    gaps = page["s(c) - s(c_n)"].tolist()
    assert gaps == sorted(gaps)  # worst margin first
    with pytest.raises(ValueError, match="needs a second run"):
        inspection.failures(trained, pattern="wrong for both")


def test_wrong_for_the_model_but_right_for_humans_shows_their_labels(scored, admin_page):
    created = batches.create_batch(
        scored, batches.BatchSpec("demo-sugarcrepe", "baseline_i2t", ("ada", "bob"), 2, 60, seed=3)
    )
    simulation.simulate(scored, created["batch"], accuracies=1.0)
    humans = baselines.item_outcomes(scored, "demo-sugarcrepe")
    assert len(humans) == 60 and all(humans.values())  # perfect annotators: every answered item right
    table = inspection.item_table(scored, "demo-sugarcrepe", "random")
    assert "wrong for A, right for humans" in inspection.patterns_for(table, humans=humans)
    page, total = inspection.failures(table, humans=humans, pattern="wrong for A, right for humans", page_size=100)
    expected = {i for i in table.loc[~table["correct"], "item"] if i in humans}
    assert total == len(expected) > 0 and set(page["item"]) == expected and page["humans"].all()
    cards = browse.cards_for(scored, "demo-sugarcrepe", page["item"].tolist()[:3])
    lines = browse.human_label_lines(scored, cards)
    assert all(len(lines[card.id]) == 2 for card in cards)  # both annotators' answers on each row
    assert all(
        line.endswith("chose the positive (right) · simulated") and "baseline_i2t" in line
        for card in cards
        for line in lines[card.id]
    )
    with pytest.raises(ValueError, match="needs human baseline"):
        inspection.failures(table, pattern="wrong for A, right for humans")
    against = inspection.compare_correctness(table, inspection.human_table(humans), "random", "humans").set_index(
        "category"
    )
    assert (
        against.loc["(all)", "n"] == 60 and against.loc["(all)", "only random"] == 0
    )  # perfect humans: never wrong where the model is right
    assert against.loc["(all)", "only humans"] == len(expected) and against.loc["(all)", "McNemar p"] < 0.05
    at = admin_page(store.location(scored), "views/inspect_runs.py")
    at.selectbox(key="run_a:demo-sugarcrepe").set_value("random").run()
    at.selectbox(key="pattern").set_value("wrong for A, right for humans").run()
    assert not at.exception and any(h.value == "random against the humans" for h in at.subheader)
    assert any(f"{len(expected)} items, worst margin first" in c.value for c in at.caption)
    assert any(
        t.value.startswith("human · ") and t.value.endswith("(right) · simulated") for t in at.text
    )  # labels on the cards, said to be simulated


def test_brittle_items_of_hard_positive_runs(scored):
    score_dataset(
        scored, "demo-hard-positives", load_model(ModelSpec("foil-demo-clip", "none"), device="cpu"), run="random"
    )
    table = inspection.item_table(scored, "demo-hard-positives", "random")
    assert "brittle for A" in inspection.patterns_for(table)
    page, total = inspection.failures(table, pattern="brittle for A", page_size=10_000)
    positive, hard_positive = table["s(c) - s(c_n)"], table["s(c_p) - s(c_n)"]
    brittle = ((positive > 0) & (hard_positive < 0)) | ((hard_positive > 0) & (positive < 0))  # c_n between the two
    assert total == int(brittle.sum()) > 0 and set(page["item"]) == set(table.loc[brittle, "item"])


def test_retrieval_runs_have_a_margin_and_candidate_runs_are_refused(scored, admin_page):
    model = load_model(ModelSpec("foil-demo-clip", "none"), device="cpu")
    score_dataset(scored, "demo-crepe", model, run="random")
    table = inspection.item_table(scored, "demo-crepe", "random")
    assert ((table["s(c) - max s(c_n)"] > 0) == table["correct"]).all()  # a positive margin is a hit at rank 1
    score_dataset(scored, "demo-bivlc-candidates", model, run="random")
    with pytest.raises(UnsupportedRunError, match="no right answer"):
        inspection.item_table(scored, "demo-bivlc-candidates", "random")
    at = admin_page(store.location(scored), "views/inspect_runs.py")
    at.selectbox(key="inspect_dataset").set_value("demo-crepe").run()
    assert not at.exception and len(at.get("plotly_chart")) == 1
    at.selectbox(key="inspect_dataset").set_value("demo-bivlc-candidates").run()
    assert not at.exception and any("no right answer" in i.value for i in at.info)


def test_gap_histogram_counts_every_item_once_and_box_selection_lists_its_range(scored):
    tables = {run: inspection.item_table(scored, "demo-sugarcrepe", run) for run in ("demo-clip", "random")}
    bars = inspection.gap_histogram(tables, "s(c) - s(c_n)", bins=30)
    assert bars.groupby("run")["count"].sum().to_dict() == {run: len(t) for run, t in tables.items()}
    assert (
        bars.groupby(["run", "category"])["count"].sum().loc["random"].to_dict()
        == tables["random"]["category"].value_counts().to_dict()
    )
    assert inspection.selected_range(
        {"box": [{"x": [0.02, -0.01], "y": [0, 50]}], "points": []}
    ) == inspection.GapRange(-0.01, 0.02)
    assert inspection.selected_range({"box": [], "points": []}) is None
    listed = inspection.in_range(tables["demo-clip"], "s(c) - s(c_n)", inspection.GapRange(-0.01, 0.02))
    assert listed["s(c) - s(c_n)"].between(-0.01, 0.02).all() and listed["s(c) - s(c_n)"].is_monotonic_increasing
    on_one_facet = {
        "box": [{"x": [-1.0, 1.0]}],
        "points": [{"x": 0.1, "customdata": ["swap_obj"]}, {"x": 0.2, "customdata": ["swap_obj"]}],
    }
    chosen = inspection.selected_range(on_one_facet)
    assert chosen.categories == ("swap_obj",)
    assert set(inspection.in_range(tables["demo-clip"], "s(c) - s(c_n)", chosen)["category"]) == {
        "swap_obj"
    }  # the facet's items only
    paired = inspection.paired_gaps(tables["demo-clip"], tables["random"], "s(c) - s(c_n)")
    assert len(paired) == len(tables["random"]) and {"A", "B", "category"} <= set(paired.columns)


def test_inspect_page_on_demo_runs_and_imported_results(scored, fixtures, admin_page):
    import_path(scored, "bivlc-results", fixtures / "bivlc" / "results" / "BiVLC_ViT-B-32.csv")
    import_path(scored, "bivlc-results", fixtures / "bivlc" / "results" / "BiVLC_CLIP_COCO.csv")
    at = admin_page(store.location(scored), "views/inspect_runs.py")
    at.selectbox(key="inspect_dataset").set_value("demo-sugarcrepe").run()
    at.selectbox(key="run_a:demo-sugarcrepe").set_value("demo-clip").run()
    at.selectbox(key="run_b:demo-sugarcrepe").set_value("random").run()
    assert not at.exception and len(at.get("plotly_chart")) == 2  # gap histograms and the run-against-run gap scatter
    titles = [
        a["text"]
        for a in json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["annotations"]
        if "%" in a.get("text", "")
    ]
    assert len(titles) == 7 and all(
        t.count("% ≤ 0") == 2 for t in titles
    )  # each category: both runs' share of failures on the chart
    assert all("demo-clip " in t and "random " in t for t in titles)  # each share says whose it is
    slider = at.slider(key="gap_range:demo-sugarcrepe:demo-clip:s(c) - s(c_n)")
    slider.set_value((slider.min, slider.min)).run()
    at.selectbox(key="run_a:demo-sugarcrepe").set_value("random").run()
    fresh = at.slider(key="gap_range:demo-sugarcrepe:random:s(c) - s(c_n)")
    assert fresh.value == (fresh.min, min(0.0, fresh.max))  # another run starts from its own range, not the last one's
    at.selectbox(key="run_a:demo-sugarcrepe").set_value("demo-clip").run()
    assert any(t.value.startswith("positive: ") and "[" in t.value for t in at.text)  # differing words marked
    at.selectbox(key="inspect_dataset").set_value("bivlc").run()
    at.selectbox(key="run_b:bivlc").set_value("CLIP_COCO").run()
    assert not at.exception
    assert any("imported decisions" in i.value for i in at.info)
    comparison = at.dataframe[0].value.set_index("category")  # imported runs: no gap tables, just the comparison
    only_vit, only_coco = bivlc_group_discordance(fixtures)
    assert (only_vit, only_coco) == (160, 509)  # read from the two CSVs, not from the app
    assert comparison.loc["(all)", "n"] == 2933
    assert (comparison.loc["(all)", "only ViT-B-32"], comparison.loc["(all)", "only CLIP_COCO"]) == (
        only_vit,
        only_coco,
    )
    # the page writes p as the CLI does (plain_text.p_value_text): the oracle's p, written the same way
    assert comparison.loc["(all)", "McNemar p"] == plain_text.p_value_text(
        binomtest(only_vit, only_vit + only_coco, 0.5).pvalue
    )
    at.selectbox(key="pattern").set_value("wrong for A, right for B").run()
    assert not at.exception
    for name in ("ada", "ben", "cleo"):
        store.ensure_annotator(scored, name)
    at.run()
    assert at.button(key="send_to_annotation").disabled  # nobody is chosen: nothing is sent silently to everyone
    at.multiselect(key="send_whom").set_value(["ada", "cleo"]).run()
    at.button(key="send_to_annotation").click().run()
    tables = [inspection.item_table(scored, "bivlc", run) for run in ("ViT-B-32", "CLIP_COCO")]
    _, total = inspection.failures(*tables, pattern="wrong for A, right for B")
    created = store.list_batches(scored)[-1]
    assert (
        created["task_type"] == "validate_negative"
        and created["dataset"] == "bivlc"
        and created["n_assignments"] == 2 * total
    )
    holders = {a["annotator"] for a in store.batch_assignments(scored, store.get_batch(scored, created["name"])["id"])}
    assert holders == {"ada", "cleo"}


def test_inspect_page_on_imported_sugarcrepe_per_instance_results(tmp_path, fixtures, admin_page):
    db = store.open_db(tmp_path / "foil.db")
    for model in ("ViT-B-32", "CLIP_COCO"):
        import_path(db, "sugarcrepe-correct", fixtures / "bivlc" / "results" / f"SUGARCREPE_CORRECT_{model}.csv")
    at = admin_page(tmp_path / "foil.db", "views/inspect_runs.py")
    at.selectbox(key="run_a:sugarcrepe").set_value("ViT-B-32").run()
    at.selectbox(key="run_b:sugarcrepe").set_value("CLIP_COCO").run()
    at.selectbox(key="pattern").set_value("wrong for A, right for B").run()
    at.selectbox(key="fail_category:sugarcrepe").set_value("swap_obj").run()
    assert not at.exception
    comparison = at.dataframe[0].value.set_index("category")
    assert (
        comparison.loc["(all)", "n"] == 7512 and comparison.loc["swap_obj", "n"] == 246
    )  # BiVLC's copy keeps the item upstream removed
    tables = [inspection.item_table(db, "sugarcrepe", run) for run in ("ViT-B-32", "CLIP_COCO")]
    _, total = inspection.failures(*tables, pattern="wrong for A, right for B", category="swap_obj")
    assert any(c.value == f"{total} items, in item order (imported decisions carry no margins)" for c in at.caption)
    shown = [t.value for t in at.text if t.value.startswith("#")]
    assert len(shown) == min(10, total) and all(" swap_obj " in line for line in shown)


def test_gpt4v_choices_are_inspected_per_caption_order_and_against_clip(tmp_path, fixtures, admin_page):
    from foil_studio.analysis.results import run_metrics

    db = store.open_db(tmp_path / "foil.db")
    import_path(db, "sugarcrepe-correct", fixtures / "bivlc" / "results" / "SUGARCREPE_CORRECT_ViT-B-32.csv")
    import_path(db, "gpt4v", fixtures / "sugarcrepe" / "gpt4v")
    table = inspection.item_table(db, "sugarcrepe", "gpt4v")
    orders = ["right when negative-first", "right when positive-first"]
    assert (table["correct"] == table[orders].all(axis=1)).all()  # right only when right in both caption orders
    by_ordering = run_metrics(db, "sugarcrepe", "gpt4v", n_boot=0)["by_ordering"]
    assert 100 * table["right when positive-first"].mean() == pytest.approx(by_ordering["positive-first"]["accuracy"])
    at = admin_page(tmp_path / "foil.db", "views/inspect_runs.py")
    at.selectbox(key="run_a:sugarcrepe").set_value("gpt4v").run()
    at.selectbox(key="run_b:sugarcrepe").set_value("ViT-B-32").run()
    assert not at.exception
    compared = at.dataframe[0].value.set_index("category")
    assert (
        compared.loc["(all)", "n"] == len(table) and float(compared.loc["(all)", "McNemar p"]) < 0.001
    )  # GPT-4V is not CLIP


def test_the_gap_range_lists_its_first_items_and_says_how_many_there_are(scored, admin_page, monkeypatch):
    """Issue 57: a gap range of a million items sent every row to the browser on every rerun; the
    table lists the first `LISTED_ROWS` and the caption counts them all, and says so."""
    monkeypatch.setattr(inspection, "LISTED_ROWS", 3)
    at = admin_page(store.location(scored), "views/inspect_runs.py")
    at.selectbox(key="inspect_dataset").set_value("demo-sugarcrepe").run()
    at.selectbox(key="run_a:demo-sugarcrepe").set_value("demo-clip").run()
    assert not at.exception
    table_a = inspection.item_table(scored, "demo-sugarcrepe", "demo-clip")
    said = next(c.value for c in at.caption if "items of demo-clip with" in c.value)
    counted = int(said.split(" items of ")[0].replace(",", ""))
    assert counted > 3 and "(the first 3 listed)" in said
    assert counted <= len(table_a) and len(at.dataframe[0].value) == 3
