"""The demo model: the training script runs, the shipped checkpoint is intact and beats chance."""

from __future__ import annotations

import math

import pytest

from foil_studio.analysis import models
from foil_studio.analysis.results import run_metrics
from foil_studio.analysis.scoring import score_dataset
from foil_studio.analysis.train_demo_model import TrainConfig, train, verify_checkpoint


def test_training_script_runs_a_few_steps_and_saves_a_loadable_checkpoint(tmp_path):
    out = tmp_path / "tiny.pt"
    result = train(TrainConfig(n_images=64, epochs=1, batch_size=32, warmup_steps=1), out, max_steps=2)
    # a contrastive loss over a batch of 32 starts near ln(32) = 3.47; NaN, 0 or a blow-up is a bug
    assert result["steps"] == 2 and 0.5 < result["loss"] < 2 * math.log(32)
    assert out.with_suffix(".sha256").read_text().split()[1] == "tiny.pt"
    loaded = models.load_model(models.ModelSpec(models.DEMO_ARCH, checkpoint=str(out)), device="cpu")
    assert loaded.stamp()["random_weights"] is False


@pytest.fixture(scope="module")
def shipped_model():
    if not models.DEMO_CHECKPOINT.is_file():
        pytest.fail(f"the demo checkpoint {models.DEMO_CHECKPOINT} is missing from the repository")
    return models.load_model(models.demo_model_spec(), device="cpu")


def test_shipped_checkpoint_matches_its_checksum_and_size_limit(shipped_model):
    assert verify_checkpoint(models.DEMO_CHECKPOINT)
    assert models.DEMO_CHECKPOINT.stat().st_size <= 20 * 1024 * 1024


def test_demo_model_clearly_beats_chance_on_objects_and_attributes(demo_db, shipped_model):
    score_dataset(demo_db, "demo-sugarcrepe", shipped_model, run="shipped")
    result = run_metrics(demo_db, "demo-sugarcrepe", "shipped", n_boot=500)
    low, _ = result["intervals"]["accuracy_micro"]
    assert low > 60  # the whole 95% interval is well above chance (50)
    by_category = result["by_category"]
    learned = [by_category[c]["accuracy_micro"] for c in ("replace_obj", "replace_att", "add_obj", "add_att")]
    assert sum(learned) / len(learned) > 75, by_category
