"""Annotator speed: the browser round trip (key press -> next item drawn) and the latencies of
many annotators at once through the page's own functions.

    .venv/bin/python bench/bench_annotation.py                 # --workers 50 100 --answers 20 --browser-items 30
    .venv/bin/python bench/bench_annotation.py --no-browser    # the concurrent part only
    .venv/bin/python bench/bench_annotation.py --engines-only  # one SQLite server against two PostgreSQL replicas

Engines (`--engine-workers 100 200`): the same annotators, once as threads of one server process
on the SQLite store, once split over two server processes (replicas) on the same store copied
into PostgreSQL (a local server the bench starts, fsync on, as SQLite's commits are synced).

Concurrent: each worker is a thread of one process, as each browser session of one Streamlit
server is, with its own store connection opened as the app opens it. *get-next* is what the
annotator page does for the next item (free stale leases, list the annotator's batches, draw the
item, which starts its lease, and find its pre-sized images), *submit* is the stored answer.
After each answer the worker also resizes the images of its next items, as the page does after
drawing, untimed but competing for the same interpreter. All workers start at once. Each looks
at an item for `--reading` seconds (default 0.6: the page refuses answers sooner than 0.5 s, so
no person can be faster), then answers; `--reading 0` (with the minimum off) measures the
server saturated, answers back to back.

Browser: Debian's Chromium against a real Streamlit server, one annotator, validate_negative on
generated 640x480 JPEGs of about 100 KB (COCO's size, `data.demo_photos`); from the key press
(keydown, in the page) to the first animation frame showing the whole next item with every image
decoded, over `--browser-items` items, and the frames on which two items' stimuli (or an image
not yet decoded) were on screen (`tests.browser_support.WATCH_ITEMS`). Figures are percentiles of
one run on one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: its packages and tests.browser_support

from foil_studio.annotate import batches, queues
from foil_studio.data import store
from foil_studio.data.demo import DemoConfig, install_demo

DATASET = "demo-sugarcrepe"
ANSWER = {"answer": "negative_false"}


def say(line: str) -> None:
    """Print a result line at once."""
    print(line, flush=True)


def percentiles(seconds: list[float]) -> str:
    """p50 / p95 / p99 / max in milliseconds."""
    if not seconds:
        return "none"
    ms = np.asarray(seconds) * 1000
    return (
        f"p50 {np.percentile(ms, 50):.1f} ms, p95 {np.percentile(ms, 95):.1f} ms, p99 {np.percentile(ms, 99):.1f} ms, "
        f"max {ms.max():.1f} ms"
    )


def build_store(folder: Path, n_items: int) -> Path:
    """A store holding the demo world with at least `n_items` SugarCrepe-style items."""
    path = folder / "bench.db"
    db = store.open_db(path)
    install_demo(
        db,
        folder / "images",
        DemoConfig(
            seed=3, pairs_per_category=-(-n_items // 7), n_triples=1, n_groups=7, n_candidate_sets=7, n_retrieval=1
        ),
    )
    return path


@dataclass
class Latencies:
    """What the workers measured, and what went wrong."""

    get_next: list[float] = field(default_factory=list)
    submit: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def get_next(db, annotator_id: int, batch_name: str) -> queues.QueueState:
    """The annotator page's work for the next item."""
    queues.reassign_stale(db, batch_name)
    store.annotator_batches(db, annotator_id)
    state = queues.draw(db, annotator_id, batch_name)
    if state.task is not None:
        queues.task_images(db, state.batch, state.task)
    return state


def worker(
    path: Path | str, annotator_id: int, batch_name: str, start: threading.Barrier, out: Latencies, reading: float
) -> None:
    """One annotator answering their whole queue, looking at each item for `reading` seconds."""
    db = store.open_db(path, migrate_now=False, shared=True)
    start.wait()
    try:
        while True:
            began = time.perf_counter()
            state = get_next(db, annotator_id, batch_name)
            fetched = time.perf_counter() - began
            if state.task is None:
                break
            time.sleep(reading)
            began = time.perf_counter()
            stored = queues.submit_answer(db, annotator_id, batch_name, state.task, ANSWER)
            submitted = time.perf_counter() - began
            queues.upcoming_images(db, annotator_id, batch_name)
            with out.lock:
                out.get_next.append(fetched)
                out.submit.append(submitted)
                if not stored:
                    out.errors.append(f"annotator {annotator_id}: item {state.task.item_id} answered twice")
    except Exception as error:
        with out.lock:
            out.errors.append(f"annotator {annotator_id}: {type(error).__name__}: {error}")


def bench_batch(
    path: Path | str, n_workers: int, answers: int, reading: float, tag: str, overlap: int = 2
) -> tuple[str, list[int], int]:
    """A validate_negative batch for `n_workers` new annotators: its name, their ids, the labels it expects."""
    db = store.open_db(path)
    names = tuple(f"{tag}{n_workers}-{i:03d}" for i in range(n_workers))
    n_units = n_workers * answers // overlap
    created = batches.create_batch(
        db,
        batches.BatchSpec(
            DATASET,
            "validate_negative",
            names,
            overlap,
            n_units,
            seed=n_workers,
            name=f"bench-{tag}{n_workers}-{reading:g}",
            min_seconds=min(batches.MIN_SECONDS, reading),
        ),
    )
    return created["batch"], [store.annotator_by_name(db, name)["id"] for name in names], n_units * overlap


def serve(path: Path | str, batch_name: str, ids: list[int], reading: float) -> Latencies:
    """One server's annotators (threads, each with its own connection, as the app's sessions),
    starting together."""
    out = Latencies()
    start = threading.Barrier(len(ids))
    threads = [
        threading.Thread(target=worker, args=(path, annotator_id, batch_name, start, out, reading))
        for annotator_id in ids
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return out


def stored_labels(path: Path | str, batch_name: str) -> int:
    db = store.open_db(path)
    return len(store.batch_labels(db, store.get_batch(db, batch_name)["id"]))


def concurrent(path: Path, n_workers: int, answers: int, reading: float) -> tuple[Latencies, int, int]:
    """`n_workers` annotators answering `answers` items each at once: latencies, labels expected, labels stored."""
    batch_name, ids, expected = bench_batch(path, n_workers, answers, reading, "w")
    out = serve(path, batch_name, ids, reading)
    return out, expected, stored_labels(path, batch_name)


def replicas(
    location: Path | str, n_servers: int, n_workers: int, answers: int, reading: float, tag: str
) -> tuple[Latencies, int, int, float]:
    """`n_workers` annotators split over `n_servers` server processes on one store (each process
    runs `serve` on its share, all starting at one moment): latencies, labels expected and stored,
    seconds from the start to the last answer."""
    batch_name, ids, expected = bench_batch(location, n_workers, answers, reading, tag)
    start_at = time.time() + 5 + n_workers / 50  # every process has opened its connections by then
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--serve",
                str(location),
                batch_name,
                json.dumps(ids[n::n_servers]),
                str(reading),
                str(start_at),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(n_servers)
    ]
    out = Latencies()
    for process in processes:
        part = json.loads(process.communicate()[0])
        out.get_next += part["get_next"]
        out.submit += part["submit"]
        out.errors += part["errors"]
    return out, expected, stored_labels(location, batch_name), time.time() - start_at


def serve_from_command_line(location: str, batch_name: str, ids: str, reading: str, start_at: str) -> None:
    """A replica process (`replicas`): wait for the common start, serve, print the latencies as JSON."""
    time.sleep(max(0.0, float(start_at) - time.time()))
    out = serve(location, batch_name, json.loads(ids), float(reading))
    print(json.dumps({"get_next": out.get_next, "submit": out.submit, "errors": out.errors}))


def report(label: str, out: Latencies, expected: int, stored: int, seconds: float) -> None:
    say(
        f"{label} ({seconds:.1f} s, {stored / seconds:.0f} answers/s): get-next {percentiles(out.get_next)}; "
        f"submit {percentiles(out.submit)}; labels stored {stored} of {expected}; errors {len(out.errors)}"
    )
    for error in out.errors[:5]:
        say(f"  error: {error}")


def compare_engines(path: Path, folder: Path, workers: list[int], answers: int, reading: float) -> None:
    """One server on SQLite against two replicas on PostgreSQL, for each number of annotators."""
    from tests.postgres_support import PostgresServer

    server = PostgresServer(durable=True).start()
    try:
        url = server.create_database()
        store.copy_store(store.open_db(path), store.open_db(url))
        os.environ["FOIL_FILES"] = str(folder / "postgres_files")  # the replicas' shared folder (thumbnails)
        for n_workers in workers:
            for label, location, n_servers in (("one server, SQLite", path, 1), ("two replicas, PostgreSQL", url, 2)):
                out, expected, stored, seconds = replicas(
                    location, n_servers, n_workers, answers, reading, "s" if n_servers == 1 else "p"
                )
                report(
                    f"{n_workers} annotators, {label}, {answers} answers each, {reading:g} s reading",
                    out,
                    expected,
                    stored,
                    seconds,
                )
    finally:
        os.environ.pop("FOIL_FILES", None)
        server.stop()


# Every websocket message the page receives, with the page's clock and its size, and each key
# press's time: where a key press's wait goes (the server's messages, then the browser's drawing).
WATCH_MESSAGES = """
(() => { const Socket = window.WebSocket; window.__messages = []; window.__presses = [];
  function Watched(...args) { const socket = new Socket(...args);
    socket.addEventListener("message", (event) => window.__messages.push([performance.now(), event.data.size || event.data.byteLength || event.data.length || 0]));
    return socket; }
  Watched.prototype = Socket.prototype;
  for (const state of ["CONNECTING", "OPEN", "CLOSING", "CLOSED"]) Watched[state] = Socket[state];
  window.WebSocket = Watched;
  window.addEventListener("keydown", (event) => { if (/^[1-9]$/.test(event.key) && !event.repeat) window.__presses.push(performance.now()); }, true);
})();
"""  # noqa: E501


def message_breakdown(presses: list[float], swaps: list[float], messages: list[list[float]]) -> dict[str, list[float]]:
    """Per key press: seconds to the last server message before the whole item was on screen, that
    run's messages and kilobytes (the rest of the wait is the browser's drawing and decoding)."""
    out: dict[str, list[float]] = {"last message": [], "messages": [], "kB": []}
    for pressed, waited in zip(presses, swaps, strict=False):
        during = [(at, size) for at, size in messages if pressed <= at <= pressed + waited]
        if during:
            out["last message"].append((during[-1][0] - pressed) / 1000)
            out["messages"].append(len(during))
            out["kB"].append(sum(size for _, size in during) / 1000)
    return out


def round_trip(path: Path, folder: Path, n_items: int, reading_ms: int = 700) -> tuple[list[float], dict]:
    """Seconds from each key press to the next whole item on screen (every caption and image, the
    images decoded), for one annotator in Chromium on 640x480 JPEGs as COCO's; the frame counts of
    `WATCH_ITEMS` (screens with two items' stimuli, or an image not yet decoded); and under
    "breakdown" when each press's last server message arrived (`message_breakdown`)."""
    from playwright.sync_api import expect, sync_playwright

    from foil_studio.data.demo_photos import photo_dataset
    from tests.browser_support import WATCH_ITEMS, focus_page, launch, start_queue, streamlit_server, wait_idle

    db = store.open_db(path)
    photo_dataset(db, folder / "photos", n_items + 1)
    created = batches.create_batch(
        db,
        batches.BatchSpec(
            "photos", "validate_negative", ("browser",), 1, n_items + 1, seed=1, name="browser-round-trip"
        ),
    )
    token = created["annotators"][0]["token"]
    with streamlit_server(path, folder / "streamlit.log") as base, sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.add_init_script(WATCH_MESSAGES)
        page = context.new_page()
        page.goto(f"{base}/?token={token}")
        start_queue(page, expect)
        wait_idle(page, expect)
        page.evaluate(WATCH_ITEMS)
        page.wait_for_function("window.__items.shown.length > 0", timeout=30_000)
        for answered in range(n_items):
            page.wait_for_timeout(reading_ms)
            wait_idle(page, expect)
            focus_page(page)
            page.keyboard.press("1")
            page.wait_for_function(f"window.__items.swaps.length > {answered}", timeout=30_000)
        frames = page.evaluate("window.__items")
        presses, messages = page.evaluate("window.__presses"), page.evaluate("window.__messages")
        browser.close()
    swaps = frames["swaps"]
    frames["breakdown"] = message_breakdown(presses[-len(swaps) :] if swaps else [], swaps, messages)
    return [ms / 1000 for ms in swaps], frames


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[50, 100])
    parser.add_argument("--answers", type=int, default=20, help="items each concurrent worker answers")
    parser.add_argument(
        "--reading",
        type=float,
        nargs="+",
        default=[0.6, 0.0],
        help="seconds each worker looks at an item (0: back to back)",
    )
    parser.add_argument("--browser-items", type=int, default=30)
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument(
        "--engine-workers",
        type=int,
        nargs="*",
        default=[100, 200],
        help="annotators of the engine comparison (none: skip it)",
    )
    parser.add_argument("--engines-only", action="store_true", help="only the engine comparison")
    parser.add_argument("--serve", nargs=5, help=argparse.SUPPRESS)  # a replica process of the engine comparison
    args = parser.parse_args()
    if args.serve:
        serve_from_command_line(*args.serve)
        return 0
    folder = Path(tempfile.mkdtemp(prefix="foil-bench-annotation-"))
    path = build_store(folder, max(args.workers + args.engine_workers) * args.answers // 2 + args.browser_items + 1)
    for reading in [] if args.engines_only else args.reading:
        for n_workers in args.workers:
            started = time.perf_counter()
            out, expected, stored = concurrent(path, n_workers, args.answers, reading)
            report(
                f"{n_workers} concurrent annotators, {args.answers} answers each, {reading:g} s reading each item",
                out,
                expected,
                stored,
                time.perf_counter() - started,
            )
    if args.engine_workers:
        compare_engines(path, folder, args.engine_workers, args.answers, args.reading[0])
    if not args.no_browser and not args.engines_only:
        seconds, frames = round_trip(path, folder, args.browser_items)
        say(
            f"browser: key press -> whole next item on screen (640x480 JPEGs, images decoded), {len(seconds)} items: "
            f"{percentiles(seconds)}"
        )
        say(
            f"browser: {frames['frames']} frames watched; with two items' stimuli at once: {frames['mixed']}; "
            f"with an image not yet decoded: {frames['partial']}"
        )
        parts = frames["breakdown"]
        say(
            f"browser: key press -> the run's last message: {percentiles(parts['last message'])}; "
            f"messages per press p50 {np.median(parts['messages']):.0f}, {np.median(parts['kB']):.0f} kB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
