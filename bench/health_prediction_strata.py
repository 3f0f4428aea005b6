"""Sampling stratified by the prediction against today's random stratified draw, at equal budget, as a
Markdown table (TESTING.md, "Sampling stratified by the prediction").

    .venv/bin/python bench/health_prediction_strata.py            # --reps N (default 400)

Seven categories of 500 items, 40 answers each (280 in all), drawn in one batch:
* **random**: each category's 40 at random (`health next --strategy neyman`, proportional here);
* **by prediction**: each category cut into bins of the prediction and its 40 allocated over them
  (`analysis.prediction_strata`: two per bin, the rest by Neyman's rule on the bins' mean
  predictions), drawn at random within each bin, estimated with the bins as strata.
Both cite the narrower of the plain and the prediction-powered interval of the overall invalid share,
as the report does. Worlds: `WORLDS` (each a share and a predictor); VALSE's real votes (per piece
the authors' outcome, one of its three votes as the predictor: the sample is 40 per piece there).
Printed: coverage of each cited interval, the mean cited width of each, and their ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: its packages and tests

from foil_studio.analysis.prediction_powered import powered_stratified_share
from foil_studio.analysis.prediction_strata import allocate_bins, bin_of, cut_points, planned_share

CATEGORIES, SIZE, PER_CATEGORY = 7, 500, 40

World = Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray]]  # -> outcomes, predictions


def concentrated(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """5% invalid; the predictor's top 15% of items hold 80% of the invalid ones (it ranks, not calibrated)."""
    y = np.zeros(SIZE)
    invalid, top = round(0.05 * SIZE), round(0.15 * SIZE)
    y[: round(0.8 * invalid)] = 1  # the top's invalid items
    y[top : top + invalid - round(0.8 * invalid)] = 1  # the rest's
    f = np.where(np.arange(SIZE) < top, rng.uniform(0.2, 1.0, SIZE), rng.uniform(0.0, 0.2, SIZE))
    order = rng.permutation(SIZE)
    return y[order], f[order]


def labels_30(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """30% invalid; a 0/1 label agreeing with people on 90% of items."""
    y = (rng.random(SIZE) < 0.3).astype(float)
    return y, np.where(rng.random(SIZE) < 0.9, y, 1 - y)


def useless(share: float) -> World:
    def world(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return (rng.random(SIZE) < share).astype(float), rng.random(SIZE)

    return world


WORLDS: dict[str, World] = {
    "5%, top 15% hold 80%": concentrated,
    "30%, 0/1 label agreeing 90%": labels_30,
    "5%, useless (uniform)": useless(0.05),
    "30%, useless (uniform)": useless(0.30),
}


def random_draw(y: np.ndarray, f: np.ndarray, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One stratum: n items at random."""
    return {"": rng.choice(len(y), n, replace=False)}


def binned_draw(y: np.ndarray, f: np.ndarray, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The category's bins, n allocated over them in one draw (no answers yet: the planned shares are
    the mean predictions), drawn at random within each."""
    return _by_bins(y, f, n, np.array([], dtype=int), rng)


def two_phase_draw(y: np.ndarray, f: np.ndarray, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Half of n at random and answered (`health sample`), then the other half by prediction (`health
    next --strategy predicted`), its bins' planned shares from those answers; all of it post-stratified."""
    first = rng.choice(len(y), n // 2, replace=False)
    return _by_bins(y, f, n - n // 2, first, rng)


def _by_bins(
    y: np.ndarray, f: np.ndarray, n: int, first: np.ndarray, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    bins = bin_of(f, cut_points(f))
    members = {b: np.flatnonzero(bins == b) for b in np.unique(bins)}
    taken = {b: int(np.isin(m, first).sum()) for b, m in members.items()}
    shares = {
        b: planned_share(int(y[np.intersect1d(m, first)].sum()), taken[b], float(f[m].mean()))
        for b, m in members.items()
    }
    wanted = allocate_bins({b: len(m) for b, m in members.items()}, shares, n, taken)
    drawn = {}
    for b, m in members.items():
        left = np.setdiff1d(m, first)
        new = rng.choice(left, wanted[b], replace=False) if wanted[b] else np.array([], dtype=int)
        drawn[str(b)] = np.concatenate([np.intersect1d(m, first), new]).astype(int)
    return drawn


def cited_width(
    categories: list[tuple[np.ndarray, np.ndarray]], per_category: list[int], draw, rng: np.random.Generator
) -> tuple[float, bool]:
    """The cited overall interval's width (the narrower of plain and powered) and whether it covers."""
    outcomes, predicted, population = {}, {}, {}
    for c, ((y, f), n) in enumerate(zip(categories, per_category, strict=True)):
        bins = bin_of(f, cut_points(f)) if draw is not random_draw else np.zeros(len(f), int)
        for key, drawn in draw(y, f, n, rng).items():
            stratum = f"{c}:{key}"
            members = np.flatnonzero(bins == int(key)) if key else np.arange(len(y))
            outcomes[stratum], predicted[stratum], population[stratum] = y[drawn], f[drawn], f[members]
    found = powered_stratified_share(outcomes, predicted, population)
    truth = float(np.mean(np.concatenate([y for y, _ in categories])))
    return found.share.high - found.share.low, bool(found.share.low <= truth <= found.share.high)


def compare(make: Callable[[np.random.Generator], list[tuple[np.ndarray, np.ndarray]]], per, reps: int, seed: int):
    rng = np.random.default_rng(seed)
    draws = {"random": random_draw, "by prediction": binned_draw, "half random, half by prediction": two_phase_draw}
    widths, covered = {name: [] for name in draws}, dict.fromkeys(draws, 0)
    for _ in range(reps):
        categories = make(rng)
        for name, draw in draws.items():
            width, held = cited_width(categories, per(categories), draw, rng)
            widths[name].append(width)
            covered[name] += held
    return {name: (covered[name] / reps, float(np.mean(w))) for name, w in widths.items()}


def valse_pieces() -> list[tuple[np.ndarray, np.ndarray]]:
    """VALSE's pieces: each foil's outcome (1: not valid, fewer than 2 of 3 workers chose the caption)
    and one of its three votes at random as the predictor (`health_ppi_coverage.valse_votes`)."""
    from bench.health_ppi_coverage import VALSE, valse_votes

    return list(valse_votes(VALSE).values())


def table(reps: int) -> str:
    lines = [
        "| world | random: coverage, width | by prediction in one batch: coverage, width, ratio "
        "| half random, half by prediction: coverage, width, ratio |",
        "|---|---|---|---|",
    ]
    rows = {name: ((lambda rng, w=world: [w(rng) for _ in range(CATEGORIES)]), None) for name, world in WORLDS.items()}
    pieces = valse_pieces()
    rows["VALSE, one vote as predictor"] = (lambda rng: pieces, None)
    for number, (name, (make, _)) in enumerate(rows.items()):
        found = compare(make, lambda cats: [min(PER_CATEGORY, len(y)) for y, _ in cats], reps, seed=number)
        (rc, rw), (pc, pw), (tc, tw) = found.values()
        lines.append(
            f"| {name} | {rc:.3f}, {100 * rw:.2f} | {pc:.3f}, {100 * pw:.2f}, {pw / rw:.2f} "
            f"| {tc:.3f}, {100 * tw:.2f}, {tw / rw:.2f} |"
        )
        print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    args = parser.parse_args()
    started = time.perf_counter()
    print(table(args.reps))
    print(f"\n{args.reps} repetitions per world, widths in percentage points, {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
