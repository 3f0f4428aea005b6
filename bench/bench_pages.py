"""Page speed on a large dataset: each admin page rendered through AppTest, timed.

    .venv/bin/python bench/bench_pages.py [--items 100000]

Builds a store with one pair dataset of N items (seven categories) and two scored runs with
random similarities, then times a first and a second render of each page (the second shows what
caching buys), then a third after clearing the page caches (as after a server restart: the
store still holds run summaries and audits). The hackability audit is fitted and stored first,
as `./foil audit` or the page's first visit would. Figures are seconds in one run on this machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from foil_studio.analysis.audit import audit
from foil_studio.data import store
from foil_studio.data.formats import Parsed
from foil_studio.data.items import Item
from foil_studio.data.loading import store_parsed

CATEGORIES = ("replace_obj", "replace_att", "replace_rel", "swap_obj", "swap_att", "add_obj", "add_att")
AUDIT_SCORERS = ("stats", "ngram")  # the page's default
PAGES = {
    "Datasets": None,
    "Model scores": "views/model_scores.py",
    "Inspect runs": "views/inspect_runs.py",
    "Annotation batches": "views/batches.py",
    "Hackability audit": "views/hackability.py",
}


def build(db_file: Path, n: int) -> None:
    """A pair dataset of n items and two runs of random scores."""
    db = store.open_db(db_file)
    parsed = Parsed("jsonl", "large")
    for i in range(n):
        category = CATEGORIES[i % len(CATEGORIES)]
        parsed.add(
            Item(
                "pair",
                category,
                f"{category}/{i}",
                (f"a photo number {i} of a cat", f"a photo number {i} of a dog"),
                (f"{i}.jpg",),
            ),
            "bench",
            i,
        )
    store_parsed(db, parsed, source_format="jsonl", path="bench")
    rng = np.random.default_rng(0)
    ids = [i for i, _ in store.upsert_items(db, store.get_dataset(db, "large")["id"], parsed.items)]
    for run in ("model-a", "model-b"):
        with store.transaction(db):
            run_id = store.ensure_run(db, store.get_dataset(db, "large")["id"], run, run_type="scores", model=run)
            store.put_scores(db, run_id, [(i, rng.random(2).tolist()) for i in ids])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--db", type=Path, help="reuse this store if it exists (else build it there)")
    args = parser.parse_args()
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    db_file = args.db or Path(tempfile.mkdtemp(prefix="foil-pages-")) / "large.db"
    if not db_file.exists():
        started = time.perf_counter()
        build(db_file, args.items)
        print(f"built {args.items} items with two scored runs in {time.perf_counter() - started:.1f} s", flush=True)
    started = time.perf_counter()
    audit(store.open_db(db_file), "large", scorers=AUDIT_SCORERS)
    print(
        f"hackability audit ({', '.join(AUDIT_SCORERS)}, 5-fold) fitted and stored in "
        f"{time.perf_counter() - started:.1f} s",
        flush=True,
    )
    os.environ.update(FOIL_DB=str(db_file), FOIL_ADMIN_TOKEN="bench-admin-token")
    app = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "foil_studio" / "app.py"), default_timeout=600)
    app.query_params["token"] = "bench-admin-token"
    app.run()
    for name, page in PAGES.items():
        if page:
            app.switch_page(page)
        timings = []
        for render in range(3):
            if render == 2:
                st.cache_data.clear()  # as after a server restart: only what the store keeps remains
            began = time.perf_counter()
            app.run()
            timings.append(time.perf_counter() - began)
        status = "error: " + app.exception[0].message if app.exception else "ok"
        print(
            f"{name}: first render {timings[0]:.2f} s, second {timings[1]:.2f} s, after clearing the page caches "
            f"{timings[2]:.2f} s ({status})",
            flush=True,
        )
        if name == "Inspect runs":
            time_failure_paging(app)
    return 0


def time_failure_paging(app) -> None:
    """Failure browser with run B chosen: a jump to a far page, as a user pages through failures."""
    app.selectbox(key="run_b:large").set_value("model-b").run()
    app.selectbox(key="pattern").set_value("wrong for A, right for B").run()
    began = time.perf_counter()
    app.number_input(key="fail_page").set_value(1000).run()
    shown = sum(t.value.startswith("#") for t in app.text)
    print(
        f"Inspect runs, failure browser page 1000 of 'wrong for A, right for B': {time.perf_counter() - began:.2f} s "
        f"({shown} items shown)",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
