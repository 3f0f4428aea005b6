"""The example plugin as a lab installs it (issue 56): `examples/foil-plugin-example` built as a
wheel and installed into a fresh venv beside this checkout's environment (its packages, foil
included, seen through a `.pth`: the plugin installs with `--no-deps`, in a second). Then, with no
file of foil_studio/ edited: `foil plugins` lists it, `foil import eqben` reads EqBen's JSON,
`foil score --model colour-match:FOLDER` scores with its model family and `foil metrics` reads the
run, a batch of its task is answered in Chromium from a server the venv runs, its own suite runs
foil's generic checks on its records; uninstalling it takes them away again."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from tests.browser_support import PAGE_WAIT_MS, launch, press_when_idle, start_queue, streamlit_server
from tests.conftest import REPO
from tests.test_package import outside_env

pytestmark = pytest.mark.wheel
READING_MS = 800  # a person reads the caption before answering (the page refuses answers under 0.5 s)
EXAMPLE = REPO / "examples" / "foil-plugin-example"
UV = str(Path(sys.executable).parent / "uv")
LIGHT_AND_TABLES = textwrap.dedent(
    """
    import sys
    from foil_studio.cli.main import build_parser

    build_parser()
    print("torch" in sys.modules)
    from foil_studio.analysis.scorers import family_table
    from foil_studio.annotate.task_types import task_table
    from foil_studio.data.formats import import_table

    print(import_table(), task_table(), family_table(), sep="\\n")
    """
)


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """The example's tracked files, copied (the build writes beside its sources)."""
    return shutil.copytree(
        EXAMPLE,
        tmp_path_factory.mktemp("example") / "foil-plugin-example",
        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", ".pytest_cache"),
    )


@pytest.fixture(scope="module")
def wheel(source, tmp_path_factory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (found,) = dist.glob("foil_plugin_example-*.whl")
    return found


@pytest.fixture(scope="module")
def python(wheel, tmp_path_factory) -> Path:
    """A fresh venv's python that sees this environment's packages, with the plugin's wheel installed."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([UV, "venv", "-q", "--python", sys.executable, str(venv)], check=True, timeout=300, cwd=venv)
    python = venv / "bin" / "python"
    site_packages = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    beside = sysconfig.get_paths()["purelib"]  # this environment's: foil (editable) and its libraries
    Path(site_packages, "foil_beside.pth").write_text(f"import site; site.addsitedir({beside!r})\n")
    install(python, wheel)
    return python


def install(python: Path, wheel: Path) -> None:
    installed = subprocess.run(
        [UV, "pip", "install", "-q", "--no-deps", "--reinstall", "--python", str(python), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
        env=outside_env(),
        check=False,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]


def foil(python: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`foil ARGS` as the venv runs it, from a folder outside the checkout."""
    return subprocess.run(
        [str(python), "-m", "foil_studio.cli", *args],
        cwd=cwd,
        env=outside_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def as_json(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0 and not done.stderr.count("refused"), done.stderr[-3000:]
    return json.loads(done.stdout)


def test_foil_plugins_lists_the_example_with_its_version_and_what_it_adds(python, tmp_path):
    shown = foil(python, tmp_path, "plugins")
    assert shown.returncode == 0 and shown.stdout.splitlines() == [
        "foil-plugin-example 0.1.0",
        "  foil_studio.formats: eqben",
        "  foil_studio.task_types: grammatical_negative",
        "  foil_studio.scorers: colour-match",
    ], shown.stdout + shown.stderr
    helped = foil(python, tmp_path, "score", "--help")
    # whitespace dropped: argparse wraps the help, breaking a line after a hyphen ("colour-" / "match")
    assert "colour-match(acolourtablescoring" in "".join(helped.stdout.split())
    # the help path imports no torch, and the generated tables mark each of the plugin's rows
    shown = subprocess.run([str(python), "-c", LIGHT_AND_TABLES], capture_output=True, text=True, check=True).stdout
    assert shown.splitlines()[0] == "False"
    for name in ("eqben", "grammatical_negative", "colour-match"):
        assert f"| `{name}` (plugin foil-plugin-example 0.1.0) |" in shown, name


def test_its_format_model_family_and_task_work_through_foil(python, tmp_path):
    made = (
        "from pathlib import Path; from foil_plugin_example.eqben import COLOURS, write_eqben_source; "
        "from foil_plugin_example.colour import save_colours; "
        "write_eqben_source(Path('eqben')); save_colours(Path('colour-model'), COLOURS)"
    )
    subprocess.run([str(python), "-c", made], cwd=tmp_path, check=True, env=outside_env())
    db = ("--db", "lab.db")
    imported = as_json(
        foil(python, tmp_path, "import", "eqben", "eqben/eqbensd.json", "--images", "eqben", *db, "--json")
    )
    assert (imported["n_items"], imported["missing_images"]) == (6, 0)
    scored = as_json(
        foil(
            python, tmp_path, "score", "eqben", "--model", "colour-match:colour-model", "--run", "colour", *db, "--json"
        )
    )
    assert (scored["family"], scored["n_items"]) == ("colour-match", 6)
    metrics = as_json(foil(python, tmp_path, "metrics", "eqben", "--run", "colour", *db, "--json"))
    assert metrics["metrics"]["accuracy_micro"] == 100.0  # each caption names the colour shown, each negative another
    batch = as_json(
        foil(
            python,
            tmp_path,
            "batch",
            "create",
            "eqben",
            "--task-type",
            "grammatical_negative",
            "--annotators",
            "ada",
            "--overlap",
            "1",
            *db,
            "--json",
        )
    )
    (ada,) = batch["annotators"]
    with streamlit_server(tmp_path / "lab.db", tmp_path / "streamlit.log", python=str(python)) as base:
        answer_in_browser(f"{base}{ada['url']}", "1", ada["n_assigned"])
    labels = foil(python, tmp_path, "labels", batch["batch"], "--format", "jsonl", *db)
    rows = [json.loads(line) for line in labels.stdout.splitlines()]
    assert len(rows) == 6 and {row["answer"]["answer"] for row in rows} == {"grammatical"}, labels.stderr


def answer_in_browser(link: str, key: str, n_items: int) -> None:
    """Open an annotator's link in Chromium, press Start, and answer every item with `key` after
    reading it, as a person does; the page says the batch is done."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    expect = playwright_api.expect
    with playwright_api.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(link)
        start_queue(page, expect)
        for done in range(n_items):
            expect(page.get_by_text(f"{done} of {n_items} done", exact=True)).to_be_visible(timeout=PAGE_WAIT_MS)
            expect(page.get_by_text(re.compile(r"^altered caption: "))).to_be_visible(timeout=PAGE_WAIT_MS)
            page.wait_for_timeout(READING_MS)
            press_when_idle(page, expect, key)
        expect(page.get_by_text("All done, thank you", exact=False)).to_be_visible(timeout=PAGE_WAIT_MS)
        browser.close()


def test_its_own_suite_runs_the_generic_checks_on_its_records(python, source):
    ran = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", str(source / "tests")],
        cwd=source,
        capture_output=True,
        text=True,
        env=outside_env(),
        timeout=600,
    )
    assert ran.returncode == 0 and "5 passed" in ran.stdout, ran.stdout[-3000:] + ran.stderr[-3000:]


def test_uninstalling_it_takes_its_records_away(python, wheel, tmp_path):
    removed = subprocess.run(
        [UV, "pip", "uninstall", "-q", "--python", str(python), "foil-plugin-example"],
        capture_output=True,
        text=True,
        env=outside_env(),
    )
    try:
        assert removed.returncode == 0, removed.stderr
        assert foil(python, tmp_path, "plugins").stdout.startswith("no plugins installed")
        refused = foil(python, tmp_path, "import", "eqben", "x.json")
        assert refused.returncode == 2 and "invalid choice: 'eqben'" in refused.stderr
    finally:
        install(python, wheel)
