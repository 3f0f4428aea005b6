"""Benchmark health speed: estimating and bootstrapping on 100,000 decided items, against a 2 s budget.

    .venv/bin/python bench/bench_health.py      # --items 100000 --strata 10 --runs 5 --n-boot 1000

Synthetic decided items (the statistics see only counts and arrays, so no store is needed):
`--strata` categories of 20,000 to 200,000 items each, `--items` of them drawn and decided,
spread over the strata in proportion to their sizes, each stratum with its own invalid share
(1% to 40%); `--runs` runs with their own accuracies and a few half-counted ties. Timed, once each,
in one process: `stratified_share` over the strata (with each stratum's `stratum_share`), and
`valid_accuracy` of all runs together with `--n-boot` resamples and the published order (its
intervals, paired differences and order flips). Figures are seconds of one run on one machine,
with their ratio to the budget.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from foil_studio.analysis.health import stratified_share, stratum_share, valid_accuracy

BUDGET = 2.0  # seconds: the health page recomputes these on every visit


def say(line: str) -> None:
    """Print a result line at once."""
    print(line, flush=True)


def decided_items(n_items: int, n_strata: int, n_runs: int, seed: int = 0) -> dict:
    """Strata sizes, and per decided item its stratum, validity and each run's credit."""
    rng = np.random.default_rng(seed)
    names = [f"category_{i}" for i in range(n_strata)]
    sizes = rng.integers(20_000, 200_000, n_strata)
    drawn = np.floor(n_items * sizes / sizes.sum()).astype(int)
    drawn[: n_items - drawn.sum()] += 1  # exactly n_items in all
    shares = rng.uniform(0.01, 0.4, n_strata)
    strata = np.repeat(names, drawn)
    valid = rng.random(n_items) >= np.repeat(shares, drawn)
    accuracy = rng.uniform(0.55, 0.85, n_runs)
    credits = (rng.random((n_items, n_runs)) < np.where(valid[:, None], accuracy, 0.4)).astype(float)
    credits[rng.random((n_items, n_runs)) < 0.02] = 0.5  # half-counted ties
    return {
        "sizes": dict(zip(names, sizes.tolist())),
        "drawn": drawn,
        "strata": strata,
        "valid": valid,
        "credits": credits,
        "runs": [f"run_{r}" for r in range(n_runs)],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--strata", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--n-boot", type=int, default=1000)
    args = parser.parse_args()
    data = decided_items(args.items, args.strata, args.runs)
    names = list(data["sizes"])
    invalid = [int((~data["valid"][data["strata"] == name]).sum()) for name in names]
    decided, sizes = data["drawn"].tolist(), list(data["sizes"].values())
    say(
        f"items {args.items} decided of {sum(sizes)} in {args.strata} strata ({sum(invalid)} invalid), "
        f"{args.runs} runs, {args.n_boot} bootstrap resamples"
    )

    started = time.perf_counter()
    per_stratum = [stratum_share(x, n, size) for x, n, size in zip(invalid, decided, sizes)]
    overall = stratified_share(invalid, decided, sizes)
    share_seconds = time.perf_counter() - started
    say(
        f"invalid share: {share_seconds:.4f} s (the {len(per_stratum)} strata and the whole; "
        f"{overall.estimate:.4f}, 95% interval {overall.low:.4f} to {overall.high:.4f})"
    )

    published = [float(data["credits"][data["valid"], r].mean()) for r in range(args.runs)]
    started = time.perf_counter()
    board = valid_accuracy(
        data["strata"],
        data["valid"],
        data["credits"],
        data["sizes"],
        data["runs"],
        published=published,
        n_boot=args.n_boot,
    )
    accuracy_seconds = time.perf_counter() - started
    widest = float(np.max(board.high - board.low))
    say(
        f"accuracy on valid items: {accuracy_seconds:.3f} s ({args.runs} runs, {len(board.difference)} paired "
        f"differences and order flips; widest interval {widest:.4f})"
    )

    total = share_seconds + accuracy_seconds
    say(
        f"estimate and bootstrap: {total:.3f} s = {100 * total / BUDGET:.0f}% of the {BUDGET:g} s budget "
        f"({BUDGET / total:.1f}x under it)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
