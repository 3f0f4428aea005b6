"""Prediction-powered benchmark health by simulation and on VALSE's real votes, as Markdown tables.

    .venv/bin/python bench/health_ppi_coverage.py              # --reps N: N repetitions per condition

(a) One category's invalid share on synthetic populations (the grid of
`tests/test_prediction_powered.py`, imported from it and seeded, so the table is the one its tests
sample): coverage of the reported interval, of the plain one, the reported width over the plain
width, and how often the prediction-powered interval was the one reported.

(b) A run's accuracy on valid items (two categories of N and N/2 items, 80% or 95% valid, the run
right on 75% of valid and 40% of other items, a 0/1 prediction of validity agreeing with people
with the given probability, n items drawn per category): coverage and mean width.

(b') The overall share of seven categories of 500 items, 40 answers each, with a 0/1 label of the
given agreement or a calibrated probability (the posterior of a score N(strength * y, 1)): coverage,
the reported width over the plain width, and the width with half the answers (20 per category) over
the plain width with all of them.

(b'') The paired difference of two runs' accuracy on valid items in the same two categories: run a
right on 75% of valid and 40% of other items, run b on 70% and 55% (b leads on all items, a on
valid ones), their credits paired: coverage of a - b and the mean width.

(c) VALSE's own crowd votes: the human outcome of a foil is the authors' rule, "not valid" (fewer
than 2 of 3 workers chose the caption); the predictor on every item is one of its three votes,
drawn at random (a single cheap pass). Forty items per piece are drawn, `--reps` times: each
piece's coverage and width ratio, and the overall share's.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: its packages and tests

from foil_studio.analysis.prediction_powered import (
    powered_stratified_share,
    powered_stratum_share,
)
from foil_studio.data.formats.valse import parse_valse
from tests.conftest import FIXTURES
from tests.test_prediction_powered import CONDITIONS, REPS, accuracy_on_a_draw, coverage_row, difference_row

VALSE = FIXTURES / "valse" / "data"


def grid_table(reps: int) -> str:
    lines = [
        "| N | invalid share | agreement | n/N | coverage | plain coverage | width / plain | powered used |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for size, share, agreement, drawn in CONDITIONS:
        row = coverage_row(size, share, agreement, drawn, reps)
        lines.append(
            f"| {size} | {share} | {agreement} | {drawn} | {row['coverage']:.3f} | {row['plain_coverage']:.3f} "
            f"| {row['width_ratio']:.2f} | {row['used']:.2f} |"
        )
    return "\n".join(lines)


STRATA, STRATUM_SIZE, PER_STRATUM = 7, 500, 40  # a health sample: seven categories of 500, 40 answers each


def predictor(output: str, strength: float, truth: np.ndarray, share: float, rng: np.random.Generator) -> np.ndarray:
    """A 0/1 label agreeing with people with probability `strength`, or a calibrated probability:
    the posterior P(invalid | z) of a score z ~ N(strength * y, 1)."""
    if output == "0/1 label":
        return np.where(rng.random(len(truth)) < strength, truth, 1 - truth)
    z = rng.normal(strength * truth, 1.0)
    odds = share / (1 - share) * np.exp(strength * z - strength**2 / 2)
    return odds / (1 + odds)


def budget_row(output: str, strength: float, share: float, reps: int) -> dict[str, float]:
    """The overall share of seven categories: coverage and width of the reported interval at 40 answers
    per category against the plain one, and the prediction-powered width at half the answers."""
    rng = np.random.default_rng(round(strength * 100 + share * 10))
    hits, agreed, ratios, halves = 0, [], [], []
    for _ in range(reps):
        truth = {c: (rng.random(STRATUM_SIZE) < share).astype(float) for c in range(STRATA)}
        guess = {c: predictor(output, strength, truth[c], share, rng) for c in range(STRATA)}
        widths = {}
        for n in (PER_STRATUM, PER_STRATUM // 2):
            drawn = {c: rng.choice(STRATUM_SIZE, n, replace=False) for c in range(STRATA)}
            found = powered_stratified_share(
                {c: truth[c][d] for c, d in drawn.items()}, {c: guess[c][d] for c, d in drawn.items()}, guess
            )
            widths[n] = (found.share.high - found.share.low, found.plain.high - found.plain.low)
            if n == PER_STRATUM:
                overall = np.mean([truth[c].mean() for c in range(STRATA)])
                hits += found.share.low <= overall <= found.share.high
                agreed.append(found.agreement)
        ratios.append(widths[PER_STRATUM][0] / widths[PER_STRATUM][1])
        halves.append(widths[PER_STRATUM // 2][0] / widths[PER_STRATUM][1])
    return {
        "agreement": float(np.mean(agreed)),
        "coverage": hits / reps,
        "ratio": float(np.mean(ratios)),
        "half": float(np.mean(halves)),
    }


def budget_table(reps: int) -> str:
    lines = [
        "| predictor | strength | invalid share | agreement | coverage | width / plain "
        "| half the answers: width / plain |",
        "|---|---|---|---|---|---|---|",
    ]
    for output, strengths in (("0/1 label", (0.85, 0.9)), ("probability", (2.2, 2.8))):
        for strength in strengths:
            for share in (0.1, 0.3):
                row = budget_row(output, strength, share, reps)
                lines.append(
                    f"| {output} | {strength} | {share} | {row['agreement']:.3f} | {row['coverage']:.3f} "
                    f"| {row['ratio']:.2f} | {row['half']:.2f} |"
                )
    return "\n".join(lines)


def accuracy_table(reps: int) -> str:
    lines = ["| N | valid share | agreement | n per category | coverage | mean width |", "|---|---|---|---|---|---|"]
    for size in (500, 5000):
        for valid_share in (0.8, 0.95):
            for agreement in (0.5, 0.85, 0.95):
                for n in (20, 100):
                    held, width = accuracy_row(size, valid_share, agreement, n, reps)
                    lines.append(f"| {size} | {valid_share} | {agreement} | {n} | {held:.3f} | {width:.3f} |")
    return "\n".join(lines)


def accuracy_row(size: int, valid_share: float, agreement: float, n: int, reps: int) -> tuple[float, float]:
    rng = np.random.default_rng(size + n)
    world = {}
    for name, items in (("a", size), ("b", size // 2)):
        valid = (rng.random(items) < valid_share).astype(float)
        credit = (rng.random(items) < np.where(valid == 1, 0.75, 0.4)).astype(float)[:, None]
        world[name] = (valid, credit, np.where(rng.random(items) < agreement, valid, 1 - valid))
    truth = sum(float(v @ k[:, 0]) for v, k, _ in world.values()) / sum(v.sum() for v, _, _ in world.values())
    held, width = 0, 0.0
    for _ in range(reps):
        found = accuracy_on_a_draw(world, n, ["run"], rng)
        held += found.low[0] <= truth <= found.high[0]
        width += float(found.high[0] - found.low[0])
    return held / reps, width / reps


def difference_table(reps: int) -> str:
    lines = [
        "| N | valid share | agreement | n per category | true a - b | coverage | mean width |",
        "|---|---|---|---|---|---|---|",
    ]
    for size in (500, 5000):
        for valid_share in (0.8, 0.95):
            for agreement in (0.5, 0.85, 0.95):
                for n in (20, 100):
                    row = difference_row(size, valid_share, agreement, n, reps)
                    lines.append(
                        f"| {size} | {valid_share} | {agreement} | {n} | {row['truth']:.3f} | {row['coverage']:.3f} "
                        f"| {row['width']:.3f} |"
                    )
    return "\n".join(lines)


def valse_votes(folder: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per piece: every foil's outcome (1: not valid) and one random vote of its three (1: not the caption)."""
    rng = np.random.default_rng(0)
    pieces: dict[str, tuple[list[float], list[float]]] = {}
    for item in parse_valse(folder).items:
        votes = item.meta.get("votes")
        if not votes:
            continue
        outcome, vote = pieces.setdefault(item.category, ([], []))
        outcome.append(float(votes["caption"] < 2))
        three = ["caption"] * votes["caption"] + ["other"] * (3 - votes["caption"])
        vote.append(float(three[rng.integers(3)] != "caption"))
    return {piece: (np.array(o), np.array(v)) for piece, (o, v) in sorted(pieces.items())}


def valse_table(reps: int, per_piece: int = 40) -> str:
    pieces = valse_votes(VALSE)
    rng = np.random.default_rng(1)
    held = {piece: 0 for piece in [*pieces, "all"]}
    width = {piece: [0.0, 0.0] for piece in held}
    agreement = {piece: float(np.mean(o == v)) for piece, (o, v) in pieces.items()}
    for _ in range(reps):
        drawn = {piece: rng.choice(len(o), min(per_piece, len(o)), replace=False) for piece, (o, v) in pieces.items()}
        found = {piece: powered_stratum_share(o[drawn[piece]], v[drawn[piece]], v) for piece, (o, v) in pieces.items()}
        found["all"] = powered_stratified_share(
            {p: o[drawn[p]] for p, (o, v) in pieces.items()},
            {p: v[drawn[p]] for p, (o, v) in pieces.items()},
            {p: v for p, (o, v) in pieces.items()},
        )
        for piece, result in found.items():
            truth = pieces[piece][0].mean() if piece != "all" else _overall(pieces)
            held[piece] += result.share.low <= truth <= result.share.high
            width[piece][0] += result.share.high - result.share.low
            width[piece][1] += result.plain.high - result.plain.low
    lines = [
        "| piece | items | not valid | one vote agrees | coverage | width / plain |",
        "|---|---|---|---|---|---|",
    ]
    for piece in held:
        outcomes = np.concatenate([o for o, v in pieces.values()]) if piece == "all" else pieces[piece][0]
        agrees = (
            float(np.mean(np.concatenate([o == v for o, v in pieces.values()]))) if piece == "all" else agreement[piece]
        )
        lines.append(
            f"| {piece} | {len(outcomes)} | {outcomes.mean():.3f} | {agrees:.3f} | {held[piece] / reps:.3f} "
            f"| {width[piece][0] / width[piece][1]:.2f} |"
        )
    return "\n".join(lines)


def _overall(pieces: dict[str, tuple[np.ndarray, np.ndarray]]) -> float:
    return float(np.mean(np.concatenate([o for o, v in pieces.values()])))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=REPS, help=f"repetitions per condition (default {REPS})")
    args = parser.parse_args()
    started = time.perf_counter()
    print(grid_table(args.reps))
    print()
    print(budget_table(args.reps))
    print()
    print(accuracy_table(args.reps))
    print()
    print(difference_table(args.reps))
    print()
    if VALSE.is_dir():
        print(valse_table(args.reps))
    else:
        print(f"(VALSE's files not found at {VALSE}: its table is left out)")
    print(f"\n{time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
