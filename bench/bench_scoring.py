"""Scoring speed: our cached, batched `score` against the SugarCrepe reference per-item loop.

    .venv/bin/python bench/bench_scoring.py [--items 2000] [--reference-sample 300]

All figures come from one run on one machine, as ratios (these machines are shared and noisy).
The reference loop is SugarCrepe's `main_eval.py`: for every item, under `torch.no_grad()`, the
positive caption, then the negative caption, then the image, each encoded alone (batch size 1),
no cache, in fp32. It is timed on a sample of items and its per-item cost extrapolated to all
items (it has no state, so its cost per item is constant). Our `score` runs with `--precision
auto` (bf16 where this CPU computes it natively) and, for comparison, in fp32; the parity of the
two is reported. Same architecture (ViT-B-32), random weights (`--pretrained none`): speed does
not depend on them. The compute floor counts the FLOPs of each distinct image and of each
distinct caption at its own trimmed length (torch's FLOP counter), at the measured matmul speed
of the precision used.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from foil_studio.analysis import models
from foil_studio.analysis.models import ModelSpec, load_model, token_lengths, trimmed_text_features
from foil_studio.analysis.parity import parity
from foil_studio.analysis.scoring import ScoreReport, load_image, score_dataset
from foil_studio.data import store
from foil_studio.data.demo import DemoConfig, install_demo

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def matmul_gflops(dtype: torch.dtype, size: int = 1024, seconds: float = 2.0) -> float:
    """Measured dense matmul throughput of this machine in GFLOP/s (time-boxed)."""
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    a @ b
    started, repeats = time.perf_counter(), 0
    while time.perf_counter() - started < seconds:
        a @ b
        repeats += 1
    return 2 * size**3 * repeats / (time.perf_counter() - started) / 1e9


@torch.no_grad()
def reference_loop(loaded: models.LoadedModel, items: list[dict], root: Path) -> float:
    """Seconds for SugarCrepe's per-item evaluation (main_eval.py's `text_retrieval`)."""
    started = time.perf_counter()
    for item in items:
        positive = loaded.model.encode_text(loaded.tokenizer(item["captions"][0]), normalize=True)
        negative = loaded.model.encode_text(loaded.tokenizer(item["captions"][1]), normalize=True)
        image = loaded.model.encode_image(
            loaded.preprocess(load_image(root, item["images"][0])).unsqueeze(0), normalize=True
        )
        _correct = (positive @ image.T).item() > (negative @ image.T).item()
    return time.perf_counter() - started


def compute_floor_gflop(loaded: models.LoadedModel, n_images: int, captions: list[str]) -> float:
    """FLOPs (in GFLOP) of encoding `n_images` images and each caption at its own trimmed length,
    as torch's counter sees them with the fused attention path off (it cannot see inside it); the
    counter leaves out attention's own two products, about 1% here."""
    torch.backends.mha.set_fastpath_enabled(False)
    counter = FlopCounterMode(display=False)
    with torch.inference_mode(), counter:
        loaded.model.encode_image(torch.zeros(1, 3, 224, 224))
    per_image = counter.get_total_flops()
    per_length: dict[int, int] = {}
    lengths = token_lengths(loaded, captions)
    for length in sorted(set(lengths)):
        tokens = torch.zeros(1, length, dtype=torch.long)
        tokens[0, -1] = 49407  # the end-of-text token (the highest id), where the tower pools
        counter = FlopCounterMode(display=False)
        with torch.inference_mode(), counter:
            trimmed_text_features(loaded.model, tokens)
        per_length[length] = counter.get_total_flops()
    torch.backends.mha.set_fastpath_enabled(True)
    return (n_images * per_image + sum(per_length[n] for n in lengths)) / 1e9


def say(line: str) -> None:
    """Print a result line at once (a long run shows its figures as they come)."""
    print(line, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--reference-sample", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    torch.manual_seed(0)
    folder = Path(tempfile.mkdtemp(prefix="foil-bench-"))
    db = store.open_db(folder / "bench.db")
    per_category = -(-args.items // 7)
    install_demo(
        db,
        folder / "images",
        DemoConfig(
            seed=11, pairs_per_category=per_category, n_triples=1, n_groups=7, n_candidate_sets=7, n_retrieval=1
        ),
    )
    dataset = store.get_dataset(db, "demo-sugarcrepe")
    items = store.list_items(db, dataset["id"], limit=args.items)
    root = Path(dataset["image_root"])

    fp32 = load_model(ModelSpec("ViT-B-32", "none", precision="fp32"), device="cpu")
    reference = reference_loop(fp32, items[: args.reference_sample], root) / args.reference_sample * len(items)
    say(
        f"items {len(items)}; reference per-item loop (fp32): {reference:.1f} s (timed on {args.reference_sample} "
        "items, extrapolated)"
    )

    auto = load_model(ModelSpec("ViT-B-32", "none", precision="auto"), device="cpu")
    say(f"precision auto: {auto.precision_reason}")
    runs: dict[str, tuple[ScoreReport, ScoreReport]] = {}
    for loaded in ({auto.spec.precision: auto, "fp32": fp32}).values():
        cold = score_dataset(
            db, "demo-sugarcrepe", loaded, run=loaded.spec.precision, batch_size=args.batch_size, limit=args.items
        )
        warm = score_dataset(
            db, "demo-sugarcrepe", loaded, run=loaded.spec.precision, batch_size=args.batch_size, limit=args.items
        )
        runs[loaded.spec.precision] = cold, warm
        say(
            f"score {loaded.spec.precision} cold: {cold.seconds:.1f} s -> {reference / cold.seconds:.1f}x faster than "
            f"the reference loop ({cold.n_images_encoded} distinct images, {cold.n_texts_encoded} distinct captions; "
            f"{cold.n_images_encoded / cold.seconds:.1f} images/s, {cold.n_texts_encoded / cold.seconds:.1f} texts/s)"
        )
        say(
            f"score {loaded.spec.precision} warm cache: {warm.seconds:.3f} s -> {reference / warm.seconds:.0f}x faster "
            f"than the reference loop ({cold.seconds / warm.seconds:.0f}x faster than cold)"
        )

    captions = sorted({caption for item in items for caption in item["captions"]})
    floor = compute_floor_gflop(fp32, runs["fp32"][0].n_images_encoded, captions)
    say(
        f"compute floor: {floor:.0f} GFLOP ({runs['fp32'][0].n_images_encoded} images, {len(captions)} captions at "
        "their own trimmed length)"
    )
    rates = {name: matmul_gflops(dtype) for name, dtype in DTYPES.items()}
    say(
        f"matmul: fp32 {rates['fp32']:.0f} GFLOP/s, bf16 {rates['bf16']:.0f} GFLOP/s "
        f"({rates['bf16'] / rates['fp32']:.1f}x)"
    )
    for precision, (cold, _) in runs.items():
        floor_seconds = floor / rates[precision]
        say(
            f"compute floor {precision}: {floor_seconds:.1f} s at {precision} matmul speed; "
            f"the cold run took {cold.seconds:.1f} s = {100 * floor_seconds / cold.seconds:.0f}% of the floor's speed"
        )

    if len(runs) == 2:
        report = parity(db, "demo-sugarcrepe", "fp32", auto.spec.precision)
        say(
            f"parity {auto.spec.precision} against fp32: {len(report.flips)} of {report.n_items} decisions flip; "
            f"{report.metric} {report.value_a:.2f} -> {report.value_b:.2f} (change {report.change:+.2f}, 95% interval "
            f"{report.change_interval[0]:+.2f} to {report.change_interval[1]:+.2f}; random weights: margins are tiny)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
