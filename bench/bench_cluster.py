"""Scoring on a local Ray cluster against scoring in one process, on the same pairs (issue 54).

    .venv/bin/python bench/bench_cluster.py [--items 1000] [--batch-size 64] [--arch ViT-B-32]
    .venv/bin/python bench/bench_cluster.py --family blip-itm --items 300   # a cross-encoder family

`--items` generated 640x480 JPEGs, one SugarCrepe-style pair each (two image-caption pairs an
item), scored in random weights (speed does not depend on them; open_clip in `auto` precision, a
family in fp32) three ways, each
into its own copy of the store (an empty cache): in this process (`score_dataset` on the model
loaded here), on a local cluster with one actor of 2 CPUs, and with two actors of 1 CPU. Each run
is timed in two parts: starting (loading the model; on a cluster, Ray's start and each actor
importing torch and loading it) and scoring (the batches). With `--family`, a cross-encoder family's
tiny random model (its test kit's `tiny_model`) instead, its pairs sent `--batch-size` images at a
time: what the cluster adds per pair where the model itself costs little. All figures come from one
run: compare them with each other.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from foil_studio.analysis.cluster import (
    ClusterPairs,
    ClusterSpec,
    FamilyWorker,
    actors_on_cluster,
    connect,
    open_clip_on_cluster,
)
from foil_studio.analysis.model_spec import ModelSpec
from foil_studio.analysis.models import load_model
from foil_studio.analysis.scorers import scorer_family
from foil_studio.analysis.scorers.pairwise import load_family, score_dataset_pairs
from foil_studio.analysis.scoring import score_dataset
from foil_studio.data import store
from foil_studio.data.demo_photos import photo_dataset


def fresh_copy(source: Path, folder: Path, name: str) -> Path:
    """A copy of the store `source` (what its write-ahead log holds included) as `name`."""
    target = folder / f"{name}.db"
    store.copy_store(store.open_db(source), store.open_db(target))
    return target


def on_cluster(db_file: Path, model: Any, actors: int, cpus: int, batch_size: int) -> tuple[float, float, int]:
    """(seconds to start, seconds to score, pairs scored) on a local cluster of `actors` x `cpus`:
    `model` an open_clip `ModelSpec` or a family's (name, folder)."""
    import ray

    cluster = ClusterSpec("local", actors=actors, cpus=cpus)
    started = time.perf_counter()
    connect(ray, cluster)
    try:
        if isinstance(model, ModelSpec):
            with open_clip_on_cluster(cluster, model, device="cpu") as encoder:
                ready = time.perf_counter()
                report = score_dataset(store.open_db(db_file), "photos", encoder, run="cluster", batch_size=batch_size)
        else:
            with actors_on_cluster(cluster, FamilyWorker, *model, "fp32", "cpu") as (pool, described):
                ready = time.perf_counter()
                runner = ClusterPairs(pool, described)
                report = score_dataset_pairs(
                    store.open_db(db_file), "photos", runner, run="cluster", batch_size=batch_size
                )
        done = time.perf_counter()
    finally:
        ray.shutdown()
    return ready - started, done - ready, 2 * report.n_items


def here(db_file: Path, model: Any, batch_size: int) -> tuple[float, float, str]:
    """(seconds to load, seconds to score, the precision) in this process."""
    started = time.perf_counter()
    if isinstance(model, ModelSpec):
        loaded = load_model(model, device="cpu")
        loading = time.perf_counter() - started
        started = time.perf_counter()
        score_dataset(store.open_db(db_file), "photos", loaded, batch_size=batch_size)
        return loading, time.perf_counter() - started, loaded.spec.precision
    family = load_family(scorer_family(model[0]), model[1], "fp32", "cpu")
    loading = time.perf_counter() - started
    started = time.perf_counter()
    score_dataset_pairs(store.open_db(db_file), "photos", family, batch_size=batch_size)
    return loading, time.perf_counter() - started, family.precision


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--arch", default="ViT-B-32", help="open_clip architecture (random weights)")
    parser.add_argument("--family", help="a cross-encoder family's tiny model instead (blip-itm, vqascore...)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        source = folder / "source.db"
        photo_dataset(store.open_db(source), folder / "files", args.items)
        model: Any = ModelSpec(args.arch, "none")
        if args.family:
            model = (args.family, str(scorer_family(args.family).kit().tiny_model(folder)))
        loading, alone, precision = here(fresh_copy(source, folder, "here"), model, args.batch_size)
        pairs = 2 * args.items
        name = f"{args.family} (tiny, random)" if args.family else args.arch
        print(f"{args.items} items ({pairs} image-caption pairs), {name} in {precision}, batch {args.batch_size}")
        print("| how | start (s) | score (s) | ms per pair | score time / one process |")
        print("| --- | ---: | ---: | ---: | ---: |")
        print(f"| one process (`foil score`) | {loading:.1f} | {alone:.1f} | {1000 * alone / pairs:.2f} | 1.00 |")
        for actors, cpus in ((1, 2), (2, 1)):
            start, score, scored = on_cluster(
                fresh_copy(source, folder, f"c{actors}"), model, actors, cpus, args.batch_size
            )
            print(
                f"| local Ray cluster, {actors} actor{'s' if actors > 1 else ''} x {cpus} CPU"
                f"{'s' if cpus > 1 else ''} | {start:.1f} | {score:.1f} | {1000 * score / scored:.2f} "
                f"| {score / alone:.2f} |"
            )


if __name__ == "__main__":
    main()
