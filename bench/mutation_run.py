"""Run mutmut over the `[tool.mutmut]` modules with one PostgreSQL server for every mutant.

    .venv/bin/python bench/mutation_run.py [MUTANT_GLOB ...]

`make mutation` calls this. Each mutant runs its tests in a fresh pytest session; a session that
started its own PostgreSQL cluster would spend more time on the cluster than on the tests, so
the server is started here once and named to the tests by ``FOIL_TEST_POSTGRES`` (each session
creates and drops its own databases on it). torch runs single-threaded (see `main`). Globs
(``"foil_studio.analysis.parity*"``) limit the run to some mutants; the results of earlier runs
stay in ``mutants/``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.conftest import FIXTURES  # noqa: E402  (the checkout's rule for the shared files)
from tests.postgres_support import PostgresServer  # noqa: E402


def main(globs: list[str]) -> int:
    # its own temp root: pytest keeps only the last three session folders per root, and mutmut's
    # many sessions would otherwise delete the folders of a test run going on beside it
    temp_root = REPO / ".mutation-tmp"
    temp_root.mkdir(exist_ok=True)
    server = PostgresServer(max_connections=200).start()
    env = {
        **os.environ,
        "FOIL_TEST_POSTGRES": server.url(),
        "PYTEST_DEBUG_TEMPROOT": str(temp_root),
        # the tests run from mutants/, one folder down: the shared benchmark files are found from
        # the checkout, else every test of a real file would skip and its mutants go untested
        "FOIL_FIXTURES": str(FIXTURES),
        # mutmut forks each mutant from a process that has run torch: a forked child whose parent
        # started OpenMP's thread pool hangs in its first torch call (every demo-store test did)
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    try:
        command = [sys.executable, "-m", "mutmut", "run", "--max-children", "2", *globs]
        return subprocess.run(command, cwd=REPO, env=env).returncode
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
