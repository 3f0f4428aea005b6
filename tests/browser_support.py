"""A real Streamlit server and Debian's Chromium for the browser tests (never a downloaded browser)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from foil_studio import server
from tests.conftest import REPO

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ADMIN_TOKEN = "browser-admin-token"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def streamlit_server(
    db_file: Path | str, log_file: Path, attempts: int = 3, python: str = sys.executable
) -> Iterator[str]:
    """Serve the app (as `foil serve` does) on `db_file` (a store file or a PostgreSQL URL) on a
    free port, run by `python` (another venv's, to serve what is installed there); yield its base
    URL; stop it afterwards. The server inherits this process's environment (``FOIL_FILES``...).

    A port found free can be taken before Streamlit binds it (Streamlit then exits): another
    port is tried.
    """
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is required for the browser tests (apt-get install chromium)")
    for attempt in range(attempts):
        port = free_port()
        with log_file.open("a") as log:
            process = subprocess.Popen(
                server.streamlit_command(python, port),
                cwd=REPO,
                env={**server.app_environment(db_file), "FOIL_ADMIN_TOKEN": ADMIN_TOKEN},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                wait_healthy(port, process)
            except ServerExited:
                if attempt == attempts - 1:
                    raise
                continue
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                _stop(process)
            return


class ServerExited(RuntimeError):
    """Streamlit stopped before it was healthy (its port was taken, or it crashed)."""


def _stop(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)


def wait_healthy(port: int, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerExited(f"streamlit exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as reply:
                if reply.read().decode().strip() == "ok":
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError("streamlit did not become healthy")


# How long a browser test waits for what a rerun draws. Only a failing test waits this long; on CI's
# two busy cores a plotly chart once took more than 30 s to lay out while the suite ran beside it.
PAGE_WAIT_MS = 90_000


def launch(playwright):
    """Debian's Chromium, headless, with no background network traffic."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS)


def wait_idle(page, expect) -> None:
    """Wait until the script run the last action caused has finished."""
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=PAGE_WAIT_MS)


def press_when_idle(page, expect, key: str) -> None:
    """Press a key once the rerun has finished, with the focus on the page rather than an input."""
    wait_idle(page, expect)
    focus_page(page)
    page.keyboard.press(key)


def focus_page(page) -> None:
    """Put the keyboard focus on the page, off any input, by a click on the start of the title
    (its anchor link sits at the end, and a key pressed on a link is not a shortcut)."""
    page.bring_to_front()
    page.get_by_role("heading", level=1).first.click(position={"x": 3, "y": 3})


def start_queue(page, expect) -> None:
    """Press Start on the instructions screen if it is shown (a returning annotator goes straight
    to their item). A click, which waits until the button is drawn and ready, where a key pressed
    while the page is still settling can be lost."""
    start = page.get_by_role("button", name=re.compile(r"^Start"))
    expect(start.or_(page.get_by_text(re.compile(r"^\d+ of \d+ done$")))).to_be_visible(timeout=PAGE_WAIT_MS)
    wait_idle(page, expect)
    if start.is_visible():
        start.click()


# Installed in an annotator's page: every animation frame, is more than one item's stimuli on
# screen (or a caption outside the stimulus block), is the block shown with an image not yet
# decoded, and, after a digit key, how long until the next whole item is on screen.
WATCH_ITEMS = """() => {
  const f = window.__items = {frames: 0, mixed: 0, partial: 0, shown: [], swaps: []};
  let pressedAt = null, current = null;
  window.addEventListener("keydown", (event) => { if (/^[1-9]$/.test(event.key) && !event.repeat && pressedAt === null) pressedAt = performance.now(); }, true);
  const loose = () => [...document.querySelectorAll('[data-testid="stText"], [data-testid="stImage"]')]
    .some((node) => /caption: /.test(node.innerText || "") || node.querySelector("img"));
  const tick = () => {
    f.frames++;
    const blocks = [...document.querySelectorAll(".stimulus")];
    if (blocks.length > 1 || (blocks.length && loose())) f.mixed++;
    const block = blocks[0];
    if (block) {
      const whole = [...block.querySelectorAll("img")].every((img) => img.complete && img.naturalWidth > 0);
      if (!whole) f.partial++;
      if (whole && block.dataset.item !== current) {
        current = block.dataset.item;
        f.shown.push(current);
        if (pressedAt !== null) { f.swaps.push(performance.now() - pressedAt); pressedAt = null; }
      }
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""  # noqa: E501
