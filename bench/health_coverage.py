"""Benchmark health by simulation: the coverage of every interval of `analysis.health` on
synthetic finite populations of known invalid share, as a Markdown table.

    .venv/bin/python bench/health_coverage.py            # --reps N: N repetitions per condition (a quick look)

The same simulation as `tests/test_health_coverage.py` (imported from it, seeded, so the table is
the one the test asserts on): (a) one stratum's invalid share, (b) the overall share of four
strata, (c) a run's accuracy on the valid items, then (d) the Horvitz-Thompson check. Coverage is
the share of repetitions whose 95% interval holds the population's true value; the mean width
says what that coverage costs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: its packages and tests

from tests.test_health_coverage import conditions, coverage, horvitz_thompson_check, markdown_table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, help="repetitions per condition (default: the test's, REPS)")
    args = parser.parse_args()
    started = time.perf_counter()
    print(markdown_table([coverage(condition, args.reps) for condition in conditions()]))
    found = horvitz_thompson_check(args.reps or 2000)
    print(
        f"\nHorvitz-Thompson, {found['reps']} Poisson samples of about {found['drawn']:.0f} items: mean estimate "
        f"{found['mean']:.1f} against a true total of {found['truth']:.0f} (Monte-Carlo standard error "
        f"{found['se']:.1f}, {abs(found['mean'] - found['truth']) / found['se']:.1f} standard errors off); "
        f"unweighted {found['naive']:.1f}"
    )
    print(f"\n{time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
