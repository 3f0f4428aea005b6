"""Sampling stratified by the prediction: within each category, bins of the predicted invalid
probability, so that the answers go where the invalid items are when they are rare.

The contract (docs/statistics.md, "Sampling stratified by the prediction"):

* **Bins.** A category's items are cut into at most `MAX_BINS` bins of their prediction f by
  Dalenius and Hodges' cumulative square-root rule: f's range in `CLASSES` equal classes, the cuts
  where the running sum of sqrt(class count) passes 1/B, 2/B, ... of its total. A cut that leaves
  a bin with fewer than `SMALLEST_BIN` items is dropped; predictions that do not vary give one bin
  (the random design). Each bin holds the items with cuts[k - 1] <= f < cuts[k].
* **Allocation.** A category's draw gives every bin `MIN_PER_BIN` items first (so that every bin has
  a decided item to estimate from), the rest by Neyman's rule over the bins: in proportion to
  N_h S_h, S_h = sqrt(p_h (1 - p_h)), p_h the bin's mean prediction F_h pulled towards one half by
  `PLAN_PSEUDO_ANSWERS` answers against the bin's proportional share of the category's answers m_h,
  (m_h F_h + c / 2) / (m_h + c), kept within [`PLANNED_FLOOR`, 1 - `PLANNED_FLOOR`] (`planned_share`).
  Not the bin's answers so far: an allocation that follows the outcomes drawn so far undercovers
  (`planned_share` says how much).
* **Ranking first.** Where people already decided items of both outcomes, the bins are cut only if
  the predictions rank them better than chance (Mann-Whitney's one-sided test at 5%, pooled over the
  categories); else each category stays one bin, the random design: bins of a predictor that ranks
  nothing only cost width.
* **Estimate.** Within a bin the items drawn so far are a simple random sample of it (given how
  many: items an earlier random batch drew fall into bins as their predictions place them), so
  the bins are strata: `health.stratified_share` over them. A bin that showed no invalid item (or
  only invalid ones) enters the variance as if a_h more of each outcome had been drawn, the
  category's one item of each spread over its bins as the predictions place its invalid items,
  a_h = N_h F~_h / sum_k N_k F~_k with F~_h = `edge_share(F_h)` (never 0): the random
  design adds one to a category; one to each of its bins would add a category's worth several
  times over, most of it in the bins of few invalid items where the draw put few answers.

Pure functions of arrays; `annotate.health.sample` draws and records the bins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from foil_studio.analysis.health import allocate

MAX_BINS = 4  # bins per category
CLASSES = 100  # equal classes of f's range for the cumulative square-root rule
SMALLEST_BIN = 5  # items a bin keeps at least; a cut that leaves fewer is dropped
MIN_PER_BIN = 2  # items every bin gets in a draw before Neyman's rule shares the rest
PLANNED_FLOOR = 0.02  # the least invalid share a bin is planned with (and 1 minus it the most)
PLAN_PSEUDO_ANSWERS = 4  # answers at one half a bin's mean prediction is weighed against (`planned_share`)


def cut_points(predicted: Sequence[float] | np.ndarray, bins: int = MAX_BINS) -> list[float]:
    """The cuts between at most `bins` bins of the predictions (Dalenius and Hodges' cumulative
    square-root rule), each bin keeping at least `SMALLEST_BIN` items; [] gives one bin.

    >>> cut_points(np.r_[np.zeros(60), np.full(30, 0.5), np.ones(10)])
    [0.01, 0.51]
    >>> cut_points(np.full(50, 0.3))
    []
    """
    f = np.asarray(predicted, dtype=float)
    if len(f) == 0 or f.min() == f.max() or bins < 2:
        return []
    counts, edges = np.histogram(f, bins=CLASSES, range=(float(f.min()), float(f.max())))
    running = np.cumsum(np.sqrt(counts))
    targets = running[-1] * np.arange(1, bins) / bins
    classes = np.searchsorted(running, targets)  # the class where the running sum reaches each target
    # a cut at a class's upper edge; the last class's is f's maximum, which leaves the items there on their own
    return _kept_cuts(f, sorted({float(edges[c + 1]) for c in classes}))


def _kept_cuts(predicted: np.ndarray, cuts: list[float]) -> list[float]:
    """The cuts left once each one that leaves a bin under `SMALLEST_BIN` items is dropped, the
    smallest bin first."""
    while cuts:
        sizes = np.bincount(bin_of(predicted, cuts), minlength=len(cuts) + 1)
        smallest = int(np.argmin(sizes))
        if sizes[smallest] >= SMALLEST_BIN:
            break
        # merge the small bin into a neighbour: drop the cut on its upper side, or its lower one at the top
        cuts = cuts[:smallest] + cuts[smallest + 1 :] if smallest < len(cuts) else cuts[:-1]
    return cuts


def bin_of(predicted: Sequence[float] | np.ndarray, cuts: Sequence[float]) -> np.ndarray:
    """Each prediction's bin: the number of cuts at or below it (0 to len(cuts)).

    >>> bin_of([0.0, 0.49, 0.5, 1.0], [0.5, 1.0]).tolist()
    [0, 0, 1, 2]
    """
    return np.searchsorted(np.asarray(cuts, dtype=float), np.asarray(predicted, dtype=float), side="right")


def planned_share(mean_prediction: float, fair_answers: float) -> float:
    """A bin's invalid share for planning a draw: its mean prediction F weighed as `fair_answers` answers
    (m, the bin's proportional share of the category's answers) against `PLAN_PSEUDO_ANSWERS` (c) at one
    half, (m F + c / 2) / (m + c), kept within [`PLANNED_FLOOR`, 1 - `PLANNED_FLOOR`].

    Why the pull shrinks as the budget grows: with few answers a bin the predictions call clean mostly
    shows no invalid item, and its variance is then the edge smoothing's (`edge_weights`), not its
    share's, so planning it at its tiny share starves it for nothing; with many answers its share is
    what its variance will be. Measured (TESTING.md, a calibrated predictor at a 5% share, cited width
    over a random draw's at 40 / 100 / 200 answers per category): pulled a third of the way whatever
    the budget 0.86 / 0.81 / -, taken as said 0.91 / 0.76 / 0.61, this rule about 0.87 / 0.75 / 0.61.
    Not the bin's answers: an allocation that follows the outcomes drawn so far gives fewer new items
    to a bin whose first ones happened to look clean, and its interval covered 0.937 (0.953 on
    predictions only).

    >>> planned_share(0.0, 36)
    0.05
    >>> planned_share(0.25, 4)
    0.375
    >>> planned_share(0.0, 1000)
    0.02
    """
    pulled = (fair_answers * mean_prediction + PLAN_PSEUDO_ANSWERS / 2) / (fair_answers + PLAN_PSEUDO_ANSWERS)
    return min(max(pulled, PLANNED_FLOOR), 1 - PLANNED_FLOOR)


def edge_share(mean_prediction: float) -> float:
    """A bin's invalid share for sharing its category's extra items among the bins at an edge
    (`edge_weights`): its mean prediction pulled a third of the way to one half, (2 F + 0.5) / 3, so
    that a bin the predictions call clean still takes a real part of the smoothing when it shows no
    invalid item.

    >>> edge_share(0.0)
    0.16666666666666666
    >>> round(edge_share(0.6), 4)
    0.5667
    """
    return (2 * mean_prediction + 0.5) / 3


def allocate_bins(
    sizes: Mapping[int, int], means: Mapping[int, float], budget: int, taken: Mapping[int, int]
) -> dict[int, int]:
    """How many new items each bin of a category gets of `budget`: `MIN_PER_BIN` each first (as far
    as the budget and the bin's undrawn items allow), the rest by Neyman's rule (`health.allocate`) on
    each bin's `planned_share` of its mean prediction (`means`), its fair answers the category's
    answers after the draw in proportion to the bin's size.

    >>> allocate_bins({0: 400, 1: 100}, {0: 0.01, 1: 0.4}, 20, {})
    {0: 13, 1: 7}
    """
    answers = budget + sum(taken.values())
    shares = {b: planned_share(means[b], answers * sizes[b] / sum(sizes.values())) for b in sizes}
    room = {b: sizes[b] - taken.get(b, 0) for b in sizes}
    first = dict.fromkeys(sizes, 0)
    left = budget
    for b in sorted(sizes, key=lambda b: -shares[b]):  # the likeliest bins first when the budget is short
        first[b] = min(MIN_PER_BIN, room[b], left)
        left -= first[b]
    spreads = {b: float(np.sqrt(shares[b] * (1 - shares[b]))) for b in sizes}
    after = {b: taken.get(b, 0) + first[b] for b in sizes}
    rest = allocate(sizes, left, "neyman", taken=after, spreads=spreads) if left > 0 else dict.fromkeys(sizes, 0)
    return {b: first[b] + rest[b] for b in sizes}


def edge_weights(sizes: Sequence[int], means: Sequence[float]) -> list[float]:
    """Each bin's share a_h of its category's one extra item of each outcome in the variance of a bin
    at an edge: N_h F~_h / sum_k N_k F~_k, F~_h the bin's `edge_share` with no answers.

    >>> [round(a, 3) for a in edge_weights([425, 75], [0.1, 0.6])]
    [0.7, 0.3]
    """
    weighted = [n * edge_share(mean) for n, mean in zip(sizes, means, strict=True)]
    return [w / sum(weighted) for w in weighted]


@dataclass(frozen=True)
class Ranking:
    """Whether the predictions rank people's outcomes better than chance, and how that was judged."""

    better: bool
    reason: str


def ranks_better_than_chance(outcomes: Sequence[float], predicted: Sequence[float], level: float = 0.05) -> Ranking:
    """Mann-Whitney's one-sided test that the decided invalid items are predicted above the others
    (scipy), on every decided item; with no decided item of one outcome there is nothing to judge,
    and the predictions are taken as they come.

    >>> ranks_better_than_chance([1, 1, 0, 0, 0, 0, 0], [0.9, 0.8, 0.1, 0.2, 0.3, 0.1, 0.2]).better
    True
    >>> ranks_better_than_chance([1, 0, 1, 0], [0.5, 0.5, 0.5, 0.5]).better
    False
    """
    from scipy import stats

    y, f = np.asarray(outcomes, dtype=float), np.asarray(predicted, dtype=float)
    invalid, other = f[y == 1], f[y == 0]
    if len(invalid) == 0 or len(other) == 0:
        return Ranking(True, f"no decided item is {'invalid' if len(invalid) == 0 else 'valid'} yet: not judged")
    test = stats.mannwhitneyu(invalid, other, alternative="greater")
    auc = float(test.statistic) / (len(invalid) * len(other))
    said = f"AUC {auc:.2f} on {len(y)} decided items, one-sided p = {float(test.pvalue):.3f}"
    return Ranking(bool(test.pvalue <= level), said)  # a test at a level rejects at p equal to it
