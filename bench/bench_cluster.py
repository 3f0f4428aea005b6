"""Scoring on a local Ray cluster against scoring in one process, on the same pairs (issue 54).

    .venv/bin/python bench/bench_cluster.py [--items 1000] [--batch-size 64] [--arch ViT-B-32]

`--items` generated 640x480 JPEGs, one SugarCrepe-style pair each (two image-caption pairs an
item), scored in random weights (speed does not depend on them; `auto` precision) three ways, each
into its own copy of the store (an empty cache): in this process (`score_dataset` on the model
loaded here), on a local cluster with one actor of 2 CPUs, and with two actors of 1 CPU. Each run
is timed in two parts: starting (loading the model; on a cluster, Ray's start and each actor
importing torch and loading it) and scoring (the batches). All figures come from one run: compare
them with each other.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from foil_studio.analysis.cluster import ClusterSpec, connect, open_clip_on_cluster
from foil_studio.analysis.model_spec import ModelSpec
from foil_studio.analysis.models import load_model
from foil_studio.analysis.scoring import score_dataset
from foil_studio.data import store
from foil_studio.data.demo_photos import photo_dataset


def fresh_copy(source: Path, folder: Path, name: str) -> Path:
    """A copy of the store `source` (what its write-ahead log holds included) as `name`."""
    target = folder / f"{name}.db"
    store.copy_store(store.open_db(source), store.open_db(target))
    return target


def on_cluster(db_file: Path, spec: ModelSpec, actors: int, cpus: int, batch_size: int) -> tuple[float, float, int]:
    """(seconds to start, seconds to score, pairs scored) on a local cluster of `actors` x `cpus`."""
    import ray

    started = time.perf_counter()
    connect(ray, ClusterSpec("local", actors=actors, cpus=cpus))
    try:
        with open_clip_on_cluster(ClusterSpec("local", actors=actors, cpus=cpus), spec, device="cpu") as encoder:
            ready = time.perf_counter()
            report = score_dataset(store.open_db(db_file), "photos", encoder, run="cluster", batch_size=batch_size)
            done = time.perf_counter()
    finally:
        ray.shutdown()
    return ready - started, done - ready, 2 * report.n_items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--arch", default="ViT-B-32", help="open_clip architecture (random weights)")
    args = parser.parse_args()
    spec = ModelSpec(args.arch, "none")
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        source = folder / "source.db"
        photo_dataset(store.open_db(source), folder / "files", args.items)
        started = time.perf_counter()
        loaded = load_model(spec, device="cpu")
        loading = time.perf_counter() - started
        started = time.perf_counter()
        here = score_dataset(
            store.open_db(fresh_copy(source, folder, "here")), "photos", loaded, batch_size=args.batch_size
        )
        alone = time.perf_counter() - started
        pairs = 2 * here.n_items
        print(
            f"{args.items} items ({pairs} image-caption pairs), {args.arch} in {loaded.spec.precision}, "
            f"batch {args.batch_size}"
        )
        print("| how | start (s) | score (s) | ms per pair | score time / one process |")
        print("| --- | ---: | ---: | ---: | ---: |")
        print(f"| one process (`foil score`) | {loading:.1f} | {alone:.1f} | {1000 * alone / pairs:.2f} | 1.00 |")
        for actors, cpus in ((1, 2), (2, 1)):
            start, score, scored = on_cluster(
                fresh_copy(source, folder, f"c{actors}"), spec, actors, cpus, args.batch_size
            )
            print(
                f"| local Ray cluster, {actors} actor{'s' if actors > 1 else ''} x {cpus} CPU"
                f"{'s' if cpus > 1 else ''} | {start:.1f} | {score:.1f} | {1000 * score / scored:.2f} "
                f"| {score / alone:.2f} |"
            )


if __name__ == "__main__":
    main()
