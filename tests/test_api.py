"""The Python API for notebooks (`foil_studio.api`): README's example runs and prints the command
line's figures; each method hands back what the matching command computes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from foil_studio import api
from foil_studio.data import store
from tests.conftest import FOIL_CLI, REPO

METRIC_ROW = re.compile(r"^\s*(\S+)\s+(accuracy_\w+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s*$")
AGREEMENT_ROW = re.compile(r"^(\w+)\s+(-?[\d.]+)\s+95% interval (-?[\d.]+) to (-?[\d.]+)$")


def validation_batch(location, name: str, n: int, *options: str) -> dict | list:
    """`foil batch create` of a validate_negative batch of n items of demo-sugarcrepe called `name`."""
    command = ("batch", "create", "demo-sugarcrepe", "--task-type", "validate_negative", "--n", str(n), "--name", name)
    return foil(location, *command, *options)


def foil(location, *args: str) -> dict | list:
    """`foil ARGS --json` on a store, as a subprocess."""
    done = subprocess.run(
        [*FOIL_CLI, *args, "--db", str(location), "--json"], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def scored_demo_with_a_batch(demo_db):
    """The small demo, its SugarCrepe-like set scored with the demo model, and one answered batch."""
    studio = api.Studio(demo_db)
    studio.score("demo-sugarcrepe", "demo", run="demo-clip")
    location = store.location(demo_db)
    for name in ("ada", "ben"):
        foil(location, "annotator", "add", name)
    validation_batch(location, "check", 20, "--annotators", "ada", "ben")
    foil(location, "simulate", "check")
    return studio


def notebook_example(location) -> str:
    """What README's Python API example prints on a store (it must end without an error)."""
    done = subprocess.run(
        [sys.executable, str(REPO / "docs" / "notebook_example.py")],
        env={**os.environ, "FOIL_DB": str(location)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_notebook_example_prints_the_figures_of_the_command_line(scored_demo_with_a_batch):
    location = scored_demo_with_a_batch.location
    printed = notebook_example(location).splitlines()

    datasets = {d["name"]: d["n_items"] for d in foil(location, "datasets")}
    shown = {line.split()[0]: int(line.split()[-1]) for line in printed if line.split()[0] in datasets}
    assert shown == datasets

    metrics = foil(location, "metrics", "demo-sugarcrepe", "--run", "demo-clip")
    rows = [METRIC_ROW.match(line) for line in printed]
    rows = [m.groups() for m in rows if m]
    assert len(rows) == 4  # the table's first four rows
    for category, metric, value, n, ties, low, high in rows:
        figures = metrics["by_category"][category] if category != "(all)" else {**metrics["metrics"], "n": metrics["n"]}
        bounds = (metrics["category_intervals"][category] if category != "(all)" else metrics["intervals"])[metric]
        assert float(value) == round(figures[metric], 2) and int(n) == figures["n"] and int(ties) == 0
        assert (float(low), float(high)) == (round(bounds[0], 2), round(bounds[1], 2))

    agreement = foil(location, "agreement", "check")
    coefficients = {m.group(1): m.groups()[1:] for m in map(AGREEMENT_ROW.match, printed) if m}
    assert set(coefficients) == {"percent_agreement", "cohen_mean", "krippendorff_alpha", "gwet_ac1"}
    for name, (value, low, high) in coefficients.items():
        expected = (agreement[name], *agreement["intervals"][name])
        assert tuple(map(float, (value, low, high))) == tuple(round(x, 3) for x in expected), name
    assert f"check: {agreement['n_labels']} labels" in printed


def test_the_notebook_example_says_why_a_coefficient_is_undefined(demo_db):
    """The example on a store whose first batch has no answer yet: every coefficient undefined,
    said with its reason (it unpacked a None interval before)."""
    api.Studio(demo_db).score("demo-sugarcrepe", "demo", run="demo-clip")
    location = store.location(demo_db)
    validation_batch(location, "fresh", 4)
    printed = notebook_example(location)
    assert "fresh: 0 labels" in printed
    assert "percent_agreement  undefined: no item has two or more labels" in printed
    assert "gwet_ac1           undefined: no item has two or more labels" in printed


def test_each_method_returns_what_its_command_computes(scored_demo_with_a_batch):
    studio = scored_demo_with_a_batch
    location = studio.location
    assert studio.metrics("demo-sugarcrepe", "demo-clip", ties="half") == foil(
        location, "metrics", "demo-sugarcrepe", "--run", "demo-clip", "--ties", "half"
    )
    runs = studio.runs("demo-sugarcrepe")
    assert runs["run"].tolist() == [r["run"] for r in foil(location, "runs", "demo-sugarcrepe")] == ["demo-clip"]
    labels = studio.labels("check")
    assert len(labels) == 40 and set(labels["annotator"]) == {"ada", "ben"}
    assert studio.batches()["n_labels"].tolist() == [40]

    items = studio.items("demo-sugarcrepe")
    results = studio.results("demo-sugarcrepe", "demo-clip")
    assert len(items) == len(results) == studio.datasets().set_index("name").loc["demo-sugarcrepe", "n_items"]
    per_category = results.groupby("category")["correct"].mean().mul(100)
    metrics = studio.metrics("demo-sugarcrepe", "demo-clip")
    for category, figures in metrics["by_category"].items():
        assert per_category[category] == pytest.approx(figures["accuracy_micro"])
    assert set(items["category"]) == set(metrics["by_category"])
    assert len(studio.items("demo-sugarcrepe", category="swap_att")) == metrics["by_category"]["swap_att"]["n"]

    table = studio.metrics_table("demo-sugarcrepe", "demo-clip")
    overall = table[(table["category"] == "(all)") & (table["metric"] == "accuracy_micro")].iloc[0]
    assert (overall["value"], overall["low"], overall["high"]) == (
        metrics["metrics"]["accuracy_micro"],
        *metrics["intervals"]["accuracy_micro"],
    )


def test_an_import_from_python_stores_what_the_command_line_stores(tmp_path, fixtures):
    source = fixtures / "sugarcrepe" / "data" / "swap_att.json"
    studio = api.open_store(tmp_path / "api.db")
    from_python = studio.import_file("sugarcrepe", source)
    from_cli = foil(tmp_path / "cli.db", "import", "sugarcrepe", str(source))
    assert from_python == from_cli and from_python["n_items"] > 0
    cli_items = api.open_store(tmp_path / "cli.db").items("sugarcrepe")
    pd.testing.assert_frame_equal(studio.items("sugarcrepe"), cli_items)


def test_open_store_takes_a_file_memory_or_the_command_lines_default(tmp_path, monkeypatch):
    monkeypatch.setenv("FOIL_DB", str(tmp_path / "env.db"))
    assert api.open_store().location == tmp_path / "env.db"
    assert api.open_store(":memory:").location is None
    assert api.open_store(tmp_path / "x.db").datasets().empty
    with pytest.raises(store.StoreError):
        api.open_store(tmp_path / "x.db").items("no-such-dataset")
