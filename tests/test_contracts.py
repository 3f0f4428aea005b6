"""CLI commands and page contents asserted on their values, each against a recount or a library."""

from __future__ import annotations

import csv
import json
import subprocess
from collections import Counter

import krippendorff
import numpy as np
import pandas as pd
import pytest

from foil_studio.annotate import agreement, batch_reports, batches, simulation
from foil_studio.data import store
from tests.conftest import FOIL_CLI, REPO


def cli(db_file, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    done = subprocess.run(
        [*FOIL_CLI, *args, "--db", str(db_file)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, done.stderr
    return done


def test_cli_assignments_give_every_item_to_exactly_overlap_annotators(demo_db):
    path = store.location(demo_db)
    created = json.loads(
        cli(
            path,
            "batch",
            "create",
            "demo-sugarcrepe",
            "--task-type",
            "validate_negative",
            "--n",
            "12",
            "--overlap",
            "2",
            "--annotators",
            "ada",
            "ben",
            "cleo",
            "--seed",
            "4",
            "--json",
        ).stdout
    )
    rows = json.loads(cli(path, "assignments", created["batch"], "--json").stdout)
    assert len(rows) == 24 and set(Counter(r["item"] for r in rows).values()) == {2}
    per_annotator = {a["name"]: a["n_assigned"] for a in created["annotators"]}
    assert Counter(r["annotator"] for r in rows) == per_annotator
    for name in per_annotator:  # each queue is numbered 0..k-1 without gaps
        assert sorted(r["position"] for r in rows if r["annotator"] == name) == list(range(per_annotator[name]))


def test_cli_labels_out_writes_every_stored_label(demo_db, tmp_path):
    path = store.location(demo_db)
    batch = batches.create_batch(
        demo_db, batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("ada", "ben"), 2, 10, seed=2)
    )["batch"]
    simulation.simulate(demo_db, batch, accuracies=0.8, seed=2)
    cli(path, "labels", batch, "--format", "csv", "--out", str(tmp_path / "labels.csv"))
    with open(tmp_path / "labels.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    stored = {
        (row[1], row[2]): json.loads(row[3])
        for row in demo_db.execute(
            "SELECT l.id, a.name, l.item_id, l.answer FROM labels l JOIN annotators a ON a.id = l.annotator_id"
            " JOIN batches b ON b.id = l.batch_id WHERE b.name = ?",
            [batch],
        ).fetchall()
    }
    assert {(r["annotator"], int(r["item"])): json.loads(r["answer"]) for r in rows} == stored and len(rows) == 20


def test_cli_baseline_of_perfect_humans_is_100_and_of_wrong_humans_0(demo_db):
    path = store.location(demo_db)
    for accuracy, expected in ((1.0, 100.0), (0.0, 0.0)):
        i2t = batches.create_batch(demo_db, batches.BatchSpec("demo-bivlc", "baseline_i2t", ("ada",), 1, 10, seed=1))[
            "batch"
        ]
        t2i = batches.create_batch(demo_db, batches.BatchSpec("demo-bivlc", "baseline_t2i", ("ada",), 1, 10, seed=1))[
            "batch"
        ]
        for batch in (i2t, t2i):
            simulation.simulate(demo_db, batch, accuracies=accuracy, seed=1)
        report = json.loads(cli(path, "baseline", i2t, t2i, "--bootstrap", "50", "--json").stdout)
        assert {k: report["metrics"][k] for k in ("i2t", "t2i", "group")} == {
            "i2t": expected,
            "t2i": expected,
            "group": expected,
        }


def test_cli_admin_token_comes_from_the_environment_or_one_private_file(tmp_path):
    path = tmp_path / "f.db"
    given = cli(path, "admin-token", env={"FOIL_ADMIN_TOKEN": "an-admin-token-of-length"}).stdout.strip()
    assert given == "an-admin-token-of-length"
    import os

    env = {k: v for k, v in os.environ.items() if k != "FOIL_ADMIN_TOKEN"}
    first, second = (
        subprocess.run(
            [*FOIL_CLI, "admin-token", "--db", str(path)],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=300,
            env=env,
        ).stdout.strip()
        for _ in range(2)  # asked twice: the same token both times
    )
    assert first == second == (tmp_path / "f_files" / "admin_token").read_text().strip() and len(first) >= 16


@pytest.mark.slow
def test_cli_score_encodes_each_distinct_image_and_caption_once(demo_db):
    path = store.location(demo_db)
    report = json.loads(
        cli(
            path,
            "score",
            "demo-sugarcrepe",
            "--model",
            "foil-demo-clip",
            "--pretrained",
            "none",
            "--run",
            "random-cli",
            "--json",
        ).stdout
    )
    items = store.list_items(demo_db, store.get_dataset(demo_db, "demo-sugarcrepe")["id"], limit=10_000)
    assert report["n_items"] == len(items)
    assert report["n_images_encoded"] == len({i["images"][0] for i in items})
    assert report["n_texts_encoded"] == len({c for i in items for c in i["captions"]}) and report["cache_hits"] == 0
    runs = json.loads(cli(path, "runs", "demo-sugarcrepe", "--json").stdout)
    assert {"run": "random-cli", "n_items": len(items)}.items() <= next(
        r for r in runs if r["run"] == "random-cli"
    ).items()


# --- agreement edge cases against the libraries --------------------------------------------------


def test_ordinal_alpha_orders_labels_by_number_not_by_text():
    """ "10" sorts before "2" as text; on an ordinal scale it is far above it."""
    table = pd.DataFrame(
        {"a": ["1", "2", "10", "2", "1"], "b": ["2", "2", "10", "1", "1"], "c": ["1", "10", "10", "2", None]}
    )
    ours, n, _ = agreement.krippendorff_alpha(table, "ordinal")
    numeric = table.apply(lambda column: pd.to_numeric(column)).to_numpy(dtype=float).T
    assert n == 5 and ours == pytest.approx(
        krippendorff.alpha(reliability_data=numeric, level_of_measurement="ordinal")
    )


def test_fleiss_refuses_varying_raters_and_alpha_takes_over():
    table = pd.DataFrame({"a": ["x", "y", "x", "x"], "b": ["x", "y", None, "y"], "c": ["x", None, None, "y"]})
    value, n, reason = agreement.fleiss(table)
    assert value is None and "raters per item vary" in reason
    alpha, n_alpha, _ = agreement.krippendorff_alpha(table)
    codes = table.apply(lambda column: column.map({"x": 0, "y": 1})).to_numpy(dtype=float).T
    assert n_alpha == 3 and alpha == pytest.approx(
        krippendorff.alpha(reliability_data=codes, level_of_measurement="nominal")
    )


# --- what the pages show ---------------------------------------------------------------------------


def typed_array(value) -> np.ndarray:
    """A plotly JSON array: a list, or plotly's typed form {dtype, bdata (base64), shape}."""
    import base64

    if isinstance(value, dict):
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        return flat.reshape([int(n) for n in str(value.get("shape", len(flat))).split(",")]).astype(float)
    return np.array(value, dtype=float)


def test_batches_page_heatmap_holds_each_pairs_kappa(demo_db, admin_page):
    batch = batches.create_batch(
        demo_db, batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("ada", "ben", "cleo"), 2, 60, seed=5)
    )["batch"]
    simulation.simulate(demo_db, batch, accuracies=0.75, seed=5)
    at = admin_page(store.location(demo_db), "views/batches.py")
    at.selectbox(key="batch").set_value(batch).run()
    heat = json.loads(next(c for c in at.get("plotly_chart") if "kappa" in c.proto.spec).proto.spec)["data"][0]
    names, z = list(heat["x"]), typed_array(heat["z"])
    expected = {(p["a"], p["b"]): p["kappa"] for p in batch_reports.batch_agreement(demo_db, batch)["cohen_pairs"]}
    for (a, b), kappa in expected.items():
        assert z[names.index(a), names.index(b)] == pytest.approx(kappa) == z[names.index(b), names.index(a)]


def test_model_scores_page_draws_the_chance_line_and_interval_columns(demo_db, admin_page):
    from foil_studio.analysis.models import ModelSpec, load_model
    from foil_studio.analysis.results import run_metrics
    from foil_studio.analysis.scoring import score_dataset

    score_dataset(
        demo_db, "demo-sugarcrepe", load_model(ModelSpec("foil-demo-clip", "none"), device="cpu"), run="random"
    )
    at = admin_page(store.location(demo_db), "views/model_scores.py")
    at.selectbox(key="scores_dataset").set_value("demo-sugarcrepe").run()
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    chance = [s for s in spec["layout"]["shapes"] if s.get("y0") == s.get("y1")]
    assert [s["y0"] for s in chance] == [50.0]  # accuracy of a pair: chance is 50%
    table = next(d.value for d in at.dataframe if "random 95% CI" in d.value.columns).set_index("category")
    low, high = run_metrics(demo_db, "demo-sugarcrepe", "random", n_boot=1000)["intervals"][
        "accuracy_micro"
    ]  # the CLI's
    assert table.loc["(all)", "random 95% CI"] == f"{low:.2f} to {high:.2f}"


# --- ARO, precision, activation -------------------------------------------------------------------


def test_aro_macro_accuracy_averages_relations_not_items(tmp_path):
    from foil_studio.analysis.results import run_metrics
    from foil_studio.data.loading import import_path

    # 3 items of "on" (2 right), 1 of "under" (right): micro 75%, macro (66.7 + 100) / 2 = 83.3%
    records = [
        {
            "image_path": "a.jpg",
            "true_caption": f"the cup is {rel} the mat {n}",
            "false_caption": f"the mat is {rel} the cup {n}",
            "relation_name": rel,
            "bbox_x": 0,
            "bbox_y": 0,
            "bbox_w": 4,
            "bbox_h": 4,
        }
        for n, rel in enumerate(["on", "on", "on", "under"])
    ]
    (tmp_path / "visual_genome_relation.json").write_text(json.dumps(records))
    db = store.open_db(tmp_path / "f.db")
    import_path(db, "aro", tmp_path / "visual_genome_relation.json", name="aro")
    items = store.list_items(db, store.get_dataset(db, "aro")["id"], limit=10)
    with store.transaction(db):
        run = store.ensure_run(db, store.get_dataset(db, "aro")["id"], "hand", run_type="scores")
        store.put_scores(db, run, [(i["id"], [0.9, 0.1] if n != 1 else [0.1, 0.9]) for n, i in enumerate(items)])
    result = run_metrics(db, "aro", "hand", n_boot=10)
    assert result["metrics"]["macro_accuracy"] == pytest.approx((200 / 3 + 100) / 2)
    assert result["by_category"]["on"]["n"] == 3 and result["by_category"]["under"]["n"] == 1


def test_aro_crop_takes_the_union_box_from_the_image(tmp_path):
    from PIL import Image

    from foil_studio.analysis.scoring import load_image

    image = Image.new("RGB", (40, 30), (0, 0, 255))
    image.paste((255, 0, 0), (10, 5, 20, 15))  # a red square at x 10-20, y 5-15
    image.save(tmp_path / "a.png")
    crop = load_image(tmp_path, "a.png", [10, 5, 10, 10])
    assert crop.size == (10, 10) and crop.getcolors() == [(100, (255, 0, 0))]


def test_fp16_embeddings_agree_with_fp32():
    from foil_studio.analysis import models

    loaded = {
        p: models.load_model(models.ModelSpec(models.DEMO_ARCH, "none", precision=p), device="cpu")
        for p in ("fp32", "fp16")
    }
    texts = ["a red circle left of a blue square", "a blue circle left of a red square"]
    vectors = {p: models.encode_texts(m, texts) for p, m in loaded.items()}
    assert vectors["fp16"].dtype == np.float32 and loaded["fp16"].stamp()["precision"] == "fp16"
    cosine = (vectors["fp16"] * vectors["fp32"]).sum(axis=1)
    assert (cosine > 0.995).all()  # the same random weights, only the arithmetic differs


def test_openai_weights_are_loaded_with_quick_gelu(monkeypatch):
    """Without network weights: the loader asks open_clip for QuickGELU exactly when the tag wants it."""
    import open_clip

    from foil_studio.analysis import models

    asked = {}

    def fake_create(arch, **kwargs):
        asked[(arch, kwargs["pretrained"])] = kwargs["force_quick_gelu"]
        raise RuntimeError("no weights offline")

    monkeypatch.setattr(open_clip, "create_model_and_transforms", fake_create)
    for tag in ("openai", "laion2b_s34b_b79k"):
        with pytest.raises(models.ModelUnavailableError):
            models.load_model(models.ModelSpec("ViT-B-32", tag), device="cpu")
    assert asked == {("ViT-B-32", "openai"): True, ("ViT-B-32", "laion2b_s34b_b79k"): False}
