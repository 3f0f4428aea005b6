"""Narrow the tests mutmut runs for the annotation store's mutants to that module's unit tests.

    .venv/bin/python bench/mutation_focus.py

mutmut runs, for each mutant, every selected test that called the mutated function. The store's
functions (`get_batch`, `save_label`...) are called by nearly every test that annotates: a
mutant of one ran about a hundred tests, most of them agreement, oracle and page tests that go
through the store on their way to something else, a third of them again on PostgreSQL, which
would take hours on 2 cores. This rewrites mutmut's map (`mutants/mutmut-stats.json`) so that
the functions of `foil_studio.data.store.annotation` keep only their unit tests: the tests of
`test_annotation.py`, `test_integrity.py`, `test_tokens_and_copies.py` and `test_store.py` on
SQLite, without page tests. A narrower map can only leave more mutants alive, never kill one.

Run it after mutmut has collected its stats (`mutmut run` once, even on a glob that matches no
mutant) and before the run that checks the mutants; TESTING.md says which figures came this way.
"""

from __future__ import annotations

import json
from pathlib import Path

STATS = Path(__file__).resolve().parents[1] / "mutants" / "mutmut-stats.json"
MODULE = "foil_studio.data.store.annotation."
UNIT_TEST_FILES = (
    "tests/test_annotation.py",
    "tests/test_integrity.py",
    "tests/test_tokens_and_copies.py",
    "tests/test_store.py",
)
PAGE_TESTS = (
    "admin_dashboard",
    "admin_batches_page",
    "annotator_flow",
    "crowd_session",
    "from_the_page",
    "sees_only_their_own_queue",
    "leads_to_the_next_one",
    "bad_participant_id",
)


def is_unit_test(test: str) -> bool:
    """A SQLite unit test of the store (not a page test, not the PostgreSQL variant)."""
    return test.startswith(UNIT_TEST_FILES) and "postgresql" not in test and not any(p in test for p in PAGE_TESTS)


def main() -> None:
    stats = json.loads(STATS.read_text())
    mapping = stats["tests_by_mangled_function_name"]
    before = after = 0
    for function, tests in mapping.items():
        if function.startswith(MODULE):
            kept = sorted(t for t in tests if is_unit_test(t))
            before, after = before + len(tests), after + len(kept)
            mapping[function] = kept
    STATS.write_text(json.dumps(stats))
    print(f"{MODULE}*: {before} test runs per pass over its functions, {after} kept")


if __name__ == "__main__":
    main()
