"""Sampling stratified by the prediction against today's random stratified draw, at equal budget, as
Markdown tables (TESTING.md, "Sampling stratified by the prediction").

    .venv/bin/python bench/health_prediction_strata.py              # --reps N (default 400; grid: 200)
    .venv/bin/python bench/health_prediction_strata.py --grid       # the coverage grid only (--widths: the table)
    .venv/bin/python bench/health_prediction_strata.py --attainable # what the width could be (below)

Seven categories of 500 items, n answers in each, drawn three ways:
* **random**: n at random per category (`health next --strategy neyman`, proportional here);
* **by prediction**: n allocated over the category's bins of the prediction in one batch
  (`analysis.prediction_strata`: the bins planned from their mean predictions);
* **half random, half by prediction**: n / 2 at random and answered (`health sample`), then n / 2
  by prediction (`health next --strategy predicted`) with the bins cut only where the predictions
  rank those answers better than chance, all of it post-stratified.
Each cites what the report cites: the narrower of the plain interval (`health.stratified_share`, the
bins as strata with their edge weights) and the prediction-powered one (`prediction_powered` over the
same strata). Table 1: worlds built for the question (`WORLDS`) and VALSE's real votes (one of its
three votes as the predictor; the authors' outcome), n per category (`--per-category`, default 40):
coverage and mean width of each, and the ratio to random. Table 2 (`--grid`): coverage of the cited
interval per category and overall for the predictors of `health_adversarial.py` at invalid shares
1-30% and n/N 0.02 to a census (and, named in `--predictors` only, `confident_misses`). Table 3
(`--attainable`): in the concentrated world, the width the same draws would give with the bins'
variances pooled over the categories' like bins, and with their true variances (an oracle), to
separate what the plan costs from what the variance estimate costs.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: its packages and tests

from bench.health_adversarial import PREDICTORS, SHARE_FACTORS
from foil_studio.analysis import health as h
from foil_studio.analysis.health import Share
from foil_studio.analysis.prediction_powered import powered_stratified_share, powered_stratum_share
from foil_studio.analysis.prediction_strata import (
    MAX_BINS,
    MIN_PER_BIN,
    allocate_bins,
    bin_of,
    cut_points,
    edge_weights,
    ranks_better_than_chance,
)

CATEGORIES, SIZE, PER_CATEGORY = 7, 500, 40
DESIGNS = ("random", "by prediction", "half random, half by prediction")

Category = tuple[np.ndarray, np.ndarray]  # people's outcomes, the predictions
Drawn = dict[int, tuple[np.ndarray, np.ndarray]]  # bin -> its items, the drawn ones among them


def concentrated(rng: np.random.Generator) -> Category:
    """5% invalid; the predictor's top 15% of items hold 80% of the invalid ones (it ranks, not calibrated)."""
    y = np.zeros(SIZE)
    invalid, top = round(0.05 * SIZE), round(0.15 * SIZE)
    y[: round(0.8 * invalid)] = 1  # the top's invalid items
    y[top : top + invalid - round(0.8 * invalid)] = 1  # the rest's
    f = np.where(np.arange(SIZE) < top, rng.uniform(0.2, 1.0, SIZE), rng.uniform(0.0, 0.2, SIZE))
    order = rng.permutation(SIZE)
    return y[order], f[order]


def concentrated_calibrated(rng: np.random.Generator) -> Category:
    """The concentrated world with a calibrated predictor: each item's prediction its band's true share
    (1.2% in the bottom 85%, 26.7% in the top 15%) times a factor drawn from 0.8 to 1.2."""
    y, f = concentrated(rng)
    top = f >= 0.2
    share = np.where(top, y[top].mean(), y[~top].mean())
    return y, share * rng.uniform(0.8, 1.2, len(y))


def labels_30(rng: np.random.Generator) -> Category:
    """30% invalid; a 0/1 label agreeing with people on 90% of items."""
    y = (rng.random(SIZE) < 0.3).astype(float)
    return y, np.where(rng.random(SIZE) < 0.9, y, 1 - y)


def useless(share: float) -> Callable[[np.random.Generator], Category]:
    def world(rng: np.random.Generator) -> Category:
        return (rng.random(SIZE) < share).astype(float), rng.random(SIZE)

    return world


WORLDS: dict[str, Callable[[np.random.Generator], Category]] = {
    "5%, top 15% hold 80%": concentrated,
    "5%, top 15% hold 80%, calibrated": concentrated_calibrated,
    "30%, 0/1 label agreeing 90%": labels_30,
    "5%, useless (uniform)": useless(0.05),
    "30%, useless (uniform)": useless(0.30),
}


def draw(design: str, categories: list[Category], n: int, rng: np.random.Generator) -> list[Drawn]:
    """Each category's bins and the items drawn in them, by `design` (`DESIGNS`)."""
    if design == "random":
        return [{0: (np.arange(len(y)), rng.choice(len(y), min(n, len(y)), replace=False))} for y, _ in categories]
    first = [np.array([], dtype=int) for _ in categories]
    if design != "by prediction":
        first = [rng.choice(len(y), min(n // 2, len(y)), replace=False) for y, _ in categories]
    ys = np.concatenate([y[d] for (y, _), d in zip(categories, first, strict=True)])
    fs = np.concatenate([f[d] for (_, f), d in zip(categories, first, strict=True)])
    ranks = ranks_better_than_chance(ys, fs).better
    return [_by_bins(y, f, min(n, len(y)) - len(d), d, ranks, rng) for (y, f), d in zip(categories, first, strict=True)]


def _by_bins(y: np.ndarray, f: np.ndarray, n: int, first: np.ndarray, ranks: bool, rng) -> Drawn:
    """As `health next --strategy predicted` draws a category: at most n / MIN_PER_BIN bins."""
    most = min(MAX_BINS, max(1, n // MIN_PER_BIN)) if ranks else 1
    bins = bin_of(f, cut_points(f, most))
    members = {b: np.flatnonzero(bins == b) for b in np.unique(bins)}
    taken = {b: int(np.isin(m, first).sum()) for b, m in members.items()}
    means = {b: float(f[m].mean()) for b, m in members.items()}
    wanted = allocate_bins({b: len(m) for b, m in members.items()}, means, n, taken)
    drawn = {}
    for b, m in members.items():
        new = rng.choice(np.setdiff1d(m, first), wanted[b], replace=False) if wanted[b] else np.array([], int)
        drawn[int(b)] = (m, np.concatenate([np.intersect1d(m, first), new]).astype(int))
    return drawn


def cited(categories: list[Category], drawn: list[Drawn]) -> Share:
    """The narrower of the plain and the prediction-powered interval over the bins of `categories`."""
    x, n, size, pseudo, ys, fs, wholes = [], [], [], [], {}, {}, {}
    for c, ((y, f), bins) in enumerate(zip(categories, drawn, strict=True)):
        weights = edge_weights([len(m) for m, _ in bins.values()], [float(f[m].mean()) for m, _ in bins.values()])
        for (b, (members, picked)), weight in zip(bins.items(), weights, strict=True):
            x.append(float(y[picked].sum()))
            n.append(len(picked))
            size.append(len(members))
            pseudo.append(weight if len(bins) > 1 else 1.0)
            ys[f"{c}:{b}"], fs[f"{c}:{b}"], wholes[f"{c}:{b}"] = y[picked], f[picked], f[members]
    if len(categories) == 1 and len(drawn[0]) == 1:
        plain = h.stratum_share(int(x[0]), n[0], size[0])
    else:
        plain = h.stratified_share(x, n, size, pseudo=pseudo)
    if len(ys) == 1:  # one stratum: the report's own estimate of it
        powered = powered_stratum_share(*(next(iter(d.values())) for d in (ys, fs, wholes))).powered
    else:
        powered = powered_stratified_share(ys, fs, wholes).powered
    return powered if powered.high - powered.low < plain.high - plain.low else plain


def compare(make: Callable[[np.random.Generator], list[Category]], n: int, reps: int, seed: int):
    """Per design: coverage and mean width of the cited overall interval."""
    rng = np.random.default_rng(seed)
    widths = {name: [] for name in DESIGNS}
    covered = dict.fromkeys(DESIGNS, 0)
    for _ in range(reps):
        categories = make(rng)
        truth = float(np.mean(np.concatenate([y for y, _ in categories])))
        for name in DESIGNS:
            found = cited(categories, draw(name, categories, n, rng))
            widths[name].append(found.high - found.low)
            covered[name] += found.low <= truth <= found.high
    return {name: (covered[name] / reps, float(np.mean(widths[name]))) for name in DESIGNS}


def valse_pieces() -> list[Category]:
    """VALSE's pieces: each foil's outcome (1: not valid, fewer than 2 of 3 workers chose the caption)
    and one of its three votes at random as the predictor (`health_ppi_coverage.valse_votes`)."""
    from bench.health_ppi_coverage import VALSE, valse_votes

    return list(valse_votes(VALSE).values())


def noisy_copies(pieces: list[Category], rng: np.random.Generator) -> list[Category]:
    """A predictor nobody designed the method on: each piece's outcome as a 0/1 label, flipped on a share
    of its items drawn from 5-25% per piece (a judge good on some pieces, poor on others)."""
    copies = []
    for y, _ in pieces:
        error = rng.uniform(0.05, 0.25)
        copies.append((y, np.where(rng.random(len(y)) < error, 1 - y, y)))
    return copies


def width_table(reps: int, per_category: tuple[int, ...] = (PER_CATEGORY,)) -> str:
    lines = [
        "| world | answers per category | random: coverage, width | by prediction in one batch: coverage, width, "
        "ratio | half random, half by prediction: coverage, width, ratio |",
        "|---|---|---|---|---|",
    ]
    makers = {name: (lambda rng, w=world: [w(rng) for _ in range(CATEGORIES)]) for name, world in WORLDS.items()}
    pieces = valse_pieces()
    makers["VALSE, one vote as predictor"] = lambda rng: pieces
    makers["VALSE, the outcome flipped at 5-25% per piece"] = lambda rng: noisy_copies(pieces, rng)
    for number, (name, make) in enumerate(makers.items()):
        for n in per_category:
            (rc, rw), (pc, pw), (tc, tw) = compare(make, n, reps, seed=number).values()
            lines.append(
                f"| {name} | {n} | {rc:.3f}, {100 * rw:.2f} | {pc:.3f}, {100 * pw:.2f}, {pw / rw:.2f} "
                f"| {tc:.3f}, {100 * tw:.2f}, {tw / rw:.2f} |"
            )
            print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def confident_misses(y: np.ndarray, category: int, rng: np.random.Generator) -> np.ndarray:
    """Sure and wrong about a fifth of the invalid items: 0.9 on 80% of them and on 10% of the valid ones,
    0.001 on the rest (so the bin it calls clean holds invalid items its plan takes for none)."""
    hit = np.where(y == 1, rng.random(len(y)) < 0.8, rng.random(len(y)) < 0.1)
    return np.where(hit, 0.9, 0.001)


GRID_SHARES, GRID_FRACTIONS = (0.01, 0.02, 0.05, 0.10, 0.30), (0.02, 0.08, 0.3, 0.6, 0.9, 1.0)


def grid_table(reps: int, predictors: list[str] | None = None, shares=GRID_SHARES, fractions=GRID_FRACTIONS) -> str:
    """Coverage of the cited intervals of the two designs by prediction, per category and overall."""
    chosen = PREDICTORS | {"confident misses": confident_misses}
    lines = [
        "| predictor | invalid share | n/N | one batch: per category, overall | half and half: per category, overall |",
        "|---|---|---|---|---|",
    ]
    for number, (name, predictor) in enumerate(chosen.items()):
        if name not in (predictors or PREDICTORS):
            continue
        for share in shares:
            for fraction in fractions:
                rng = np.random.default_rng([number, round(share * 100), round(fraction * 100)])
                held = {d: [0, 0] for d in DESIGNS[1:]}
                for _ in range(reps):
                    categories = []
                    for c in range(4):
                        y = (rng.random(SIZE) < share * SHARE_FACTORS[c]).astype(float)
                        categories.append((y, predictor(y, c, rng)))
                    truth = float(np.mean(np.concatenate([y for y, _ in categories])))
                    for design in DESIGNS[1:]:
                        drawn = draw(design, categories, round(fraction * SIZE), rng)
                        overall = cited(categories, drawn)
                        held[design][1] += overall.low <= truth <= overall.high
                        for category, bins in zip(categories, drawn, strict=True):
                            one = cited([category], [bins])
                            held[design][0] += one.low <= category[0].mean() <= one.high
                cells = [f"{held[d][0] / (4 * reps):.3f}, {held[d][1] / reps:.3f}" for d in DESIGNS[1:]]
                lines.append(f"| {name} | {share:.0%} | {fraction} | {cells[0]} | {cells[1]} |")
                print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def _bins_of(categories: list[Category], drawn: list[Drawn]) -> dict[str, np.ndarray]:
    """Every bin of every category as arrays: invalid drawn, drawn, size, true variance, like-bin group."""
    rows = []
    for (y, _), bins in zip(categories, drawn, strict=True):
        for b, (members, picked) in bins.items():
            rows.append((y[picked].sum(), len(picked), len(members), y[members].var(ddof=1), len(bins) * 10 + b))
    return dict(zip(("x", "n", "size", "truth", "group"), (np.array(c, dtype=float) for c in zip(*rows)), strict=True))


def _interval(bins: dict[str, np.ndarray], spreads: np.ndarray) -> tuple[float, float]:
    """Korn and Graubard's interval of the stratified estimate with the given within-bin variances."""
    x, n, size = bins["x"], bins["n"], bins["size"]
    weights = size / size.sum()
    estimate, total = float(weights @ (x / n)), int(n.sum())
    variance = float(np.sum(weights**2 * (1 - n / size) * spreads / n))
    centre = min(max(estimate, 1 / (total + 2)), 1 - 1 / (total + 2))
    low, high = h.korn_graubard(estimate, variance, total, len(n), centre=centre)
    return float(low), float(high)


def _pooled_spreads(bins: dict[str, np.ndarray]) -> np.ndarray:
    """Each bin's variance pooled over the like bins of all categories (same bin of the same number of
    bins): within-bin sums of squares over their degrees of freedom; one item of each outcome added
    where the pool showed only one outcome."""
    spreads = np.zeros(len(bins["n"]))
    for group in np.unique(bins["group"]):
        at = bins["group"] == group
        x, n = bins["x"][at], bins["n"][at]
        squares = float(np.sum(x - x**2 / n))
        if x.sum() in (0, n.sum()):
            q = 1 / (n.sum() + 2)
            squares = float(n.sum()) * q * (1 - q)
        spreads[at] = squares / max(float(np.sum(n - 1)), 1.0)
    return spreads


def attainable_table(reps: int) -> str:
    """Concentrated world, by prediction: the cited width now, with pooled and with true bin variances."""
    lines = [
        "| design | cited now: coverage, ratio | pooled like bins: coverage, ratio | true variances: coverage, ratio |",
        "|---|---|---|---|",
    ]
    for design in DESIGNS[1:]:
        rng = np.random.default_rng(3)
        widths, covered = (
            {k: [] for k in ("random", "now", "pooled", "true")},
            dict.fromkeys(("now", "pooled", "true"), 0),
        )
        for _ in range(reps):
            categories = [concentrated(rng) for _ in range(CATEGORIES)]
            truth = float(np.mean(np.concatenate([y for y, _ in categories])))
            drawn = draw(design, categories, PER_CATEGORY, rng)
            random = cited(categories, draw("random", categories, PER_CATEGORY, rng))
            bins = _bins_of(categories, drawn)
            now = cited(categories, drawn)
            found = {"now": (now.low, now.high), "pooled": _interval(bins, _pooled_spreads(bins))}
            found["true"] = _interval(bins, bins["truth"])
            widths["random"].append(random.high - random.low)
            for key, (low, high) in found.items():
                widths[key].append(high - low)
                covered[key] += low <= truth <= high
        base = float(np.mean(widths["random"]))
        cells = [f"{covered[k] / reps:.3f}, {np.mean(widths[k]) / base:.2f}" for k in ("now", "pooled", "true")]
        lines.append(f"| {design} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--grid", action="store_true", help="the coverage grid only")
    parser.add_argument("--widths", action="store_true", help="the width table only")
    parser.add_argument("--attainable", action="store_true", help="the width with pooled and true variances only")
    parser.add_argument(
        "--predictors",
        nargs="*",
        choices=[*PREDICTORS, "confident misses"],
        help="the grid's predictors (default: the eight of health_adversarial.py)",
    )
    parser.add_argument("--shares", nargs="*", type=float, default=GRID_SHARES)
    parser.add_argument("--fractions", nargs="*", type=float, default=GRID_FRACTIONS)
    parser.add_argument("--per-category", nargs="*", type=int, default=[PER_CATEGORY], help="the widths' budgets")
    args = parser.parse_args()
    started = time.perf_counter()
    if args.attainable:
        print(attainable_table(args.reps or 400))
        return
    if not args.grid:
        print(width_table(args.reps or 400, tuple(args.per_category)))
        print()
    if not args.widths:
        print(grid_table(args.reps or 200, args.predictors, args.shares, args.fractions))
    print(f"\nwidths in percentage points, {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
