"""Annotator speed: the browser round trip (key press -> next item drawn) and the latencies of
many annotators at once through the page's own functions.

    .venv/bin/python bench/bench_annotation.py                 # --workers 50 100 --answers 20 --browser-items 30
    .venv/bin/python bench/bench_annotation.py --no-browser    # the concurrent part only

Concurrent: each worker is a thread of one process, as each browser session of one Streamlit
server is, with its own store connection opened as the app opens it. *get-next* is what the
annotator page does for the next item (free stale leases, list the annotator's batches, draw the
item, which starts its lease, and find its pre-sized images), *submit* is the stored answer.
After each answer the worker also resizes the images of its next items, as the page does after
drawing, untimed but competing for the same interpreter. All workers start at once. Each looks
at an item for `--reading` seconds (default 0.6: the page refuses answers sooner than 0.5 s, so
no person can be faster), then answers; `--reading 0` (with the minimum off) measures the
server saturated, answers back to back.

Browser: Debian's Chromium against a real Streamlit server, one annotator, validate_negative;
from the key press (keydown, in the page) to the next item's caption drawn (a MutationObserver
in the page), over `--browser-items` items. Figures are percentiles of one run on one machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: its packages and tests.browser_support

from annotate import batches  # noqa: E402
from data import store  # noqa: E402
from data.demo import DemoConfig, install_demo  # noqa: E402

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
    return f"p50 {np.percentile(ms, 50):.1f} ms, p95 {np.percentile(ms, 95):.1f} ms, p99 {np.percentile(ms, 99):.1f} ms, max {ms.max():.1f} ms"


def build_store(folder: Path, n_items: int) -> Path:
    """A store holding the demo world with at least `n_items` SugarCrepe-style items."""
    path = folder / "bench.db"
    db = store.open_db(path)
    install_demo(db, folder / "images", DemoConfig(seed=3, pairs_per_category=-(-n_items // 7), n_triples=1, n_groups=7, n_candidate_sets=7, n_retrieval=1))
    return path


@dataclass
class Latencies:
    """What the workers measured, and what went wrong."""

    get_next: list[float] = field(default_factory=list)
    submit: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def get_next(db, annotator_id: int, batch_name: str) -> batches.QueueState:
    """The annotator page's work for the next item."""
    batches.reassign_stale(db, batch_name)
    store.annotator_batches(db, annotator_id)
    state = batches.draw(db, annotator_id, batch_name)
    if state.task is not None:
        batches.task_images(db, state.batch, state.task)
    return state


def worker(path: Path, annotator_id: int, batch_name: str, start: threading.Barrier, out: Latencies, reading: float) -> None:
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
            stored = batches.submit_answer(db, annotator_id, batch_name, state.task, ANSWER)
            submitted = time.perf_counter() - began
            batches.prefetch_images(db, annotator_id, batch_name)
            with out.lock:
                out.get_next.append(fetched)
                out.submit.append(submitted)
                if not stored:
                    out.errors.append(f"annotator {annotator_id}: item {state.task.item_id} answered twice")
    except Exception as error:  # noqa: BLE001  (every failure is counted and shown, none stops the others)
        with out.lock:
            out.errors.append(f"annotator {annotator_id}: {type(error).__name__}: {error}")


def concurrent(path: Path, n_workers: int, answers: int, reading: float, overlap: int = 2) -> tuple[Latencies, int, int]:
    """`n_workers` annotators answering `answers` items each at once: latencies, labels expected, labels stored."""
    db = store.open_db(path)
    names = tuple(f"w{n_workers}-{i:03d}" for i in range(n_workers))
    n_units = n_workers * answers // overlap
    created = batches.create_batch(db, batches.BatchSpec(DATASET, "validate_negative", names, overlap, n_units, seed=n_workers,
                                                          name=f"bench-{n_workers}-{reading:g}", min_seconds=min(batches.MIN_SECONDS, reading)))
    ids = [store.annotator_by_name(db, name)["id"] for name in names]
    out = Latencies()
    start = threading.Barrier(n_workers)
    threads = [threading.Thread(target=worker, args=(path, annotator_id, created["batch"], start, out, reading)) for annotator_id in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    batch_id = store.get_batch(db, created["batch"])["id"]
    return out, n_units * overlap, len(store.batch_labels(db, batch_id))


# Installed in the page: the time from a key press to the next item's caption on screen.
MEASURE = """() => {
  window.__roundTrips = [];
  const progress = () => { const el = [...document.querySelectorAll('[data-testid="stProgress"] p, [data-testid="stProgress"] div')].find((n) => /^\\d+ of \\d+ done$/.test(n.innerText || "")); return el ? Number(el.innerText.split(" ")[0]) : null; };
  const caption = () => { const el = [...document.querySelectorAll('[data-testid="stText"]')].find((n) => (n.innerText || "").startsWith("altered caption: ")); return el ? el.innerText : null; };
  let pressed = null;
  window.addEventListener("keydown", (event) => { if (event.key === "1" && !event.repeat) pressed = {at: performance.now(), done: progress(), caption: caption()}; }, true);
  new MutationObserver(() => {
    if (!pressed) return;
    const done = progress(), shown = caption();
    if (done !== null && done > pressed.done && shown && shown !== pressed.caption) { window.__roundTrips.push(performance.now() - pressed.at); pressed = null; }
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def round_trip(path: Path, folder: Path, n_items: int, reading_ms: int = 700) -> list[float]:
    """Seconds from each key press to the next item drawn, for one annotator in Chromium."""
    from playwright.sync_api import expect, sync_playwright

    from tests.browser_support import focus_page, launch, start_queue, streamlit_server, wait_idle

    db = store.open_db(path)
    created = batches.create_batch(db, batches.BatchSpec(DATASET, "validate_negative", ("browser",), 1, n_items + 1, seed=1, name="browser-round-trip"))
    token = created["annotators"][0]["token"]
    with streamlit_server(path, folder / "streamlit.log") as base, sync_playwright() as playwright:
        browser = launch(playwright)
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        page.goto(f"{base}/?token={token}")
        start_queue(page, expect)
        wait_idle(page, expect)
        page.evaluate(MEASURE)
        for answered in range(n_items):
            page.wait_for_timeout(reading_ms)
            wait_idle(page, expect)
            focus_page(page)
            page.keyboard.press("1")
            page.wait_for_function(f"window.__roundTrips.length > {answered}", timeout=30_000)
        seconds = [ms / 1000 for ms in page.evaluate("window.__roundTrips")]
        browser.close()
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[50, 100])
    parser.add_argument("--answers", type=int, default=20, help="items each concurrent worker answers")
    parser.add_argument("--reading", type=float, nargs="+", default=[0.6, 0.0], help="seconds each worker looks at an item (0: back to back)")
    parser.add_argument("--browser-items", type=int, default=30)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="foil-bench-annotation-"))
    path = build_store(folder, len(args.reading) * sum(args.workers) * args.answers // 2 + args.browser_items + 1)
    for reading in args.reading:
        for n_workers in args.workers:
            started = time.perf_counter()
            out, expected, stored = concurrent(path, n_workers, args.answers, reading)
            seconds = time.perf_counter() - started
            say(f"{n_workers} concurrent annotators, {args.answers} answers each, {reading:g} s reading each item ({seconds:.1f} s, {stored / seconds:.0f} answers/s): "
                f"get-next {percentiles(out.get_next)}; submit {percentiles(out.submit)}; labels stored {stored} of {expected}; errors {len(out.errors)}")
            for error in out.errors[:5]:
                say(f"  error: {error}")
    if not args.no_browser:
        seconds = round_trip(path, folder, args.browser_items)
        say(f"browser round trip (key press -> next item drawn), {len(seconds)} items: {percentiles(seconds)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
