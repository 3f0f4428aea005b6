"""Precision `auto` and the parity report: which precision runs and why, and exactly the items
whose decisions differ between two precisions of the demo model, checked against the scores."""

from __future__ import annotations

import json
import platform
import subprocess

import numpy as np
import pandas as pd
import pytest
import torch

from foil_studio.analysis import models, parity
from foil_studio.analysis.models import ModelSpec, load_model
from foil_studio.analysis.results import run_metrics
from foil_studio.analysis.scoring import score_dataset
from foil_studio.data import store
from tests.conftest import FOIL_CLI, REPO

DEMO_IN = {
    precision: ModelSpec(models.DEMO_ARCH, checkpoint=str(models.DEMO_CHECKPOINT), precision=precision)
    for precision in ("fp32", "bf16")
}


@pytest.fixture
def both_precisions(demo_db):
    """demo-sugarcrepe and demo-bivlc scored by the demo model in fp32 and in bf16."""
    for precision, spec in DEMO_IN.items():
        loaded = load_model(spec, device="cpu")
        for dataset in ("demo-sugarcrepe", "demo-bivlc"):
            score_dataset(demo_db, dataset, loaded, run=precision)
    return demo_db


def stored_scores(db, dataset: str, run: str) -> dict[int, np.ndarray]:
    columns = store.run_columns(db, store.get_run(db, dataset, run)["id"])
    return {int(item): np.asarray(scores, dtype=float) for item, scores in zip(columns.item_ids, columns.scores)}


def test_auto_runs_bf16_only_where_the_cpu_computes_it_natively(monkeypatch):
    monkeypatch.setattr(models, "cpu_bf16_features", lambda: [])
    chosen, why = models.resolve_precision("auto", torch.device("cpu"))
    assert chosen == "fp32" and "no native bf16" in why
    monkeypatch.setattr(models, "cpu_bf16_features", lambda: ["AVX512-BF16"])
    assert models.resolve_precision("auto", torch.device("cpu")) == (
        "bf16",
        f"auto chose bf16: this CPU ({platform.machine()}) has native bf16 (AVX512-BF16)",
    )
    assert models.resolve_precision("fp32", torch.device("cpu"))[0] == "fp32"  # asked for: never overridden


def test_an_auto_run_records_the_precision_it_ran_in_and_why(demo_db, monkeypatch):
    monkeypatch.setattr(models, "cpu_bf16_features", lambda: ["AVX512-BF16"])
    loaded = load_model(
        ModelSpec(models.DEMO_ARCH, checkpoint=str(models.DEMO_CHECKPOINT), precision="auto"), device="cpu"
    )
    report = score_dataset(demo_db, "demo-crepe", loaded)
    assert report.run == "foil-demo-clip-bf16"  # named after what it ran in, not after "auto"
    meta = store.get_run(demo_db, "demo-crepe", report.run)["meta"]
    assert meta["precision"] == "bf16" and meta["precision_reason"].startswith("auto chose bf16")
    assert loaded.identity == load_model(DEMO_IN["bf16"], device="cpu").identity  # shares bf16's cached embeddings


def test_parity_lists_exactly_the_items_whose_decisions_differ(both_precisions):
    db = both_precisions
    fp32, bf16 = stored_scores(db, "demo-sugarcrepe", "fp32"), stored_scores(db, "demo-sugarcrepe", "bf16")
    differ = {item for item in fp32 if np.sign(fp32[item][0] - fp32[item][1]) != np.sign(bf16[item][0] - bf16[item][1])}
    report = parity.parity(db, "demo-sugarcrepe", "fp32", "bf16")
    assert differ, "bf16 changed no decision of the demo model: the test would prove nothing"
    assert set(report.flips["item"]) == differ and len(report.flips) == len(differ)
    flipped = report.flips.set_index("item")
    for item in differ:  # both margins, as scored
        assert flipped.loc[item, "s(c) - s(c_n) A"] == pytest.approx(fp32[item][0] - fp32[item][1])
        assert flipped.loc[item, "s(c) - s(c_n) B"] == pytest.approx(bf16[item][0] - bf16[item][1])
    metric_a, metric_b = (
        run_metrics(db, "demo-sugarcrepe", run)["metrics"]["accuracy_micro"] for run in ("fp32", "bf16")
    )
    assert (report.metric, report.value_a, report.value_b) == ("accuracy_micro", metric_a, metric_b)
    low, high = report.change_interval
    own_low, own_high = run_metrics(db, "demo-sugarcrepe", "fp32")["intervals"]["accuracy_micro"]
    assert low <= report.change <= high and high - low < (own_high - own_low) / 2  # paired: only the flips move it


def test_a_flip_inside_a_bivlc_group_shows_though_the_group_stays_wrong(both_precisions):
    db = both_precisions
    fp32, bf16 = stored_scores(db, "demo-bivlc", "fp32"), stored_scores(db, "demo-bivlc", "bf16")

    def signs(s: np.ndarray) -> tuple[float, ...]:
        return tuple(np.sign([s[0, 0] - s[0, 1], s[1, 1] - s[1, 0], s[0, 0] - s[1, 0], s[1, 1] - s[0, 1]]))

    differ = {item for item in fp32 if signs(fp32[item]) != signs(bf16[item])}
    flips = parity.parity(db, "demo-bivlc", "fp32", "bf16").flips
    assert set(flips["item"]) == differ
    assert (flips["correct A"] == flips["correct B"]).any()  # a comparison flipped, the group score did not


def test_decision_flips_count_signs_and_ties_not_small_moves():
    a = pd.DataFrame(
        {
            "item": [1, 2, 3, 4],
            "category": "c",
            "correct": [True, True, False, True],
            "s(c) - s(c_n)": [0.2, 0.001, -0.1, 0.003],
        }
    )
    b = a.assign(**{"s(c) - s(c_n)": [0.25, -0.001, -0.3, 0.0], "correct": [True, False, False, False]})
    flips = parity.decision_flips(a, b)
    assert flips["item"].tolist() == [2, 4]  # smallest margin under A first; a move to an exact tie is a flip
    assert flips.columns.tolist() == [
        "item",
        "category",
        "correct A",
        "correct B",
        "s(c) - s(c_n) A",
        "s(c) - s(c_n) B",
    ]


@pytest.mark.slow
def test_cli_parity_scores_both_ways_and_prints_the_flips(demo_store, tmp_path):
    db_file = tmp_path / "parity.db"
    db_file.write_bytes(demo_store.read_bytes())
    command = [
        *FOIL_CLI,
        "parity",
        "demo-sugarcrepe",
        "--model",
        models.DEMO_ARCH,
        "--checkpoint",
        str(models.DEMO_CHECKPOINT),
        "--precision",
        "bf16",
        "--db",
        str(db_file),
    ]
    done = subprocess.run([*command, "--json"], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["run_a"], result["run_b"]) == ("foil-demo-clip", "foil-demo-clip-bf16")
    db = store.open_db(db_file)
    expected = parity.parity(db, "demo-sugarcrepe", "foil-demo-clip", "foil-demo-clip-bf16")
    assert (
        result["n_flips"] == len(expected.flips) > 0
        and [row["item"] for row in result["flips"]] == expected.flips["item"].tolist()
    )
    said = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=600)
    assert f"{len(expected.flips)} items decide differently:" in said.stdout
    assert f"{expected.flips['s(c) - s(c_n) A'].iloc[0]:+.5f}" in said.stdout  # margins shown to the digit that flips
    # refused before any model loads: the checkpoint named does not exist
    same = subprocess.run(
        [*FOIL_CLI, "parity", "demo-sugarcrepe", "--model", models.DEMO_ARCH, "--checkpoint", str(tmp_path / "none.pt")]
        + ["--precision", "fp32", "--db", str(db_file)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert same.returncode == 1 and "both runs would be in fp32 (fp32, as asked)" in same.stderr, same.stderr
    assert "Traceback" not in same.stderr


def test_inspect_runs_shows_the_flips_of_two_runs(both_precisions, admin_page):
    at = admin_page(store.location(both_precisions), "views/inspect_runs.py")
    at.selectbox(key="inspect_dataset").set_value("demo-sugarcrepe").run()
    at.selectbox(key="run_a:demo-sugarcrepe").set_value("fp32").run()
    at.selectbox(key="run_b:demo-sugarcrepe").set_value("bf16").run()
    assert not at.exception
    expected = parity.parity(both_precisions, "demo-sugarcrepe", "fp32", "bf16")
    shown = next(frame.value for frame in at.dataframe if "correct B" in frame.value.columns)
    assert shown["item"].tolist() == expected.flips["item"].tolist()
    assert any(
        f"Decisions that flip from A to B: {len(expected.flips)} of {expected.n_items} items" in md.value
        for md in at.markdown
    )
