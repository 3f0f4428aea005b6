"""Scoring speed per model family on COCO-sized JPEGs: each family's reference loop against `foil
score`'s path, cold and warm, and the peak memory of a cold run at batch size 64.

    .venv/bin/python bench/bench_families.py            # --images 64 --batch-size 64

The set: `--images` generated 640x480 JPEGs (`foil_studio/data/demo_photos.py`: smooth light,
fine noise and two shapes, about 100 KB each at quality 85, so decoding costs what a photo's
costs), one SugarCrepe-format pair each (two captions). Families: open_clip as ViT-B-32 with
random weights (the real architecture; speed does not depend on the weights), and each
cross-encoder family's tiny random model, built by its test kit (`ScorerFamily.test_kit`) and
loaded from its save_pretrained folder.

Per family, in one process and one run:

* reference: one pair at a time, batch size 1, fp32, no cache, the image decoded for every
  pair: for open_clip SugarCrepe's `main_eval.py` loop (per item the positive caption, the
  negative caption and the image, each encoded alone: `bench_scoring.reference_loop`); for a
  cross-encoder the tests' reference of the family (its documented transformers API), the model
  loaded once before the loop;
* cold: `foil score`'s path (`scoring.score_dataset` / `pairwise.score_dataset_pairs`, precision
  `auto`) on a store with an empty cache;
* warm: the same again, every embedding or pair score read from the cache.

Model loading is outside every timing; each path is warmed by one call first (the cold path by
a call at its batch size). For open_clip the
cold run is also taken apart: decoding and preprocessing alone, image and caption encoding alone,
and the cold run with the loader thread off (batches decoded in turn), and the compute floors
of both paths (torch's FLOP counter, at this machine's measured fp32 and bf16 matmul speeds).

Peak memory: each family again in a fresh subprocess, a cold run at batch size 64, read as the
process's peak resident set, `VmHWM` of /proc/self/status (it sees torch's allocations, which
tracemalloc does not), after loading the model and after scoring. Not `ru_maxrss`: on Linux a
child's `ru_maxrss` keeps the high-water mark of the process it was forked from (the kernel
carries it over exec), so every child reported the parent's size.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scoring import compute_floor_gflop, matmul_gflops, reference_loop
from torch.utils.flop_counter import FlopCounterMode

from foil_studio.analysis import models, scoring
from foil_studio.analysis.models import ModelSpec, load_model
from foil_studio.analysis.scorers import scorer_family
from foil_studio.analysis.scorers.pairwise import load_family, score_dataset_pairs
from foil_studio.analysis.scoring import load_image, score_dataset
from foil_studio.data import store
from foil_studio.data.demo_photos import photo_dataset

OPEN_CLIP = "open_clip"
ARCH = "ViT-B-32"
DATASET = "photos"


def say(line: str) -> None:
    """Print a result line at once."""
    print(line, flush=True)


def kits() -> dict[str, Any]:
    """Each cross-encoder family's test kit (`tiny_model`, `reference_score`), read from its record."""
    from foil_studio.analysis.scorers import REGISTRY

    return {f.name: f.kit() for f in REGISTRY.values() if f.scores_pairs and f.test_kit}


def pristine_copy(source: Path, target: Path) -> Any:
    """A copy of the store as it was before any scoring (an empty embedding cache)."""
    store.open_db(source).conn.execute("VACUUM INTO ?", [str(target)])
    return store.open_db(target)


def dataset_items(db: Any) -> tuple[list[store.ItemRow], Path]:
    row = store.get_dataset(db, DATASET)
    return store.list_items(db, row["id"], limit=1 << 62), Path(row["image_root"])


def load(family: str, folder: Path | None, precision: str) -> Any:
    """The family's model as `foil score` loads it."""
    if family == OPEN_CLIP:
        return load_model(ModelSpec(ARCH, "none", precision=precision), device="cpu")
    return load_family(scorer_family(family), str(folder), precision, "cpu")


def score(family: str, db: Any, loaded: Any, batch_size: int) -> scoring.ScoreReport:
    if family == OPEN_CLIP:
        return score_dataset(db, DATASET, loaded, run="bench", batch_size=batch_size)
    return score_dataset_pairs(db, DATASET, loaded, run="bench", batch_size=batch_size)


def warm_up(family: str, loaded: Any, image: Any, caption: str, copies: int = 1) -> None:
    """One call through the model on `copies` of one pair (first-call costs such as kernel selection
    for that batch's shapes, out of the timings: without it the first cold run of a batch size paid
    them, and an on/off comparison measured the order of its runs)."""
    if family == OPEN_CLIP:
        models.encode_images(loaded, [image] * copies)
        models.encode_texts(loaded, [caption] * copies)
    else:
        scorer = loaded.scorer
        scorer.score_pairs(scorer.prepare_images([image] * copies), scorer.prepare_texts([caption] * copies))


def cross_encoder_reference(reference: Any, folder: Path, items: list[store.ItemRow], root: Path) -> float:
    """Seconds for the family's reference, one pair at a time, the image decoded for every pair."""
    started = time.perf_counter()
    for item in items:
        for caption in item["captions"]:
            reference(folder, load_image(root, item["images"][0]), caption)
    return time.perf_counter() - started


def peak_memory(family: str, folder: Path | None, pristine: Path, batch_size: int) -> dict[str, float]:
    """Peak resident memory (MB) of a fresh process after loading the family's model and after a
    cold run at `batch_size` (ru_maxrss)."""
    argv = [sys.executable, __file__, "--memory-of", family, "--pristine", str(pristine)]
    argv += ["--batch-size", str(batch_size)] + (["--folder", str(folder)] if folder else [])
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def peak_rss_mb() -> float:
    """This process's peak resident set so far (VmHWM), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def reference_gflop(loaded: Any, n_items: int) -> float:
    """FLOPs (GFLOP) of SugarCrepe's loop: per item one image and two captions at the full context
    length (it does not trim), as torch's counter sees them (fused attention off)."""
    torch.backends.mha.set_fastpath_enabled(False)
    counter = FlopCounterMode(display=False)
    with torch.inference_mode(), counter:
        loaded.model.encode_text(loaded.tokenizer(["a caption"]))
    torch.backends.mha.set_fastpath_enabled(True)
    return compute_floor_gflop(loaded, n_items, []) + 2 * n_items * counter.get_total_flops() / 1e9


def memory_child(family: str, folder: Path | None, pristine: Path, batch_size: int) -> None:
    """The subprocess of `peak_memory`: load, score cold, print the peaks as JSON."""
    db = pristine_copy(pristine, Path(tempfile.mkdtemp(prefix="foil-mem-")) / "mem.db")
    loaded = load(family, folder, "auto")
    after_load = peak_rss_mb()
    score(family, db, loaded, batch_size)
    after_score = peak_rss_mb()
    print(json.dumps({"after_load_mb": after_load, "peak_mb": after_score}))


def open_clip_breakdown(loaded: Any, items: list[store.ItemRow], root: Path, batch_size: int) -> dict[str, float]:
    """Seconds of the cold run's parts, each alone on the main thread."""
    paths = [item["images"][0] for item in items]
    captions = list(dict.fromkeys(c for item in items for c in item["captions"]))
    parts = {"decode": 0.0, "preprocess": 0.0, "encode images": 0.0}
    for start in range(0, len(paths), batch_size):
        began = time.perf_counter()
        images = [load_image(root, path) for path in paths[start : start + batch_size]]
        decoded = time.perf_counter()
        pixels = models.preprocess_images(loaded, images)
        preprocessed = time.perf_counter()
        models.encode_images(loaded, pixels)
        parts["decode"] += decoded - began
        parts["preprocess"] += preprocessed - decoded
        parts["encode images"] += time.perf_counter() - preprocessed
    began = time.perf_counter()
    for start in range(0, len(captions), batch_size):
        models.encode_texts(loaded, captions[start : start + batch_size])
    parts["encode captions"] = time.perf_counter() - began
    return parts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--families", nargs="*", help="default: open_clip and every cross-encoder family")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory subprocesses")
    parser.add_argument("--memory-of", help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--pristine", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_of:
        memory_child(args.memory_of, args.folder, args.pristine, args.batch_size)
        return 0

    torch.manual_seed(0)
    work = Path(tempfile.mkdtemp(prefix="foil-bench-families-"))
    pristine = work / "pristine.db"
    photo_dataset(store.open_db(pristine), work / "files", args.images, name=DATASET)
    items, root = dataset_items(store.open_db(pristine))
    sizes = [path.stat().st_size for path in (root).glob("*.jpg")]
    chosen, why = models.resolve_precision("auto", torch.device("cpu"))
    say(
        f"set: {len(items)} items, {len(items)} distinct 640x480 JPEGs (mean {sum(sizes) / len(sizes) / 1024:.0f} KB), "
        f"{2 * len(items)} captions; batch size {args.batch_size}; torch threads {torch.get_num_threads()}"
    )
    say(f"precision auto: {why}")
    say(
        f"load average at the start (1, 5, 15 min): {', '.join(f'{v:.1f}' for v in os.getloadavg())}; "
        f"{os.cpu_count()} cores"
    )
    families = args.families or [OPEN_CLIP, *sorted(kits())]
    rows = []
    for index, family in enumerate(families):
        folder = None
        if family != OPEN_CLIP:
            (work / f"model-{index}").mkdir()
            folder = kits()[family].tiny_model(work / f"model-{index}")
        first_image, first_caption = load_image(root, items[0]["images"][0]), items[0]["captions"][0]
        if family == OPEN_CLIP:
            fp32 = load(family, None, "fp32")
            warm_up(family, fp32, first_image, first_caption)
            reference = reference_loop(fp32, items, root)
            captions = list(dict.fromkeys(c for item in items for c in item["captions"]))
            floor_cold = compute_floor_gflop(fp32, len(items), captions)  # FLOPs do not depend on the precision
            floor_reference = reference_gflop(fp32, len(items))
            del fp32
        else:
            reference_fn = kits()[family].reference_score
            reference_fn(folder, first_image, first_caption)  # loads the reference model once, warms it
            reference = cross_encoder_reference(reference_fn, folder, items, root)
        loaded = load(family, folder, "auto")
        precision = loaded.spec.precision if family == OPEN_CLIP else loaded.precision
        warm_up(family, loaded, first_image, first_caption, copies=min(args.batch_size, len(items)))
        db = pristine_copy(pristine, work / f"{index}.db")
        cold = score(family, db, loaded, args.batch_size)
        warm = score(family, db, loaded, args.batch_size)
        assert warm.n_images_encoded == warm.n_texts_encoded == 0, "the warm run encoded something"
        name = f"{family} ({ARCH}, random weights)" if family == OPEN_CLIP else f"{family} (tiny random model)"
        say(
            f"{name}: reference {reference:.2f} s; cold ({precision}) {cold.seconds:.3f} s -> "
            f"{reference / cold.seconds:.1f}x; warm {warm.seconds:.4f} s -> {reference / warm.seconds:.0f}x"
        )
        row = {"family": name, "reference": reference, "cold": cold.seconds, "warm": warm.seconds}
        if family == OPEN_CLIP:
            parts = open_clip_breakdown(loaded, items, root, args.batch_size)
            say(
                "  open_clip cold run's parts, each alone: "
                + ", ".join(f"{part} {seconds:.2f} s" for part, seconds in parts.items())
                + f" (sum {sum(parts.values()):.2f} s)"
            )
            original = scoring.prepared_ahead
            scoring.prepared_ahead = lambda chunks, prepare: (prepare(chunk) for chunk in chunks)  # type: ignore[assignment]
            try:
                in_turn = score(family, pristine_copy(pristine, work / "in-turn.db"), loaded, args.batch_size)
            finally:
                scoring.prepared_ahead = original  # type: ignore[assignment]
            say(
                f"  open_clip cold with the loader thread off (decoded in turn): {in_turn.seconds:.3f} s -> "
                f"{reference / in_turn.seconds:.1f}x (loader thread on: {cold.seconds:.3f} s)"
            )
            ref_parts = reference / len(items)
            say(f"  reference per item (1 image + 2 captions, batch size 1, fp32): {ref_parts * 1000:.0f} ms")
            rates = {"fp32": matmul_gflops(torch.float32), "bf16": matmul_gflops(torch.bfloat16)}
            best = (floor_reference / rates["fp32"]) / (floor_cold / rates[precision])
            say(
                f"  compute floor: cold {floor_cold:.0f} GFLOP ({precision}: {floor_cold / rates[precision]:.1f} s), "
                f"reference {floor_reference:.0f} GFLOP (fp32: {floor_reference / rates['fp32']:.1f} s); matmul fp32 "
                f"{rates['fp32']:.0f} GFLOP/s, bf16 {rates['bf16']:.0f} GFLOP/s; floor over floor: {best:.1f}x; "
                f"the cold run at {100 * floor_cold / rates[precision] / cold.seconds:.0f}% of its floor's speed, "
                f"the reference at {100 * floor_reference / rates['fp32'] / reference:.0f}%"
            )
        del loaded
        if not args.no_memory:
            memory = peak_memory(family, folder, pristine, 64)
            row.update(memory)
            say(
                f"  peak memory (VmHWM, fresh process, cold run at batch size 64): {memory['peak_mb']:.0f} MB "
                f"({memory['after_load_mb']:.0f} MB after loading the model)"
            )
        rows.append(row)
    say(f"load average at the end (1, 5, 15 min): {', '.join(f'{v:.1f}' for v in os.getloadavg())}")
    say("")
    say("| family | reference loop s | cold s | warm s | reference / cold | reference / warm | peak memory, batch 64 |")
    say("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        memory = f"{row['peak_mb']:.0f} MB ({row['after_load_mb']:.0f} after load)" if "peak_mb" in row else "-"
        say(
            f"| {row['family']} | {row['reference']:.2f} | {row['cold']:.3f} | {row['warm']:.4f} | "
            f"{row['reference'] / row['cold']:.1f}x | {row['reference'] / row['warm']:,.0f}x | {memory} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
