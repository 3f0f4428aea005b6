"""A benchmark at scale with a real health sample: import, an annotator's key press, the health
report and the two pages a large benchmark opens first, per size and engine, with peak memory.

    .venv/bin/python bench/bench_scale.py                     # --sizes 10000 100000 --sample 1100
    .venv/bin/python bench/bench_scale.py --engines sqlite postgresql --sizes 10000 100000 1000000 --sample 5000
    .venv/bin/python bench/bench_scale.py --sizes 1000000 --sample 5000 --no-predictions --every-page

Per size: N generated pairs (seven categories) are written as a JSON-lines file and imported by
`foil import jsonl` in a process of its own, as a user runs it (items a second, store size, the
import's own peak memory with its reading process's: the file is streamed, a chunk at a time); a
health sample of `--sample` items is drawn for three annotators (overlap 3, `health sample` timed);
then one annotator answers `--answers` items through the page's own functions (`store.annotator_batches`, `queues.draw`,
`queues.submit_answer`), each key press timed whole (p50 and p95); Datasets and Benchmark health are
rendered through AppTest, first and again (a rerun that changes nothing), **before any report**, as
a user opens them right after drawing; then `health report` is timed (its first call fits and stores
the blind audit) and `health next` (a Neyman batch of 100); and (unless --no-predictions) the sample
is answered by simulated annotators, a predictor's output on every item is imported from JSON lines
and the report with prediction-powered shares is timed. PostgreSQL runs on a throwaway local server
(tests/postgres_support.py) with fsync on (durable commits, as SQLite's). "peak" is the process's
peak resident memory so far (it only grows: read each step's against the one before). Figures are of
one run on one machine: read the growth between sizes, not the seconds. `--every-page` gives every
item a judge's scores (run `judge`, imported with the file) and times every admin page.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from foil_studio import server
from foil_studio.annotate import health, queues
from foil_studio.annotate.simulation import simulate
from foil_studio.cli.main import main as cli_main
from foil_studio.data import store

CATEGORIES = ("replace_obj", "replace_att", "replace_rel", "swap_obj", "swap_att", "add_obj", "add_att")
ANNOTATORS = ("ann-a", "ann-b", "ann-c")
DATASET = "large"


def say(line: str) -> None:
    print(line, flush=True)


def peak() -> str:
    """The process's peak resident memory so far."""
    return f"peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB"


def generated(n: int, folder: Path, scored: bool = False) -> Path:
    """n SugarCrepe-like pairs as a JSON-lines file (`import jsonl`), the way a generator's output
    arrives; `scored`: each with a judge's scores of its two captions (run `judge`, as an export carries it)."""
    path = folder / f"{DATASET}-{n}.jsonl"
    rng = np.random.default_rng(0)
    with path.open("w") as handle:
        for i in range(n):
            caption = f"a photo number {i} of a cat on a mat"
            record = {
                "kind": "pair",
                "category": CATEGORIES[i % len(CATEGORIES)],
                "id": str(i),
                "captions": [caption, caption.replace("cat", "dog")],
                "images": [f"{i % 5000}.jpg"],
            }
            if scored:
                scores = [round(float(s), 4) for s in rng.normal([0.3, 0.25], 0.05)]
                record["results"] = {"judge": {"correct": scores[0] > scores[1], "scores": scores}}
            handle.write(json.dumps(record) + "\n")
    return path


# `foil import` run as a user runs it, telling its own peak: VmHWM, the peak of the process's own memory
# (getrusage's ru_maxrss would carry the bench's memory, copied at the fork before the exec), plus its
# reading process's peak (a large file's: `loading.read_in_process`), counted whole though the fork
# shares the importer's pages with it until either writes them
IMPORT = """
import resource, sys
from foil_studio.cli.main import main
code = main(sys.argv[2:])
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
reader = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
open(sys.argv[1], "w").write(str(int(peak.split()[1]) + reader))
sys.exit(code)
"""


def imported(path: Path, location: str) -> tuple[float, float]:
    """`foil import jsonl` in a process of its own, as a user runs it: its seconds and its own peak
    resident memory in GB, its reading process's peak added."""
    with tempfile.NamedTemporaryFile() as errors, tempfile.NamedTemporaryFile() as peak_file:
        command = [sys.executable, "-c", IMPORT, peak_file.name, "import", "jsonl", str(path), "--db", location]
        started = time.perf_counter()
        done = subprocess.run([*command, "--name", DATASET], stdout=subprocess.DEVNULL, stderr=errors)
        took = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"foil import failed: {Path(errors.name).read_text()[-2000:]}")
        return took, int(Path(peak_file.name).read_text()) / 1e6  # kB


def percentiles(seconds: list[float]) -> str:
    cuts = statistics.quantiles(seconds, n=20)
    return f"p50 {1000 * statistics.median(seconds):.1f} ms, p95 {1000 * cuts[18]:.1f} ms"


def key_presses(db, n: int) -> list[float]:
    """One annotator's key presses: their batches listed (My queue's menu), the item drawn, the answer stored."""
    me = store.annotator_by_name(db, ANNOTATORS[0])["id"]
    batch = health.health_batches(db, DATASET)[-1]["name"]
    times = []
    for _ in range(n):
        started = time.perf_counter()
        store.annotator_batches(db, me)
        task = queues.draw(db, me, batch).task
        if task is None:
            break
        queues.submit_answer(db, me, batch, task, {"answer": "negative_false"}, simulated=True)
        times.append(time.perf_counter() - started)
    return times


def page_seconds(db_location: str, page: str, dataset_key: str) -> tuple[float, float]:
    """First render and a rerun that changes nothing, through AppTest."""
    from streamlit.testing.v1 import AppTest

    os.environ["FOIL_DB"] = db_location
    os.environ["FOIL_ADMIN_TOKEN"] = "bench-admin-token"
    server.use_app_settings()  # as served: no collection of every generation after each run
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "foil_studio" / "app.py"), default_timeout=600)
    at.query_params["token"] = "bench-admin-token"
    at.run()
    started = time.perf_counter()
    at.switch_page(page).run()
    if dataset_key:
        at.selectbox(key=dataset_key).set_value(DATASET).run()
    first = time.perf_counter() - started
    started = time.perf_counter()
    at.run()
    again = time.perf_counter() - started
    if at.exception:
        raise RuntimeError(f"{page}: {at.exception}")
    return first, again


def admin_pages(every: bool) -> list[tuple[str, str, str]]:
    """(title, file, dataset box key) of the admin pages timed: Datasets and Benchmark health, or
    `every` one the registry lists."""
    from foil_studio.views.registry import pages_for

    pages = [(p.title, p.path, p.box.key if p.box else "") for p in pages_for("admin")]
    return pages if every else [page for page in pages if page[1] in ("views/datasets.py", "views/health.py")]


def with_predictions(db, n: int, sample: int, folder: Path, at: str) -> None:
    """Answer the sample, import a predictor's output on all n items, time the report that uses it."""
    simulate(db, f"health-{sample}", accuracies=0.9, seed=sample)
    started = time.perf_counter()
    health.health_report(db, DATASET, n_boot=200)
    answered = time.perf_counter() - started
    rng = np.random.default_rng(n)
    path = folder / f"predictions-{n}-{sample}.jsonl"
    path.write_text("".join(f'{{"id": "{i}", "invalid": {value:.3f}}}\n' for i, value in enumerate(rng.random(n))))
    started = time.perf_counter()
    health.import_predictions(db, DATASET, path, "judge")
    imported = time.perf_counter() - started
    started = time.perf_counter()
    health.health_report(db, DATASET, n_boot=200, predictions="judge")
    first = time.perf_counter() - started
    started = time.perf_counter()
    health.health_report(db, DATASET, n_boot=200, predictions="judge")
    say(
        f"{at}: answered, health report {answered:.2f} s; predictions on every item imported in {imported:.1f} s; "
        f"health report with them {first:.2f} s first, {time.perf_counter() - started:.2f} s again"
    )


def one_size(
    location: str,
    engine: str,
    source: Path,
    samples: list[int],
    answers: int,
    pages: bool,
    predictions: bool,
    all_pages: bool = False,
) -> None:
    n = sum(1 for _ in source.open())
    store.open_db(location).conn.close()  # the store's tables, before the import's own process
    took, import_peak = imported(source, location)
    db = store.open_db(location)
    files = [Path(location), Path(f"{location}-wal")]  # WAL mode: recent pages sit beside the file
    size = f", store {sum(f.stat().st_size for f in files if f.exists()) / 1e6:.0f} MB" if engine == "sqlite" else ""
    rate = f"{took:.1f} s ({n / took:,.0f} items/s)"
    say(f"{engine} {n:>9,} items: import {rate}{size}, the import's own peak {import_peak:.2f} GB")
    drawn = 0
    for sample in samples:
        at = f"{engine} {n:>9,} items, sample {sample:>5,}"
        started = time.perf_counter()
        plan = health.plan_sample(db, DATASET, sample - drawn, allocation="proportional", seed=len(samples))
        health.create_sample_batch(db, plan, ANNOTATORS, overlap=3, name=f"health-{sample}")
        say(f"{at}: health sample {time.perf_counter() - started:.2f} s, {peak()}")
        drawn = sample
        presses = key_presses(db, answers)
        say(f"{at}: key press (menu, draw, store) {percentiles(presses)}")
        if pages:  # as a user opens them right after drawing: before any report
            for title, page, key in admin_pages(all_pages):
                first, again = page_seconds(location, page, key)
                say(f"{at}: {title} page {first:.2f} s first, {again:.2f} s again, {peak()}")
        started = time.perf_counter()
        health.health_report(db, DATASET, n_boot=200)
        first = time.perf_counter() - started
        started = time.perf_counter()
        health.health_report(db, DATASET, n_boot=200)
        say(f"{at}: health report {first:.2f} s first, {time.perf_counter() - started:.2f} s again, {peak()}")
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            code = cli_main(["health", "next", DATASET, "--budget", "100", "--db", location, "--json"])
        assert code == 0, "health next failed"
        drawn += 100
        say(f"{at}: health next (100 items) {time.perf_counter() - started:.2f} s, {peak()}")
        if predictions:
            with tempfile.TemporaryDirectory() as folder:
                with_predictions(db, n, sample, Path(folder), at)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--sample", type=int, nargs="+", default=[1100], help="health sample sizes, growing")
    parser.add_argument("--answers", type=int, default=200, help="key presses timed per sample")
    parser.add_argument("--engines", nargs="+", default=["sqlite"], choices=["sqlite", "postgresql"])
    parser.add_argument("--no-pages", action="store_true", help="skip the AppTest page renders")
    parser.add_argument("--no-predictions", action="store_true", help="skip answering the sample and the predictions")
    parser.add_argument(
        "--every-page", action="store_true", help="a judge's scores on every item, and every admin page timed"
    )
    args = parser.parse_args()
    server = None
    if "postgresql" in args.engines:
        from tests.postgres_support import PostgresServer

        server = PostgresServer(durable=True).start()  # fsync on, as a real server has it
        os.environ.setdefault("FOIL_FILES", tempfile.mkdtemp())  # a PostgreSQL store's files folder
    try:
        with tempfile.TemporaryDirectory() as folder:
            for n in args.sizes:
                source = generated(n, Path(folder), scored=args.every_page)
                for engine in args.engines:
                    if engine == "sqlite":
                        location = str(Path(folder) / f"scale-{n}.db")
                    else:
                        assert server is not None
                        location = server.create_database()
                    one_size(
                        location,
                        engine,
                        source,
                        sorted(args.sample),
                        args.answers,
                        not args.no_pages,
                        not args.no_predictions,
                        args.every_page,
                    )
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
