"""The statistics libraries the pages import on first use are imported in the background once
the server's first page is drawn (`views.warm_up`), so no page's first render waits for them."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

from foil_studio import server
from foil_studio.views import warm_up
from tests.test_app import ADMIN


def test_the_libraries_are_imported_once_in_one_background_thread():
    script = (
        "import sys, threading\n"
        "from foil_studio.views import warm_up\n"
        "assert not any(name in sys.modules for name in warm_up.LIBRARIES), 'imported before the warm-up'\n"
        "warm_up.start_once(); warm_up.start_once()\n"
        "print(sum(t.name == 'foil-warm-up' for t in threading.enumerate()))\n"
        "assert warm_up.done.wait(300)\n"
        "print(all(name in sys.modules for name in warm_up.LIBRARIES), 'torch' in sys.modules)\n"
        "import gc; print(gc.get_freeze_count() > 100_000)\n"
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr
    # one thread; every library; never torch; what was imported is left out of later full collections
    assert ran.stdout.split() == ["1", "True", "False", "True"]


class SlowToAnswer(threading.Event):
    """An event whose check takes long enough for every thread to check before any sets it."""

    def is_set(self) -> bool:
        answer = super().is_set()
        time.sleep(0.05)
        return answer


def test_two_first_runs_ending_at_once_start_one_warm_up(monkeypatch):
    monkeypatch.setattr(warm_up, "_started", SlowToAnswer())
    started = []
    monkeypatch.setattr(warm_up, "_import_all", lambda: started.append(1))
    gate = threading.Barrier(8)

    def first_run_ends() -> None:
        gate.wait()
        warm_up.start_once()

    runs = [threading.Thread(target=first_run_ends) for _ in range(8)]
    for run in runs:
        run.start()
    for run in runs:
        run.join()
    assert started == [1]


def test_the_server_does_not_collect_every_generation_after_each_run():
    """Streamlit's default full collection after every run held the interpreter's lock for 0.1 to
    0.2 s twice a key press (BENCHMARKS.md, "Where the annotator's wait goes")."""
    assert "--runner.postScriptGC=false" in server.streamlit_command(sys.executable, 8501)


def test_the_app_starts_the_warm_up_after_drawing_a_page(app, monkeypatch):
    monkeypatch.setattr(warm_up, "_started", threading.Event())  # as in a server that has drawn no page yet
    at = app(ADMIN)
    assert not at.exception and [t.value for t in at.title] == ["Datasets"]
    assert warm_up._started.is_set()


def test_apptest_runs_the_pages_with_the_servers_settings():
    """The suite's and the scale bench's AppTest pages run as `foil serve` runs them."""
    from streamlit import config

    server.use_app_settings()
    assert config.get_option("runner.postScriptGC") is False
    assert config.get_option("client.toolbarMode") == "minimal"
