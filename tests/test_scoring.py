"""Model loading and scoring: exact trimming, the QuickGELU choice, offline errors, the cache."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from foil_studio.analysis import models
from foil_studio.analysis.models import ModelSpec, load_model
from foil_studio.analysis.results import run_metrics
from foil_studio.analysis.scoring import load_image, score_dataset
from foil_studio.data import store
from tests.conftest import FOIL_CLI, REPO

CAPTIONS = [
    "a red circle",
    "there is a small green cross left of a large blue square",
    "an image showing a purple diamond, an orange triangle and a yellow circle",
    "a big red box to the left of a little blue triangle",
]


@pytest.fixture(scope="module")
def random_demo_model():
    """The demo architecture with random weights: fast, and needs no files."""
    return load_model(ModelSpec(models.DEMO_ARCH, "none"), device="cpu")


@pytest.mark.parametrize("arch", [models.DEMO_ARCH, "ViT-B-32"])
def test_trimmed_text_encoding_equals_full_length(arch):
    loaded = load_model(ModelSpec(arch, "none"), device="cpu")
    assert loaded.exact_trimming
    trimmed = models.encode_texts(loaded, CAPTIONS)
    full = models.encode_texts(loaded, CAPTIONS, trim=False)
    assert np.abs(trimmed - full).max() < 1e-5
    tokens = loaded.tokenizer(CAPTIONS)
    assert int(tokens.argmax(dim=-1).max()) + 1 < tokens.shape[1]  # the trim really cut something


def test_trimming_falls_back_where_not_exact(random_demo_model):
    class NotClip(torch.nn.Module):
        attn_mask = None

    assert not models.supports_exact_trimming(NotClip())
    model = random_demo_model.model
    saved = model.attn_mask
    model.attn_mask = torch.zeros_like(saved)  # bidirectional attention: padding would leak in
    try:
        assert not models.supports_exact_trimming(model)
    finally:
        model.attn_mask = saved


def test_openai_weights_get_quick_gelu():
    assert models.wants_quick_gelu("ViT-B-32", "openai")
    assert not models.wants_quick_gelu("ViT-B-32-quickgelu", "openai")  # already built with it
    assert not models.wants_quick_gelu("ViT-B-32", "laion2b_s34b_b79k")
    assert not models.wants_quick_gelu("ViT-B-32", "none")


def test_run_is_stamped_with_model_provenance(random_demo_model):
    stamp = random_demo_model.stamp()
    assert stamp["random_weights"] is True and stamp["activation"] == "gelu"
    import open_clip
    import torch

    assert (stamp["open_clip"], stamp["torch"]) == (open_clip.__version__, torch.__version__)
    assert stamp["precision"] == "fp32" and stamp["model_identity"] == random_demo_model.identity


@pytest.mark.slow
def test_missing_weights_offline_give_a_clear_one_line_error(demo_db, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    done = subprocess.run(  # a dataset with its images: the weights are what is missing
        [
            *FOIL_CLI,
            "score",
            "demo-sugarcrepe",
            "--model",
            "ViT-B-32",
            "--pretrained",
            "openai",
            "--db",
            str(store.location(demo_db)),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: cannot load weights for ViT-B-32 / openai")
    assert "local checkpoint file" in last and "Traceback" not in done.stderr


def test_missing_weights_with_the_hub_out_of_reach_fail_at_once_and_say_so(tmp_path, monkeypatch):
    """No HF_HUB_OFFLINE set and no network: the library retried for 48 s; the load now checks
    the Hub's address for 3 s and reads the cache only. The message is whole (it was cut mid-word)
    and names no command-line flag (the Model scores page shows it too)."""
    import socket
    import time

    with socket.socket() as probe:  # a local port nothing listens on: the Hub "out of reach"
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    started = time.perf_counter()
    with pytest.raises(models.ModelUnavailableError) as refused:
        load_model(ModelSpec("ViT-B-32", "openai"), cache_dir=str(tmp_path / "empty-cache"))
    assert time.perf_counter() - started < 15  # seconds, not the retries' minute
    said = str(refused.value)
    assert said.startswith(f"cannot load weights for ViT-B-32 / openai (the Hub at http://127.0.0.1:{port} is out")
    assert "--" not in said and said.endswith("or give a local checkpoint file.")
    from huggingface_hub import constants

    assert constants.HF_HUB_OFFLINE is False  # the cache-only switch was put back


def test_missing_checkpoint_file_is_named(tmp_path):
    with pytest.raises(models.ModelUnavailableError, match="nope.pt does not exist"):
        load_model(ModelSpec(models.DEMO_ARCH, checkpoint=str(tmp_path / "nope.pt")))


@pytest.mark.parametrize("given", ["a folder", "an empty file", "text", "random bytes"])
def test_a_checkpoint_that_is_not_one_is_named_in_one_line_with_what_was_expected(tmp_path, given):
    """Issue 55: a file torch cannot read as weights ended in a bare `KeyError: 174812789` (a traceback
    on the command line), a folder in "does not exist"."""
    path = tmp_path / "weights.pt"
    if given == "a folder":
        path.mkdir()
    else:
        path.write_bytes({"an empty file": b"", "text": b"junk\n", "random bytes": bytes(range(256)) * 4}[given])
    with pytest.raises(models.ModelUnavailableError) as refused:
        load_model(ModelSpec(models.DEMO_ARCH, checkpoint=str(path)), device="cpu")
    said = str(refused.value)
    assert "\n" not in said and str(path) in said and said.endswith(models.CHECKPOINT_EXPECTED), said


def test_scoring_caches_embeddings_and_rerun_encodes_nothing(demo_db, random_demo_model):
    db = demo_db
    first = score_dataset(db, "demo-bivlc", random_demo_model, run="cache-test")
    second = score_dataset(db, "demo-bivlc", random_demo_model, run="cache-test")
    n_groups = store.count_items(db, store.get_dataset(db, "demo-bivlc")["id"])
    assert first.n_items == second.n_items == n_groups
    assert first.n_images_encoded == 2 * n_groups and first.cache_hits == 0
    assert second.n_images_encoded == second.n_texts_encoded == 0
    assert second.cache_hits == first.n_images_encoded + first.n_texts_encoded
    # the run's column copy is stored by the scoring command, of its current scores (`store.run_columns`)
    copied = "SELECT c.version = runs.version FROM run_copies c JOIN runs ON runs.id = c.run_id WHERE runs.name = ?"
    assert db.execute(copied, ["cache-test"]).fetchall() == [(1,)]


def test_repeated_captions_are_encoded_once(demo_db, random_demo_model):
    db = demo_db
    report = score_dataset(db, "demo-sugarcrepe", random_demo_model, run="dedup-test")
    items = store.list_items(db, store.get_dataset(db, "demo-sugarcrepe")["id"], limit=10_000)
    distinct = {caption for item in items for caption in item["captions"]}
    images = {item["images"][0] for item in items}
    assert report.n_images_encoded == len(images) < len(items)  # SugarCrepe-style: images serve several items
    assert report.n_texts_encoded == len(distinct) < 2 * len(items) and report.cache_hits == 0


def test_cached_scores_equal_a_naive_per_item_loop(demo_db, random_demo_model):
    db = demo_db  # a private copy: runs written here reach no other test
    score_dataset(db, "demo-hard-positives", random_demo_model, run="naive-check", limit=12)
    dataset = store.get_dataset(db, "demo-hard-positives")
    scores = store.run_columns(db, store.get_run(db, "demo-hard-positives", "naive-check")["id"]).scores
    for item, row_scores in zip(store.list_items(db, dataset["id"], limit=12), scores, strict=True):
        image = models.encode_images(random_demo_model, [load_image(Path(dataset["image_root"]), item["images"][0])])
        texts = models.encode_texts(random_demo_model, item["captions"], trim=False)
        assert np.allclose(row_scores, (image @ texts.T)[0], atol=1e-5)


def test_an_interrupted_run_resumes_from_the_cache(demo_db, random_demo_model, monkeypatch):
    db = demo_db
    calls = {"n": 0}
    real = models.encode_images

    def failing(loaded, images):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(loaded, images)

    monkeypatch.setattr("foil_studio.analysis.scoring.encode_images", failing)
    with pytest.raises(KeyboardInterrupt):
        score_dataset(db, "demo-crepe", random_demo_model, run="resume", batch_size=8)
    monkeypatch.setattr("foil_studio.analysis.scoring.encode_images", real)
    resumed = score_dataset(db, "demo-crepe", random_demo_model, run="resume", batch_size=8)
    assert resumed.cache_hits >= 8 and resumed.n_images_encoded == resumed.n_items - 8


def test_every_item_kind_gets_its_metrics(demo_db, random_demo_model):
    db = demo_db
    expected = {
        "demo-sugarcrepe": {"accuracy_micro", "accuracy_macro"},
        "demo-bivlc": {"i2t", "t2i", "group", "ipos2t", "ineg2t", "tpos2i", "tneg2i"},
        "demo-hard-positives": {"orig_acc", "aug_acc", "brittleness", "mean_s_c", "mean_s_cn", "mean_s_cp"},
        "demo-crepe": {"recall_at_1", "recall_at_3", "recall_at_5"},
    }
    for dataset, keys in expected.items():
        score_dataset(db, dataset, random_demo_model, run="all-kinds")
        result = run_metrics(db, dataset, "all-kinds", n_boot=20)
        assert set(result["metrics"]) == keys, dataset
        dataset_id = store.get_dataset(db, dataset)["id"]
        counts = store.category_counts(db, dataset_id)
        assert {
            c: v["n"] for c, v in result["by_category"].items() if c in counts
        } == counts  # every category, every item
        assert json.loads(json.dumps(result)) == result  # plain data, ready for the CLI


def test_low_precision_models_encode_and_stamp_their_precision():
    loaded = load_model(ModelSpec(models.DEMO_ARCH, "none", precision="bf16"), device="cpu")
    from PIL import Image

    images = models.encode_images(loaded, [Image.new("RGB", (64, 64), (200, 0, 0))])
    texts = models.encode_texts(loaded, CAPTIONS)
    assert images.dtype == np.float32 and np.allclose(np.linalg.norm(texts, axis=1), 1, atol=1e-2)
    assert loaded.stamp()["precision"] == "bf16"
    assert loaded.identity != load_model(ModelSpec(models.DEMO_ARCH, "none"), device="cpu").identity  # separate caches


def _sugarcrepe_without_images(db, fixtures) -> None:
    from foil_studio.data.loading import import_path

    import_path(
        db, "sugarcrepe", fixtures / "sugarcrepe" / "data" / "swap_att.json"
    )  # no --images: every image missing


def test_a_dataset_without_images_is_refused_before_anything_is_stored(fresh_db, fixtures, random_demo_model):
    from foil_studio.analysis.scorable import NothingToScoreError, require_scorable

    _sugarcrepe_without_images(fresh_db, fixtures)
    with pytest.raises(
        NothingToScoreError, match="none of the 666 items of sugarcrepe has its image files.*Attach an image folder"
    ):
        require_scorable(fresh_db, "sugarcrepe")
    with pytest.raises(NothingToScoreError):
        score_dataset(fresh_db, "sugarcrepe", random_demo_model, run="empty")
    assert store.list_runs(fresh_db, "sugarcrepe") == []  # no empty run left behind


@pytest.mark.slow
def test_score_cli_refuses_a_dataset_without_images_before_loading_a_model(tmp_path, fixtures):
    db = tmp_path / "f.db"
    subprocess.run(
        [
            *FOIL_CLI,
            "import",
            "sugarcrepe",
            str(fixtures / "sugarcrepe" / "data" / "swap_att.json"),
            "--db",
            str(db),
        ],
        check=True,
        capture_output=True,
        cwd=REPO,
        timeout=300,
    )
    # a model that cannot exist: the refusal must come before any attempt to load it
    done = subprocess.run(
        [*FOIL_CLI, "score", "sugarcrepe", "--model", "no-such-arch", "--db", str(db)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert done.returncode == 1 and "none of the 666 items" in done.stderr and "no-such-arch" not in done.stderr


def test_skipped_items_are_said_before_and_counted_after(demo_db, random_demo_model):
    from foil_studio.analysis.scorable import require_scorable

    dataset = store.get_dataset(demo_db, "demo-sugarcrepe")
    first = store.list_items(demo_db, dataset["id"], limit=1)[0]
    demo_db.execute(
        "UPDATE images SET status = 'missing' WHERE dataset_id = ? AND path = ?", [dataset["id"], first["images"][0]]
    )
    every = store.list_items(demo_db, dataset["id"], limit=1 << 62)
    items_on_image = sum(first["images"][0] in i["images"] for i in every)
    ready = require_scorable(demo_db, "demo-sugarcrepe")
    assert (
        ready.n_skipped == items_on_image > 0
        and f"{items_on_image:,} of the {len(every)} items" in ready.skipped_sentence()
    )
    report = score_dataset(demo_db, "demo-sugarcrepe", random_demo_model, run="partial")
    assert report.n_skipped == items_on_image and report.n_items == len(every) - items_on_image


@pytest.mark.both_engines
def test_a_run_is_deleted_with_its_scores_and_summaries(demo_db):
    from foil_studio.analysis.results import run_summaries

    for dataset in ("demo-sugarcrepe", "demo-bivlc"):
        row = store.get_dataset(demo_db, dataset)
        items = store.list_items(demo_db, row["id"], limit=1 << 62)
        with store.transaction(demo_db):
            run = store.ensure_run(demo_db, row["id"], "demo-clip", run_type="scores")
            store.put_scores(
                demo_db,
                run,
                [(i["id"], [[0.3, 0.1], [0.2, 0.4]] if i["kind"] == "group" else [0.3, 0.1]) for i in items],
            )
    run_summaries(demo_db, "demo-sugarcrepe")  # stores the summaries
    run_id = store.get_run(demo_db, "demo-sugarcrepe", "demo-clip")["id"]
    deleted = store.delete_run(demo_db, "demo-sugarcrepe", "demo-clip")
    n_items = len(store.list_items(demo_db, store.get_dataset(demo_db, "demo-sugarcrepe")["id"], limit=1 << 62))
    assert deleted["scores"] == n_items and deleted["run_summaries"] >= 1
    assert [r["run"] for r in store.list_runs(demo_db, "demo-sugarcrepe")] == []
    for table in ("scores", "run_summaries"):
        assert demo_db.execute(f"SELECT COUNT(*) FROM {table} WHERE run_id = ?", [run_id]).fetchone()[0] == 0
    assert store.list_runs(demo_db, "demo-bivlc")  # other datasets' runs stay
    with pytest.raises(store.NotFoundError):
        store.delete_run(demo_db, "demo-sugarcrepe", "demo-clip")


def test_sugarcrepe_pp_text_cosines_are_stored_in_the_order_tot_reads_them(
    fresh_db, tmp_path, random_demo_model, monkeypatch
):
    """Through the real scoring path with a text encoder whose cosines are known: the stored text
    scores are [cos(p1, p2), cos(p1, n), cos(p2, n)], and TOT follows from them."""
    import json

    from PIL import Image

    from foil_studio.analysis import scoring
    from foil_studio.data.loading import import_path

    (tmp_path / "img").mkdir()
    Image.new("RGB", (32, 32), "red").save(tmp_path / "img" / "a.png")
    captions = {
        "a red cube": [1.0, 0.0, 0.0],
        "a blue cube": [0.6, 0.0, 0.8],
        "a cube that is red": [0.8, 0.6, 0.0],
    }  # p1, n, p2
    record = {
        "kind": "paraphrase",
        "category": "replace_att",
        "id": "1",
        "images": ["a.png"],
        "captions": ["a red cube", "a blue cube", "a cube that is red"],
    }
    (tmp_path / "pp.jsonl").write_text(json.dumps(record) + "\n")
    import_path(fresh_db, "jsonl", tmp_path / "pp.jsonl", images=tmp_path / "img", name="pp")
    monkeypatch.setattr(
        scoring, "encode_texts", lambda loaded, texts: np.array([captions[t] for t in texts], dtype=np.float32)
    )
    monkeypatch.setattr(
        scoring, "encode_images", lambda loaded, images: np.array([[1.0, 0.0, 0.0]] * len(images), dtype=np.float32)
    )
    scoring.score_dataset(fresh_db, "pp", random_demo_model, run="stub")
    stored = store.run_columns(fresh_db, store.get_run(fresh_db, "pp", "stub")["id"]).scores[0]
    assert stored[:3].tolist() == pytest.approx([1.0, 0.6, 0.8])  # s(p1, I), s(n, I), s(p2, I)
    assert stored[3:].tolist() == pytest.approx([0.8, 0.6, 0.48])  # cos(p1, p2), cos(p1, n), cos(p2, n)
    metrics = run_metrics(fresh_db, "pp", "stub", n_boot=10)["metrics"]
    assert metrics["tot"] == 100.0  # 0.8 > 0.6 and 0.8 > 0.48 (a generic dataset: the internal names)


def test_the_embedding_cache_keys_the_architecture_config_the_preprocessing_and_the_checkpoint(tmp_path):
    """Issue 54: open_clip's cached embeddings are reused only by a model whose architecture config
    (a local JSON registered under the same name, edited), checkpoint contents and precision are the
    same (the image preprocessing and the tokenizer are in the key too)."""
    from dataclasses import replace

    import open_clip
    from PIL import Image

    demo = models.demo_model_spec()
    first = load_model(demo, device="cpu")
    assert first.identity == load_model(demo, device="cpu").identity  # the same model, the same key
    original = models.DEMO_MODEL_DIR / f"{models.DEMO_ARCH}.json"
    config = json.loads(original.read_text())
    config["vision_cfg"]["pool_type"] = "avg"  # the image's tokens averaged, not its class token: no new weight
    edited = tmp_path / original.name
    edited.write_text(json.dumps(config))
    open_clip.add_model_config(edited)
    try:
        pooled = load_model(demo, device="cpu")
    finally:
        open_clip.add_model_config(original)
    image = [Image.new("RGB", (64, 64), (200, 30, 0))]
    assert not np.allclose(models.encode_images(pooled, image), models.encode_images(first, image))  # it matters
    assert pooled.setup_digest != first.setup_digest and pooled.identity != first.identity
    copy = tmp_path / "checkpoint.pt"
    weights = torch.load(demo.checkpoint, map_location="cpu")
    weights = weights.get("state_dict", weights)
    torch.save({name: value + 1e-3 if value.is_floating_point() else value for name, value in weights.items()}, copy)
    moved = load_model(ModelSpec(demo.arch, demo.pretrained, checkpoint=str(copy)), device="cpu")
    assert moved.weights_digest != first.weights_digest and moved.identity != first.identity
    assert load_model(replace(demo, precision="bf16"), device="cpu").identity != first.identity


@pytest.mark.both_engines
def test_the_stores_scorable_count_is_the_items_plan_items_keeps(demo_db):
    """`store.scorable_count` (SQL over the items' image lists) against `plan_items` over the decoded
    items, on every demo dataset: every image readable, some missing (one of two on a two-image item
    is enough to skip it), and none readable."""
    from foil_studio.analysis.scoring import plan_items

    def by_python(dataset_id: int) -> int:
        items = store.list_items(demo_db, dataset_id, limit=1 << 62)
        return len(plan_items(items, store.image_hashes(demo_db, dataset_id))[0])

    for name in store.dataset_names(demo_db):
        dataset_id = store.get_dataset(demo_db, name)["id"]
        assert store.scorable_count(demo_db, dataset_id) == by_python(dataset_id), name
        paths = [
            row[0]
            for row in demo_db.execute("SELECT path FROM images WHERE dataset_id = ? ORDER BY path", [dataset_id])
        ]
        for missing in (paths[::3], paths):
            marks = ",".join("?" * len(missing))
            demo_db.execute(
                f"UPDATE images SET status = 'missing' WHERE dataset_id = ? AND path IN ({marks})",
                [dataset_id, *missing],
            )
            counted = store.scorable_count(demo_db, dataset_id)
            assert counted == by_python(dataset_id), (name, len(missing))
            assert counted > 0 or missing == paths or not by_python(dataset_id), name
        assert store.scorable_count(demo_db, dataset_id) == 0  # none readable
