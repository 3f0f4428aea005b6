"""The statistics libraries a page imports when it first needs them, imported once per server
process in the background after its first page is drawn.

The library modules import them inside the functions that use them, so that a `foil` command
starts quickly; a server that waited for the first page needing them made that page wait too
(scipy.stats alone takes 1.7 s to import on this project's 2-core machine: most of the Benchmark
health page's first render at a million items).
"""

from __future__ import annotations

import gc
import importlib
import threading

# What the pages' functions import on first use (analysis.health, prediction_powered, metrics,
# annotate.agreement, audit): the slow ones, not torch (the scoring form's, seconds and a GB).
LIBRARIES = (
    "scipy.stats",
    "statsmodels.stats.proportion",
    "statsmodels.stats.inter_rater",
    "statsmodels.stats.contingency_tables",
    "sklearn.metrics",
)

_started = threading.Event()
_starting = threading.Lock()  # two sessions' first runs end at once on a server's threads
done = threading.Event()


def start_once() -> None:
    """Start importing `LIBRARIES` in a daemon thread, the first time only (the app calls this
    after each run; its import lock makes a page that needs a module meanwhile wait for that one)."""
    with _starting:
        if _started.is_set():
            return
        _started.set()
    threading.Thread(target=_import_all, name="foil-warm-up", daemon=True).start()


def _import_all() -> None:
    try:
        for name in LIBRARIES:
            importlib.import_module(name)
        # What the server has imported lives as long as it does: left out of every later full
        # collection, which otherwise walks its 190,000 objects (0.2 s holding the interpreter's
        # lock, on this project's 2-core machine) while an annotator waits for the next item.
        gc.freeze()
    finally:
        done.set()
