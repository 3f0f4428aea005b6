"""Scoring speed: our cached, batched `score` against the SugarCrepe reference per-item loop.

    .venv/bin/python bench/bench_scoring.py [--items 2000] [--reference-sample 300]

All figures come from one run on one machine, as ratios (these machines are shared and noisy).
The reference loop encodes, for every item, its image and its two captions with batch size 1
and no cache, as SugarCrepe's evaluation script does; it is timed on a sample of items and its
per-item cost extrapolated to all items (it has no state, so its cost per item is constant).
Same architecture (ViT-B-32), random weights (`--pretrained none`): speed does not depend on them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis import models  # noqa: E402
from analysis.models import ModelSpec, load_model  # noqa: E402
from analysis.results import METRIC_FAMILIES, load_run  # noqa: E402
from analysis.scoring import load_image, score_dataset  # noqa: E402
from data import store  # noqa: E402
from data.demo import DemoConfig, install_demo  # noqa: E402

GFLOPS_PER_IMAGE = 8.8  # ViT-B-32 at 224 px, open_clip's model profile
GFLOPS_PER_TEXT = 6.0  # ViT-B-32 text tower at 77 tokens


def matmul_gflops(dtype: torch.dtype, size: int = 1024, seconds: float = 2.0) -> float:
    """Measured dense matmul throughput of this machine in GFLOP/s (time-boxed)."""
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    a @ b
    started, repeats = time.perf_counter(), 0
    while time.perf_counter() - started < seconds:
        a @ b
        repeats += 1
    return 2 * size**3 * repeats / (time.perf_counter() - started) / 1e9


@torch.inference_mode()
def reference_loop(loaded: models.LoadedModel, items: list[dict], root: Path) -> float:
    """Seconds for SugarCrepe's per-item evaluation: one image, two captions, batch size 1."""
    started = time.perf_counter()
    for item in items:
        image = loaded.preprocess(load_image(root, item["images"][0])).unsqueeze(0)
        image_features = loaded.model.encode_image(image, normalize=True)
        text_features = loaded.model.encode_text(loaded.tokenizer(item["captions"]), normalize=True)
        (image_features @ text_features.T).argmax()
    return time.perf_counter() - started


def say(line: str) -> None:
    """Print a result line at once (a long run shows its figures as they come)."""
    print(line, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--reference-sample", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--bf16-items", type=int, default=10, help="bf16 is emulated (slow) on CPUs without AVX512-BF16/AMX")
    args = parser.parse_args()
    torch.manual_seed(0)
    folder = Path(tempfile.mkdtemp(prefix="foil-bench-"))
    db = store.open_db(folder / "bench.db")
    per_category = -(-args.items // 7)
    install_demo(db, folder / "images", DemoConfig(seed=11, pairs_per_category=per_category, n_triples=1, n_groups=7, n_candidate_sets=7, n_retrieval=1))
    dataset = store.get_dataset(db, "demo-sugarcrepe")
    items = store.list_items(db, dataset["id"], limit=args.items)
    root = Path(dataset["image_root"])

    fp32 = load_model(ModelSpec("ViT-B-32", "none"), device="cpu")
    reference_seconds = reference_loop(fp32, items[: args.reference_sample], root) / args.reference_sample * len(items)
    say(f"items {len(items)}; reference per-item loop: {reference_seconds:.1f} s (timed on {args.reference_sample} items, extrapolated)")

    cold = score_dataset(db, "demo-sugarcrepe", fp32, run="fp32", batch_size=args.batch_size, limit=args.items)
    warm = score_dataset(db, "demo-sugarcrepe", fp32, run="fp32", batch_size=args.batch_size, limit=args.items)
    say(f"distinct images {cold.n_images_encoded}, distinct captions {cold.n_texts_encoded}")
    say(f"score fp32 cold: {cold.seconds:.1f} s -> {reference_seconds / cold.seconds:.1f}x faster than the reference loop")
    say(f"score fp32 warm cache: {warm.seconds:.2f} s -> {reference_seconds / warm.seconds:.0f}x faster than the reference loop ({cold.seconds / warm.seconds:.0f}x faster than cold)")
    say(f"throughput fp32: {cold.n_images_encoded / cold.seconds:.1f} images/s and {cold.n_texts_encoded / cold.seconds:.1f} texts/s (both encoded within the one cold run)")

    gflops32, gflops16 = matmul_gflops(torch.float32), matmul_gflops(torch.bfloat16)
    work = cold.n_images_encoded * GFLOPS_PER_IMAGE + cold.n_texts_encoded * GFLOPS_PER_TEXT
    say(f"matmul: fp32 {gflops32:.0f} GFLOP/s, bf16 {gflops16:.0f} GFLOP/s")
    say(f"compute floor: {work:.0f} GFLOP (77-token texts) -> {work / gflops32:.1f} s at fp32 matmul speed; the cold run took {cold.seconds:.1f} s = {100 * work / gflops32 / cold.seconds:.0f}% of the floor's speed (above 100% thanks to trimming)")

    subset = min(args.bf16_items, len(items))
    score_dataset(db, "demo-sugarcrepe", fp32, run="fp32-sample", batch_size=args.batch_size, limit=subset)
    bf16 = load_model(ModelSpec("ViT-B-32", "none", precision="bf16"), device="cpu")
    sample16 = score_dataset(db, "demo-sugarcrepe", bf16, run="bf16", batch_size=args.batch_size, limit=subset)
    decisions = {run: METRIC_FAMILIES["pairwise"].per_item(load_run(db, "demo-sugarcrepe", run))["correct"] for run in ("fp32-sample", "bf16")}
    flips = int(np.sum(decisions["fp32-sample"] != decisions["bf16"]))
    per_image_16 = sample16.seconds / max(1, sample16.n_images_encoded + sample16.n_texts_encoded)
    per_image_32 = cold.seconds / max(1, cold.n_images_encoded + cold.n_texts_encoded)
    say(f"score bf16 cold on the first {subset} items: {sample16.seconds:.1f} s, {per_image_16 / per_image_32:.0f}x slower per encoded input than fp32; decisions flipped vs fp32: {flips} of {subset}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
