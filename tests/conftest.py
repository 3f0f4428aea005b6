"""Shared fixtures: a fresh store, the real benchmark files, a demo store on disk.

A test marked ``both_engines`` runs twice, on SQLite and on PostgreSQL (a real server the suite
starts once, `tests/postgres_support.py`): its ``fresh_db`` and ``demo_db`` are then a new
PostgreSQL database each, the demo one copied from the demo store by ``store.copy_store``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from foil_studio import server
from foil_studio.annotate.task_types import REGISTRY as TASK_TYPE_REGISTRY
from foil_studio.data import store
from foil_studio.data.demo import DEMO_DATASETS, DemoConfig, install_demo
from foil_studio.views.registry import PAGES

# Under pytest-xdist each worker, and every process it starts, gets its share of the cores for
# torch's OpenMP threads (set before torch is first imported): with torch's default of a thread
# per core, two workers on two cores oversubscribe them, and a parallel region waits for a
# descheduled thread (TESTING.md, "Suite time").
if worker_count := int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0")):
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, len(os.sched_getaffinity(0)) // worker_count)))

REPO = Path(__file__).resolve().parents[1]
APP_SCRIPT = REPO / "foil_studio" / "app.py"
FOIL_CLI = [sys.executable, "-m", "foil_studio.cli"]  # the command line, as `foil` runs it
# Subprocesses (the command line, the Streamlit server) import this checkout's package, whatever
# else the venv has installed.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
FIXTURES = Path(os.environ.get("FOIL_FIXTURES", REPO.parent / "shared" / "fixtures"))

# A smaller world than the shipped demo keeps tests quick; the invariants do not depend on size.
SMALL_DEMO = DemoConfig(seed=3, pairs_per_category=30, n_triples=60, n_groups=40, n_candidate_sets=40, n_retrieval=30)
# A demo dataset for each task type: the one holding its example item kind (the demo holds one of every kind).
DATASET_FOR_TASK = {name: DEMO_DATASETS[t.example_kind] for name, t in TASK_TYPE_REGISTRY.items()}


def checkout_copy(target: Path) -> Path:
    """The checkout's tracked files as they are now (a fresh clone of the working tree) under
    `target`, modification times kept (`make` compares them with its stamps)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (REPO / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, target / name)
    return target


# The slow families, each found from what a test uses rather than kept as a list: a browser
# (Chromium, a Streamlit server), a PostgreSQL server, the wheel in a fresh venv. A test of any of
# them is also `slow`, the one marker `make test-fast` leaves out. Longest first: the suite
# schedules them in this order (`pytest_collection_modifyitems`).
SLOW_FAMILIES = {
    "wheel": "builds the wheel and installs it into a fresh venv",
    "browser": "drives Chromium or a Streamlit server",
    "postgresql": "runs on a PostgreSQL server",
}


def pytest_configure(config):
    server.use_app_settings()  # AppTest runs the pages as `foil serve` does
    config.addinivalue_line("markers", "both_engines: run the test on SQLite and on PostgreSQL")
    for family, what in SLOW_FAMILIES.items():
        config.addinivalue_line("markers", f"{family}: the test {what} (and so is slow)")
    config.addinivalue_line(
        "markers",
        "slow: over 5 s on its own (a real process, model or many examples end to end), or of a slow family "
        "(`make test-fast` leaves it out; `make test` runs it)",
    )


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = getattr(item, "module", None)
        source = module.__dict__ if module is not None else {}
        if any(name in source for name in ("playwright_api", "streamlit_server", "launch", "wait_healthy")) or any(
            name in getattr(item, "fixturenames", ()) for name in ("site", "browser", "server")
        ):
            item.add_marker("browser")
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and callspec.params.get("engine") == "postgresql"
        if on_postgres or "postgres" in getattr(item, "fixturenames", ()):
            item.add_marker("postgresql")
        if module is not None and module.__name__.endswith("test_package"):
            item.add_marker("wheel")
        if any(family in item.keywords for family in SLOW_FAMILIES):
            item.add_marker("slow")
    if os.environ.get("MUTANT_UNDER_TEST") and MUTMUT_TIMES.is_file():
        items.sort(key=fastest_first(MUTMUT_TIMES))
    else:
        items.sort(key=longest_first(items, getattr(config, "cache", None)))


# mutmut's timing of each test, in the folder it runs a mutant's tests from (`make mutation`)
MUTMUT_TIMES = Path("mutmut-stats.json")


def fastest_first(times: Path) -> Callable[[pytest.Item], float]:
    """A mutant's tests by mutmut's timings, quickest first: mutmut stops at the first failing test
    but hands the tests over in no set order, so a mutant one quick test kills waited for the
    slowest tests first (hours for `data/formats/hf.py`)."""
    seconds = json.loads(times.read_text()).get("duration_by_test", {})
    return lambda item: seconds.get(item.nodeid, 0.0)


# Each module's seconds in the last run (pytest's cache, `.pytest_cache`): the next run's order.
MODULE_SECONDS = "foil/module_seconds"
_seconds_this_run: dict[str, float] = {}


def module_of(item_or_report) -> str:
    return item_or_report.nodeid.split("::")[0]


def longest_first(items, cache) -> Callable[[pytest.Item], tuple[list[bool], float]]:
    """The suite's order, a module's tests kept together: the slow families' modules first (the
    wheel, then the browser, then PostgreSQL), then the modules that took longest in the last run
    when the cache says (a fresh clone has none: pytest-randomly's shuffled order stays).
    pytest-xdist hands out modules in this order (`--no-loadscope-reorder`), so no long module
    starts last and leaves one worker alone with it at the end."""
    measured = cache.get(MODULE_SECONDS, {}) if cache is not None else {}
    rank: dict[str, list[bool]] = {}
    for item in items:
        slow_last = [family not in item.keywords for family in SLOW_FAMILIES]
        rank[module_of(item)] = min(rank.get(module_of(item), slow_last), slow_last)
    return lambda item: (rank[module_of(item)], -measured.get(module_of(item), 0.0))


def pytest_runtest_logreport(report):
    _seconds_this_run[module_of(report)] = _seconds_this_run.get(module_of(report), 0.0) + report.duration


def pytest_sessionfinish(session):
    cache = getattr(session.config, "cache", None)
    if cache is not None and not hasattr(session.config, "workerinput"):  # the controller sees every report
        cache.set(MODULE_SECONDS, {**cache.get(MODULE_SECONDS, {}), **_seconds_this_run})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed browser test reports what each of its pages showed at that moment: CI keeps only
    the log, and a timeout alone does not say which screen the person was looking at."""
    outcome = yield
    report = outcome.get_result()
    site = item.funcargs.get("site") if report.when == "call" and report.failed else None
    browser = site.get("browser") if isinstance(site, dict) else None
    if browser is None:
        return
    for number, page in enumerate(page for context in browser.contexts for page in context.pages):
        try:
            shown = page.inner_text("body", timeout=5_000)
        except Exception as error:  # a closed or crashed page: say so rather than hide the report
            shown = f"(could not read the page: {error})"
        report.sections.append((f"page {number + 1} ({page.url}) showed", shown[:3000]))


def pytest_generate_tests(metafunc):
    if "engine" in metafunc.fixturenames and metafunc.definition.get_closest_marker("both_engines"):
        metafunc.parametrize("engine", ["sqlite", "postgresql"])


@pytest.fixture
def engine() -> str:
    """The store engine of a test; ``both_engines`` tests get both."""
    return "sqlite"


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL server for this test session (started on first use, stopped at the end)."""
    from tests.postgres_support import session_server

    running = session_server()
    yield running
    running.stop()


def _postgres_store(url: str, request, monkeypatch, tmp_path):
    """Open a PostgreSQL store for one test: its files in a private folder, closed after the test."""
    monkeypatch.setenv("FOIL_FILES", str(tmp_path / "files"))
    db = store.open_db(url)
    request.addfinalizer(db.conn.close)
    return db


@pytest.fixture
def fresh_db(engine, request, monkeypatch, tmp_path):
    """An empty store: in memory, or a new PostgreSQL database."""
    if engine == "postgresql":
        return _postgres_store(request.getfixturevalue("postgres").create_database(), request, monkeypatch, tmp_path)
    return store.open_db(None)


@pytest.fixture(scope="session")
def fixtures() -> Path:
    """The real benchmark files of shared/fixtures (skip when this checkout has none)."""
    if not FIXTURES.is_dir():
        pytest.skip(f"benchmark fixtures not found at {FIXTURES}")
    return FIXTURES


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory) -> Path:
    """A store file holding the (small) demo world, built once per test session."""
    folder = tmp_path_factory.mktemp("demo")
    db_file = folder / "foil.db"
    db = store.open_db(db_file)
    install_demo(db, folder / "foil_files" / "demo", SMALL_DEMO)
    db.conn.close()
    return db_file


@pytest.fixture(scope="session")
def postgres_demo(postgres, demo_store) -> str:
    """A PostgreSQL database holding the demo store (copied once); the template of `demo_db`."""
    url = postgres.create_database()
    target = store.open_db(url)
    store.copy_store(store.open_db(demo_store), target)
    target.conn.close()  # a template must have no open connection
    return url.rsplit("/", 1)[1]


@pytest.fixture
def demo_db(demo_store, tmp_path, engine, request, monkeypatch):
    """A private copy of the demo store, so a test's runs, caches and labels affect no other."""
    if engine == "postgresql":
        url = request.getfixturevalue("postgres").create_database(template=request.getfixturevalue("postgres_demo"))
        return _postgres_store(url, request, monkeypatch, tmp_path)
    copy = tmp_path / "demo-copy.db"
    store.open_db(demo_store).conn.execute("VACUUM INTO ?", [str(copy)])
    return store.open_db(copy)


@pytest.fixture
def admin_page(monkeypatch):
    """Open an admin page of the app through AppTest on a store file: `admin_page(db_file, "views/x.py")`."""
    from streamlit.testing.v1 import AppTest

    def open_page(db_file: Path, page: str, timeout: int = 120) -> AppTest:
        monkeypatch.setenv("FOIL_DB", str(db_file))
        monkeypatch.setenv("FOIL_ADMIN_TOKEN", "page-test-admin-token")
        at = AppTest.from_file(str(APP_SCRIPT), default_timeout=timeout)
        at.query_params["token"] = "page-test-admin-token"
        return at.run().switch_page(page).run()

    return open_page


# The admin pages with a dataset select box (`views/registry.py`), and the box.
ADMIN_PAGES = tuple((page.path, page.box) for page in PAGES if page.role == "admin" and page.box)


def dataset_box(at, page: str, box) -> list[str]:
    """The options of the page's dataset box, failing with what the page drew instead when it
    drew no box with the key its record names."""
    try:
        return list(at.selectbox(key=box.key).options)
    except KeyError:
        drawn = [e.value for e in (*at.title, *at.info, *at.error, *at.warning)][:6]
        raise AssertionError(
            f"{page}: its record (views/registry.py) names a dataset box {box.key!r}, but the page drew none; "
            f"it showed: {drawn}"
        ) from None


def visit_admin_pages(open_page, db_file: Path, also=None) -> list[tuple[str, str]]:
    """Open every admin page (`admin_page` fixture) with every dataset its box lists (which must be
    the datasets its record's rule picks, `browse.datasets_holding`), and Inspect runs with every
    run A; fail on any exception. `also(page, dataset, at)` checks more per dataset. Returns the
    (page, dataset) pairs visited."""
    from foil_studio.annotate.browse import datasets_holding

    db = store.open_db(db_file)
    listed = {page: datasets_holding(db, box.item_kinds, with_runs=box.with_runs) for page, box in ADMIN_PAGES}
    db.close()
    visited = []
    for page, box in ADMIN_PAGES:
        at = open_page(db_file, page, timeout=300)
        options, expected = dataset_box(at, page, box), listed[page]
        assert options == expected, (page, options, expected)
        for dataset in options:
            at.selectbox(key=box.key).set_value(dataset).run()
            assert not at.exception, (page, dataset, at.exception)
            for run_key in [k for k in (f"run_a:{dataset}",) if k in {s.key for s in at.selectbox}]:
                for run in at.selectbox(key=run_key).options:  # Inspect runs: every run A
                    at.selectbox(key=run_key).set_value(run).run()
                    assert not at.exception, (page, dataset, run, at.exception)
            if also is not None:
                also(page, dataset, at)
            visited.append((page, dataset))
    return visited


def stimulus_captions(at) -> list[tuple[str, str]]:
    """(role, caption) of the item an AppTest page drew in its stimulus block (the component's data:
    AppTest runs no JavaScript, so the captions are read where the page put them)."""
    import json

    blocks = at.get("bidi_component")
    return [
        tuple(c)
        for block in blocks
        if block.proto.component_name == "foil_stimulus"
        for c in json.loads(block.proto.json)["captions"]
    ]


APP_ADMIN = "test-admin-token"  # the admin token of the `app` fixture's app


@pytest.fixture
def app(demo_db, monkeypatch):
    """Start the app on a private copy of the demo store (tests may write to it): `app(token)`."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("FOIL_DB", str(store.location(demo_db)))
    monkeypatch.setenv("FOIL_ADMIN_TOKEN", APP_ADMIN)

    def start(token: str | None):
        at = AppTest.from_file(str(APP_SCRIPT), default_timeout=60)
        if token is not None:
            at.query_params["token"] = token
        return at.run()

    return start
