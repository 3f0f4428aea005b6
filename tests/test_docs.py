"""The tables of README.md and docs/*.md are the registries' (`docs/readme_tables.py`, run by `make docs`;
`make docs-check` runs the same check in the gate)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.slow
def test_readme_tables_and_choice_lists_are_generated_from_the_registries():
    done = subprocess.run(
        [sys.executable, str(REPO / "docs" / "readme_tables.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
