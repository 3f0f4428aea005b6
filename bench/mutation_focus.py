"""Narrow the tests mutmut runs for one module's mutants to that module's unit tests.

    .venv/bin/python bench/mutation_focus.py [FOCUS ...]

FOCUS names an entry of `FOCUSES` (all of them when none is given): `annotation` (issue 32),
`analysis-health` and `annotate-health` (issue 40).

mutmut runs, for each mutant, every selected test that called the mutated function. Some
functions are called by nearly every test on its way to something else: the annotation store's
(`get_batch`, `save_label`...) by every test that annotates, so a mutant of one ran about a hundred
tests, most of them agreement, oracle and page tests, a third of them again on PostgreSQL, which
would take hours on 2 cores. This rewrites mutmut's map (`mutants/mutmut-stats.json`) so that
the functions of a focused module keep only their unit tests (`Focus`): for the annotation store,
the tests of `test_annotation.py`, `test_integrity.py`, `test_tokens_and_copies.py` and
`test_store.py` on SQLite, without page tests. A narrower map can only leave more mutants alive,
never kill one.

Run it after mutmut has collected its stats (`mutmut run` once, even on a glob that matches no
mutant) and before the run that checks the mutants; TESTING.md says which figures came this way.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

STATS = Path(__file__).resolve().parents[1] / "mutants" / "mutmut-stats.json"


@dataclass(frozen=True)
class Focus:
    """The functions whose mangled names start with one of `modules` keep the tests that start with
    one of `test_files` and hold none of the words in `left_out`."""

    modules: tuple[str, ...]
    test_files: tuple[str, ...]
    left_out: tuple[str, ...] = ()

    def keeps(self, test: str) -> bool:
        return test.startswith(self.test_files) and not any(word in test for word in self.left_out)


FOCUSES = {
    # SQLite unit tests of the store: no page test, no PostgreSQL variant
    "annotation": Focus(
        tuple(f"foil_studio.data.store.{m}." for m in ("annotators", "batches", "labels", "crowd")),
        (
            "tests/test_annotation.py",
            "tests/test_integrity.py",
            "tests/test_tokens_and_copies.py",
            "tests/test_store.py",
        ),
        (
            "postgresql",
            "admin_dashboard",
            "admin_batches_page",
            "annotator_flow",
            "crowd_session",
            "from_the_page",
            "sees_only_their_own_queue",
            "leads_to_the_next_one",
            "bad_participant_id",
        ),
    ),
    # the statistics: their reference and estimator tests, not the demo-store tests of
    # `test_health.py` that reach them through `annotate.health` (seconds each, for the demo store)
    # nor the coverage simulation (`test_health_coverage.py`: 200 tests, 35 s a pass, and a
    # bisection mutant that loops hangs for twice that before it counts as a timeout)
    "analysis-health": Focus(
        ("foil_studio.analysis.health.",), ("tests/test_health_reference.py", "tests/test_health_estimators.py")
    ),
    # the store side: the card's text and the report on a tiny store made in memory (seconds a
    # mutant), not the demo-store tests of `test_health.py` (each session builds the demo first)
    "annotate-health": Focus(("foil_studio.annotate.health.",), ("tests/test_health_report_text.py",)),
}


def main(names: list[str]) -> None:
    unknown = [n for n in names if n not in FOCUSES]
    if unknown:
        sys.exit(f"unknown focus {unknown}; expected some of {list(FOCUSES)}")
    stats = json.loads(STATS.read_text())
    mapping = stats["tests_by_mangled_function_name"]
    for name in names or list(FOCUSES):
        focus = FOCUSES[name]
        before = after = 0
        for function, tests in mapping.items():
            if function.startswith(focus.modules):
                kept = sorted(t for t in tests if focus.keeps(t))
                before, after = before + len(tests), after + len(kept)
                mapping[function] = kept
        print(f"{'/'.join(focus.modules)}*: {before} test runs per pass over its functions, {after} kept")
    STATS.write_text(json.dumps(stats))


if __name__ == "__main__":
    main(sys.argv[1:])
