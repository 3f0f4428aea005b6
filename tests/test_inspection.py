"""Inspection: gaps, run comparison with McNemar, failure patterns, and the page on demo and imported runs."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from analysis import inspection
from analysis.models import ModelSpec, load_model, demo_model_spec
from analysis.scoring import score_dataset
from annotate import store
from data.loading import import_path
from tests.conftest import REPO


@pytest.fixture
def scored(demo_db):
    score_dataset(demo_db, "demo-sugarcrepe", load_model(demo_model_spec(), device="cpu"), run="demo-clip")
    score_dataset(demo_db, "demo-sugarcrepe", load_model(ModelSpec("foil-demo-clip", "none"), device="cpu"), run="random")
    return demo_db


def test_gaps_match_correctness(scored):
    table = inspection.item_table(scored, "demo-sugarcrepe", "demo-clip")
    assert ((table["s(c) - s(c_n)"] > 0) == table["correct"]).all()
    assert inspection.share_below_zero(table["s(c) - s(c_n)"]) == pytest.approx(100 * (~table["correct"]).mean())


def test_run_comparison_counts_add_up_and_mcnemar_sees_a_real_difference(scored):
    compared = inspection.compare_runs(scored, "demo-sugarcrepe", "demo-clip", "random").set_index("category")
    overall = compared.loc["(all)"]
    assert overall["both right"] + overall["only demo-clip"] + overall["only random"] + overall["both wrong"] == overall["n"]
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


def test_inspect_page_on_demo_runs_and_imported_results(scored, fixtures, monkeypatch):
    import_path(scored, "bivlc-results", fixtures / "bivlc" / "results" / "BiVLC_ViT-B-32.csv")
    import_path(scored, "bivlc-results", fixtures / "bivlc" / "results" / "BiVLC_CLIP_COCO.csv")
    monkeypatch.setenv("FOIL_DB", str(store.db_file(scored)))
    monkeypatch.setenv("FOIL_ADMIN_TOKEN", "inspect-admin")
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.query_params["token"] = "inspect-admin"
    at.run().switch_page("pages/inspect_runs.py").run()
    at.selectbox(key="inspect_dataset").set_value("demo-sugarcrepe").run()
    at.selectbox(key="run_a:demo-sugarcrepe").set_value("demo-clip").run()
    at.selectbox(key="run_b:demo-sugarcrepe").set_value("random").run()
    assert not at.exception and len(at.get("plotly_chart")) == 1
    assert any(t.value.startswith("positive: ") and "[" in t.value for t in at.text)  # differing words marked
    at.selectbox(key="inspect_dataset").set_value("bivlc").run()
    at.selectbox(key="run_b:bivlc").set_value("CLIP_COCO").run()
    assert not at.exception
    assert any("imported decisions" in i.value for i in at.info)
    comparison = at.dataframe[0].value.set_index("category")  # imported runs: no gap tables, just the comparison
    assert comparison.loc["(all)", "n"] == 2933 and 0 <= comparison.loc["(all)", "McNemar p"] <= 1
    at.selectbox(key="pattern").set_value("wrong for A, right for B").run()
    assert not at.exception
    at.button(key="send_to_annotation").click().run()
    tables = [inspection.item_table(scored, "bivlc", run) for run in ("ViT-B-32", "CLIP_COCO")]
    _, total = inspection.failures(*tables, pattern="wrong for A, right for B")
    created = store.list_batches(scored)[-1]
    assert created["task"] == "validate_negative" and created["dataset"] == "bivlc" and created["n_assignments"] == 2 * total
