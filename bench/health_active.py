"""Active sampling against random sampling at the same budget, by simulation, as a Markdown table.

    .venv/bin/python bench/health_active.py              # --reps N: N repetitions per condition

One category of N = 2,000 items. A first random batch of 40, then 60 more items: drawn at random
(the two batches one random sample of 100, estimated prediction-powered as `health report` does)
or actively (what `health next --strategy active` drew before it was retired during 0.10.0: each
item on its own coin, more likely where the predictions are unsure; the report's round-by-round
estimate). Both use the same predictions on
every item. Worlds:

* `calibrated q`: f = logistic(z + q (2y - 1) + offset), z standard normal: a calibrated-looking
  score whose quality grows with q (q = 0: useless);
* `mostly sure`: 80% of items predicted 0.02 or 0.98 and right, 20% near 0.5 where every error
  lies (a judge that knows when it does not know).

For each: coverage of the 95% interval of each design and the mean width of the active one over
the random one's.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout

from foil_studio.analysis.active_sampling import Round, active_inclusion, rounds_estimate, stratum_share, uncertainty

REPS = 400
SIZE, FIRST, NEXT = 2000, 40, 60
World = Callable[[np.random.Generator, float], tuple[np.ndarray, np.ndarray]]


def calibrated(quality: float) -> World:
    def make(rng: np.random.Generator, share: float) -> tuple[np.ndarray, np.ndarray]:
        truth = (rng.random(SIZE) < share).astype(float)
        score = rng.normal(0, 1, SIZE) + quality * (2 * truth - 1) + np.log(share / (1 - share))
        return truth, 1 / (1 + np.exp(-score))

    return make


def mostly_sure(rng: np.random.Generator, share: float) -> tuple[np.ndarray, np.ndarray]:
    truth = (rng.random(SIZE) < share).astype(float)
    unsure = rng.random(SIZE) < 0.2
    predicted = np.where(truth == 1, 0.98, 0.02)
    predicted[unsure] = np.clip(rng.normal(0.5, 0.1, unsure.sum()), 0.05, 0.95)
    return truth, predicted


WORLDS: dict[str, World] = {
    "calibrated q=0 (useless)": calibrated(0.0),
    "calibrated q=1": calibrated(1.0),
    "calibrated q=2": calibrated(2.0),
    "mostly sure": mostly_sure,
}


def one_condition(world: World, share: float, reps: int, seed: int = 0) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    hits = {"random": 0, "active": 0}
    widths: dict[str, list[float]] = {"random": [], "active": []}
    for _ in range(reps):
        truth, predicted = world(rng, share)
        order = rng.permutation(SIZE)
        first, more = order[:FIRST], order[FIRST : FIRST + NEXT]
        union = np.concatenate([first, more])
        random_design = [Round(union, np.full(len(union), len(union) / SIZE), truth[union])]
        rest = order[FIRST:]
        inclusion = active_inclusion(uncertainty(predicted[rest]), NEXT)
        picked = rng.random(len(rest)) < inclusion
        active_design = [
            Round(first, np.full(FIRST, FIRST / SIZE), truth[first]),
            Round(rest[picked], inclusion[picked], truth[rest[picked]]),
        ]
        for name, design in (("random", random_design), ("active", active_design)):
            found = stratum_share(rounds_estimate(design, predicted), SIZE)
            hits[name] += found.low <= truth.mean() <= found.high
            widths[name].append(found.high - found.low)
    return {
        "random": hits["random"] / reps,
        "active": hits["active"] / reps,
        "ratio": float(np.mean(widths["active"]) / np.mean(widths["random"])),
    }


def table(reps: int) -> str:
    lines = [
        "| world | invalid share | coverage, random | coverage, active | width active / random |",
        "|---|---|---|---|---|",
    ]
    for name, world in WORLDS.items():
        for share in (0.1, 0.3):
            row = one_condition(world, share, reps)
            lines.append(f"| {name} | {share} | {row['random']:.3f} | {row['active']:.3f} | {row['ratio']:.2f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=REPS, help=f"repetitions per condition (default {REPS})")
    args = parser.parse_args()
    if args.reps < 1:
        parser.error(f"--reps must be at least 1 (got {args.reps})")
    started = time.perf_counter()
    print(table(args.reps))
    print(f"\n{args.reps} repetitions per condition, {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
