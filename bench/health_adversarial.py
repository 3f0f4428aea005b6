"""Coverage of the cited invalid-share intervals under predictors the method was not designed on, as
Markdown tables (TESTING.md, "Benchmark health under any predictor").

    .venv/bin/python bench/health_adversarial.py                 # --reps N per cell (default 1000)
    .venv/bin/python bench/health_adversarial.py --reps 200 --predictors miscalibrated constant
    .venv/bin/python bench/health_adversarial.py --valse --reps 1000   # issue 52's case on VALSE's votes

A world is four categories of 500 items whose invalid shares are 0.5, 0.75, 1.25 and 1.5 times the
cell's share (so the overall share is the cell's), n/N of each drawn at random without replacement
(at least 3 items; 1 is a census). Every repetition draws a new world and a new sample. For each
predictor (`PREDICTORS`) and cell: the coverage of the cited interval (the prediction-powered one
where it is narrower, else the plain one) for each category (pooled over the four) and overall,
the Monte-Carlo error of the overall coverage (one standard error at the observed coverage), and
the cited width over the plain width.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout

from foil_studio.analysis.prediction_powered import powered_stratified_share, powered_stratum_share

CATEGORIES, CATEGORY_SIZE = 4, 500
SHARE_FACTORS = (0.5, 0.75, 1.25, 1.5)
SHARES = (0.01, 0.02, 0.05, 0.10, 0.30)
FRACTIONS = (0.02, 0.08, 0.3, 0.8, 1.0)

Predictor = Callable[[np.ndarray, int, np.random.Generator], np.ndarray]


def _useless(y: np.ndarray, category: int, rng: np.random.Generator) -> np.ndarray:
    return rng.random(len(y))


def _constant(y: np.ndarray, category: int, rng: np.random.Generator) -> np.ndarray:
    return np.full(len(y), 0.3)


def _miscalibrated(y: np.ndarray, category: int, rng: np.random.Generator) -> np.ndarray:
    """Ranks every item perfectly, but 0.8 where invalid and 0.6 where valid (issue 52's predictor)."""
    return np.where(y == 1, 0.8, 0.6)


def _anti_correlated(y: np.ndarray, category: int, rng: np.random.Generator) -> np.ndarray:
    return np.clip(np.where(y == 1, 0.1, 0.6) + rng.normal(0, 0.05, len(y)), 0, 1)


def _labels(y: np.ndarray, category: int, rng: np.random.Generator) -> np.ndarray:
    """A 0/1 label agreeing with people on 90% of items."""
    return np.where(rng.random(len(y)) < 0.9, y, 1 - y)


def _caption_length(y: np.ndarray, category: int, rng: np.random.Generator) -> np.ndarray:
    """Depends only on a caption's length (whole words, longer in later categories), not on y."""
    return np.minimum(rng.poisson(8 + 3 * category, len(y)) / 30, 1.0)


def _good_then_wrong(y: np.ndarray, category: int, rng: np.random.Generator) -> np.ndarray:
    """Sharp and right in the first two categories, sharp and wrong in the last two."""
    right = np.where(y == 1, 0.9, 0.05) + rng.normal(0, 0.03, len(y))
    return np.clip(right if category < 2 else 0.95 - right, 0, 1)


def _calibrated(y: np.ndarray, category: int, rng: np.random.Generator) -> np.ndarray:
    """The posterior P(invalid | z) of a score z ~ N(2 y, 1) at a 10% prior: a good, honest predictor."""
    z = rng.normal(2.0 * y, 1.0)
    odds = 0.1 / 0.9 * np.exp(2.0 * z - 2.0)
    return odds / (1 + odds)


PREDICTORS: dict[str, Predictor] = {
    "useless": _useless,
    "constant": _constant,
    "miscalibrated": _miscalibrated,
    "anti-correlated": _anti_correlated,
    "0/1 labels": _labels,
    "caption length": _caption_length,
    "good then wrong": _good_then_wrong,
    "calibrated": _calibrated,
}


def cell(predictor: Predictor, share: float, fraction: float, reps: int, seed: int) -> dict[str, float]:
    """Coverage of the cited intervals per category (pooled) and overall, and the cited over the plain width."""
    rng = np.random.default_rng(seed)
    n = max(3, round(fraction * CATEGORY_SIZE))
    per_category = overall = 0
    ratios = []
    for _ in range(reps):
        ys, fs, wholes, truths = {}, {}, {}, []
        for c in range(CATEGORIES):
            y = (rng.random(CATEGORY_SIZE) < share * SHARE_FACTORS[c]).astype(float)
            f = predictor(y, c, rng)
            drawn = rng.choice(CATEGORY_SIZE, n, replace=False)
            ys[c], fs[c], wholes[c] = y[drawn], f[drawn], f
            found = powered_stratum_share(y[drawn], f[drawn], f).share
            per_category += found.low <= y.mean() <= found.high
            truths.append(y.mean())
        both = powered_stratified_share(ys, fs, wholes)
        truth = float(np.mean(truths))
        overall += both.share.low <= truth <= both.share.high
        plain = both.plain.high - both.plain.low
        ratios.append((both.share.high - both.share.low) / plain if plain > 0 else 1.0)
    per_category_coverage, overall_coverage = per_category / (reps * CATEGORIES), overall / reps
    return {
        "category": per_category_coverage,
        "overall": overall_coverage,
        "error": float(np.sqrt(max(overall_coverage * (1 - overall_coverage), 1 / reps) / reps)),
        "width": float(np.mean(ratios)),
    }


def table(names: list[str], reps: int, fractions: tuple[float, ...] = FRACTIONS) -> str:
    lines = [
        "| predictor | invalid share | n/N | per category | overall | MC error | cited / plain width |",
        "|---|---|---|---|---|---|---|",
    ]
    for number, name in enumerate(names):
        for share in SHARES:
            for fraction in fractions:
                seed = hash((number, share, fraction)) % 2**32
                row = cell(PREDICTORS[name], share, fraction, reps, seed)
                lines.append(
                    f"| {name} | {share:.0%} | {fraction} | {row['category']:.3f} | {row['overall']:.3f} "
                    f"| {row['error']:.3f} | {row['width']:.2f} |"
                )
                print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def valse_table(reps: int, per_piece: int = 40) -> str:
    """Issue 52's case on VALSE's real votes: a foil is invalid where at least 2 of its 3 workers said the
    foil describes the image (6.4% overall); the predictor ranks every item perfectly but says 0.8 where
    invalid and 0.6 where valid. 40 items per piece, `reps` samples: coverage of the cited intervals."""
    from foil_studio.data.formats.valse import parse_valse
    from tests.conftest import FIXTURES

    pieces: dict[str, list[float]] = {}
    for item in parse_valse(FIXTURES / "valse" / "data").items:
        votes = item.meta.get("votes")
        if votes:
            pieces.setdefault(item.category, []).append(float(votes["foil"] >= 2))
    outcomes = {piece: np.array(y) for piece, y in sorted(pieces.items())}
    predicted = {piece: np.where(y == 1, 0.8, 0.6) for piece, y in outcomes.items()}
    truth = float(np.mean(np.concatenate(list(outcomes.values()))))
    rng = np.random.default_rng(1)
    held = dict.fromkeys([*outcomes, "all"], 0)
    for _ in range(reps):
        drawn = {p: rng.choice(len(y), min(per_piece, len(y)), replace=False) for p, y in outcomes.items()}
        ys = {p: outcomes[p][d] for p, d in drawn.items()}
        fs = {p: predicted[p][d] for p, d in drawn.items()}
        overall = powered_stratified_share(ys, fs, predicted).share
        held["all"] += overall.low <= truth <= overall.high
        for p in outcomes:
            one = powered_stratum_share(ys[p], fs[p], predicted[p]).share
            held[p] += one.low <= outcomes[p].mean() <= one.high
    lines = ["| piece | items | invalid | coverage of the cited interval |", "|---|---|---|---|"]
    for p, y in outcomes.items():
        lines.append(f"| {p} | {len(y)} | {y.mean():.3f} | {held[p] / reps:.3f} |")
    lines.append(f"| all | {sum(len(y) for y in outcomes.values())} | {truth:.4f} | {held['all'] / reps:.3f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--predictors", nargs="*", default=list(PREDICTORS), choices=list(PREDICTORS))
    parser.add_argument("--valse", action="store_true", help="only VALSE's pieces with issue 52's predictor")
    parser.add_argument("--fractions", nargs="*", type=float, default=FRACTIONS, help="the n/N of the grid's cells")
    args = parser.parse_args()
    started = time.perf_counter()
    if args.valse:
        print(valse_table(args.reps))
        print(f"\n{args.reps} samples, {time.perf_counter() - started:.0f} s")
        return
    print(table(args.predictors, args.reps, tuple(args.fractions)))
    print(f"\n{args.reps} repetitions per cell, {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
