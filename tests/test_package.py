"""The package as a user installs it: the wheel built from the tracked files, installed with its
dependencies into a fresh venv, run from a folder outside the checkout (`foil --help`, `foil demo`,
`foil serve` until its health check answers)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tests.browser_support import free_port
from tests.conftest import REPO, checkout_copy
from tools.pip_sources import uv_options

# What the wheel must carry for the app to run, and what it must never carry.
REQUIRED = (
    "foil_studio/app.py",
    "foil_studio/cli/__init__.py",
    "foil_studio/streamlit_config.toml",
    "foil_studio/views/registry.py",
    "foil_studio/analysis/demo_model/foil-demo-clip.pt",
    "foil_studio/data/formats/hf.py",
)
FORBIDDEN_PARTS = ("tests", "bench", "docs", "demo_store", "mutants", "__pycache__")
FORBIDDEN_SUFFIXES = (".db", ".db-wal", ".sqlite", ".pyc")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built as CI builds it (setuptools from this environment, no download)."""
    source = checkout_copy(tmp_path_factory.mktemp("source"))  # the build never writes into the checkout
    dist = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (found,) = dist.glob("foil_studio-*.whl")
    return found


def test_the_wheel_holds_the_app_and_the_demo_model_and_no_tests_or_stores(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert [name for name in REQUIRED if name not in names] == []
    unwanted = [
        name
        for name in names
        if any(part in FORBIDDEN_PARTS for part in Path(name).parts) or name.endswith(FORBIDDEN_SUFFIXES)
    ]
    assert unwanted == []
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "Requires-Python: >=3.11" in text and "Requires-Dist: open_clip_torch" in text
    entry_points = zipfile.ZipFile(wheel).read(metadata.replace("METADATA", "entry_points.txt")).decode()
    assert "foil = foil_studio.cli:run" in entry_points


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel and the dependencies it declares, from the sources pip is
    configured with on this machine; returns its bin folder. uv installs them (pip's resolution
    rules, its cache linked instead of every wheel unpacked again: 200 s with pip, a few with uv)."""
    venv = tmp_path_factory.mktemp("venv")
    uv = str(Path(sys.executable).parent / "uv")
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True, timeout=300, cwd=venv)
    python = str(venv / "bin" / "python")
    # from outside the checkout and without its path: the install must not take this checkout for one
    install = subprocess.run(
        [uv, "pip", "install", "-q", "--python", python, *uv_options(), str(wheel)],
        cwd=venv,
        env=outside_env(),
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    check = subprocess.run(
        [uv, "pip", "check", "--python", python], cwd=venv, env=outside_env(), capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    return venv / "bin"


def outside_env() -> dict[str, str]:
    """The environment of a user's shell: no path into this checkout, no store chosen."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FOIL_DB", "FOIL_FILES", "FOIL_ADMIN_TOKEN")}


def test_the_installed_commands_run_from_a_folder_outside_the_checkout(installed, tmp_path):
    where = subprocess.run(
        [str(installed / "python"), "-c", "import foil_studio; print(foil_studio.__file__)"],
        cwd=tmp_path,
        env=outside_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert not Path(where.strip()).is_relative_to(REPO)  # the installed copy, not this checkout

    shown = run_foil(installed, tmp_path, "--help")
    assert shown.returncode == 0 and "usage: foil" in shown.stdout and "serve" in shown.stdout
    demo = run_foil(installed, tmp_path, "demo", "--json")
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert (tmp_path / "foil.db").is_file()  # the working folder's store, as the help says
    metrics = run_foil(installed, tmp_path, "metrics", "demo-sugarcrepe", "--run", "demo-clip")
    assert metrics.returncode == 0 and "accuracy_micro" in metrics.stdout, metrics.stderr


def run_foil(bin_folder: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed `foil` console script, in a user's environment."""
    return subprocess.run(
        [str(bin_folder / "foil"), *args], cwd=cwd, env=outside_env(), capture_output=True, text=True, timeout=900
    )


def test_foil_serve_answers_its_health_check_and_prints_the_link_for_its_port(installed, tmp_path):
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [str(installed / "foil"), "serve", "--port", str(port), "--db", "app.db"],
            cwd=tmp_path,
            env={**outside_env(), "FOIL_ADMIN_TOKEN": "package-test-admin-token"},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        answer = ""
        while time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5) as response:
                    answer = response.read().decode()
                    break
            except OSError:
                time.sleep(0.5)
        assert answer == "ok", log.read_text()[-3000:]
        assert f"Admin link: http://localhost:{port}/?token=package-test-admin-token" in log.read_text()
        assert (tmp_path / "app.db").is_file()  # the store was opened (and migrated) where it was named
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)


def test_what_a_package_build_leaves_behind_is_ignored_by_git():
    """setuptools' `build/` and the wheels' `dist/`, at the root or beside the example plugin, are
    never offered to `git add`."""
    paths = ["build/lib/foil_studio/app.py", "dist/foil_studio-0.10.0.whl", "examples/foil-plugin-example/build/x"]
    checked = subprocess.run(
        ["git", "check-ignore", "--no-index", *paths], cwd=REPO, capture_output=True, text=True, check=False
    )
    if checked.returncode == 128:
        pytest.skip(f"not a git checkout: {checked.stderr.strip()}")
    assert checked.stdout.split() == paths
