"""The statistics libraries the pages import on first use are imported in the background once
the server's first page is drawn (`views.warm_up`), so no page's first render waits for them."""

from __future__ import annotations

import subprocess
import sys
import threading

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
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["1", "True", "False"]  # one thread; every library; never torch


def test_the_app_starts_the_warm_up_after_drawing_a_page(app, monkeypatch):
    monkeypatch.setattr(warm_up, "_started", threading.Event())  # as in a server that has drawn no page yet
    at = app(ADMIN)
    assert not at.exception and [t.value for t in at.title] == ["Datasets"]
    assert warm_up._started.is_set()
