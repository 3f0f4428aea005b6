"""Sampling where it helps: health batches drawn with inclusion probabilities that grow with a
predictor's uncertainty, and the estimate of a stratum's share from draws made one after another.

The contract (docs/statistics.md, "Active sampling"):

* **Active draw.** In a stratum, among the R items no earlier round drew, item i is drawn on its own
  coin (Poisson sampling) with probability pi_i = n (a / R + (1 - a) u_i / sum u), u_i =
  sqrt(f_i (1 - f_i)) the predictor's uncertainty (for a calibrated f, the spread of y - f, which
  makes this the variance-minimising design: Zrnic and Candes, "Active statistical inference",
  2024) and a = `FLOOR_SHARE` of every probability spread evenly, so that no item is left at
  probability 0 and a wrong confident prediction is still drawn now and then. About n items are
  drawn; a pi_i above 1 is set to 1 and its excess spread over the others.
* **Rounds.** A stratum's sample is a sequence of rounds, each drawn from the items the earlier ones
  did not draw: a run of simple random batches is one round (their union is a simple random
  sample of what was left), an active batch one round of its own. Given the rounds before it,
  round s estimates the total of y over its remainder R_s with the difference estimator
  lambda F(R_s) + |R_s| a_s, a_s = sum_S (y - lambda f) / pi over sum_S 1 / pi (its decided
  items S; pi = the inclusion probability times the round's share of decided items, non-response
  taken as at random within the round), and the stratum's total as that plus the outcomes of
  the items earlier rounds drew (an undecided one counted at its own round's fit).
* **Variance.** Given the rounds before, sum_S (1 - pi) / pi^2 e_i^2 n / (n - k), e the residuals
  y - lambda f - a_s, k = 2 with a power weight else 1, plus two disagreements' worth as a simple
  random round of n would add it, (1 - n / R) R^2 q (1 - q) / n with q = 2 / (n + 4) (as
  `prediction_powered` smooths; added per drawn item at 1 / pi^2 it would charge the few
  low-probability items of an active round many times over). For a simple random round this is
  (1 - n / R) R^2 (s^2 + q (1 - q)) / n, `prediction_powered`'s formula for one stratum.
* **Combined.** The rounds' estimates averaged with weights 1 / sum_S (1 - pi) / pi^2, each round's
  design variance per unit of residual spread ((1 - n / R) R^2 / n for a random round), set by the
  draw and not by the outcomes; a round that took every item it had left knows the total exactly
  and is taken alone. Their errors are uncorrelated (each has mean 0 given the rounds before), so
  the variance is sum w_s^2 v_s. lambda is PPI++'s power weight over all decided
  items of the stratum (0 without predictions: the plain estimate). Korn and Graubard's interval
  on the variance, widened by one item each way, as `prediction_powered` does.

Pure functions of arrays; `annotate.health` reads the rounds off the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from foil_studio.analysis.health import LEVEL, Share
from foil_studio.analysis.prediction_powered import difference_interval, disagreements_worth, power_weight

FLOOR_SHARE = 0.2  # the share of each active inclusion probability spread evenly over the remainder


def uncertainty(predicted: np.ndarray) -> np.ndarray:
    """A predictor's uncertainty per item, sqrt(f (1 - f)): 0 for a 0/1 label, 0.5 at f = 0.5.

    >>> uncertainty(np.array([0.0, 0.5, 0.9])).round(2).tolist()
    [0.0, 0.5, 0.3]
    """
    f = np.asarray(predicted, dtype=float)
    return np.sqrt(f * (1 - f))


def active_inclusion(spread: np.ndarray, expected: float) -> np.ndarray:
    """Each remaining item's inclusion probability for an active draw of about `expected` items:
    n (a / R + (1 - a) u_i / sum u), a = `FLOOR_SHARE`, at most 1 (the excess spread over the
    others in proportion); all 1 when `expected` reaches R.

    >>> active_inclusion(np.array([0.0, 0.5, 0.5, 0.0]), 2).tolist()
    [0.1, 0.9, 0.9, 0.1]
    """
    u = np.asarray(spread, dtype=float)
    size = len(u)
    if expected >= size:
        return np.ones(size)
    share = u / u.sum() if u.sum() > 0 else np.full(size, 1 / size)
    inclusion = expected * (FLOOR_SHARE / size + (1 - FLOOR_SHARE) * share)
    while (over := inclusion > 1 + 1e-12).any():
        excess = float(np.sum(inclusion[over] - 1))
        inclusion[over] = 1.0
        free = inclusion < 1
        inclusion[free] += excess * inclusion[free] / inclusion[free].sum()
    return np.minimum(inclusion, 1.0)


@dataclass(frozen=True)
class Round:
    """One round of a stratum's sample: the positions (in the stratum's items) it drew, each one's
    inclusion probability given the rounds before, and their outcomes (1, 0, or nan undecided)."""

    drawn: np.ndarray
    inclusion: np.ndarray
    outcomes: np.ndarray


@dataclass(frozen=True)
class RoundEstimate:
    """A stratum's share from its rounds: the estimate, its variance, the power weight, the decided items."""

    estimate: float
    variance: float
    weight: float
    decided: int
    count: int  # decided items with outcome 1


def rounds_estimate(rounds: Sequence[Round], population: np.ndarray, weight: float | None = None) -> RoundEstimate:
    """The stratum's share of outcome 1 from its rounds and the predictions on all its items
    (`population`; zeros for the plain estimate). `weight` fixes lambda (else PPI++'s, from the
    decided items)."""
    f = np.asarray(population, dtype=float)
    size = len(f)
    _check_rounds(rounds, size)
    decided_y = np.concatenate([r.outcomes[~np.isnan(r.outcomes)] for r in rounds])
    decided_f = np.concatenate([f[r.drawn[~np.isnan(r.outcomes)]] for r in rounds])
    if len(decided_y) == 0:
        raise ValueError("a stratum needs at least one decided item for an estimate")
    lam = power_weight(decided_y, decided_f) if weight is None else weight
    spent = 2 if lam != 0 else 1
    # a round with no decided item counts its items at the stratum's fit
    stratum_level = float(np.mean(decided_y - lam * decided_f))
    taken = np.zeros(size, dtype=bool)
    known = 0.0  # the outcomes (or fits) of the items earlier rounds drew
    totals, variances, factors = [], [], []  # factors: each round's design variance per unit spread
    for one in rounds:
        decided = ~np.isnan(one.outcomes)
        n = int(decided.sum())
        level = stratum_level
        if n:
            pi = one.inclusion[decided] * n / len(one.drawn)
            y, fy = one.outcomes[decided], f[one.drawn[decided]]
            level = float(np.sum((y - lam * fy) / pi) / np.sum(1 / pi))
            residual = y - lam * fy - level
            smallest = disagreements_worth(2, n)
            left = int((~taken).sum())
            spread = float(np.sum((1 - pi) / pi**2 * residual**2)) * n / max(n - spent, 1)
            # two disagreements' worth, as a simple random round of n would add it
            variances.append(spread + smallest * left**2 * (1 - n / left) / n)
            totals.append(known + lam * float(f[~taken].sum()) + level * left)
            factors.append(float(np.sum((1 - pi) / pi**2)))
        known += float(np.sum(np.where(decided, np.nan_to_num(one.outcomes), lam * f[one.drawn] + level)))
        taken[one.drawn] = True
    w = _round_weights(np.asarray(factors))
    total = float(w @ np.asarray(totals))
    variance = float(w**2 @ np.asarray(variances))
    return RoundEstimate(total / size, variance / size**2, lam, len(decided_y), int(decided_y.sum()))


def _round_weights(factors: np.ndarray) -> np.ndarray:
    """Each round's weight, 1 / its design factor sum_S (1 - pi) / pi^2 (set by the draw, not by the
    outcomes); a round that took all it had left (factor 0) knows the total exactly and is taken alone."""
    if (factors == 0).any():
        return (np.arange(len(factors)) == np.flatnonzero(factors == 0)[-1]).astype(float)
    return (1 / factors) / np.sum(1 / factors)


def _check_rounds(rounds: Sequence[Round], size: int) -> None:
    seen: set[int] = set()
    for one in rounds:
        if not (len(one.drawn) == len(one.inclusion) == len(one.outcomes)):
            raise ValueError("a round needs one inclusion probability and one outcome per drawn item")
        if np.any((one.inclusion <= 0) | (one.inclusion > 1)):
            raise ValueError("every inclusion probability must be above 0 and at most 1")
        decided = one.outcomes[~np.isnan(one.outcomes)]
        if np.any((decided != 0) & (decided != 1)):
            raise ValueError("outcomes must be 0, 1 or nan (undecided)")
        drawn = set(np.asarray(one.drawn, dtype=int).tolist())
        if drawn & seen or len(drawn) != len(one.drawn) or any(i < 0 or i >= size for i in drawn):
            raise ValueError("each round draws distinct items of the stratum that no earlier round drew")
        seen |= drawn


def stratum_share(found: RoundEstimate, size: int, level: float = LEVEL) -> Share:
    """One stratum's estimate as a `Share` with Korn and Graubard's interval (widened by one item each way)."""
    return difference_interval(found.estimate, found.variance, found.decided, 1, found.count, size, level)


def stratified_share(found: Sequence[RoundEstimate], sizes: Sequence[int], level: float = LEVEL) -> Share:
    """The strata combined with weights N_c / N (variances with weights squared), as a `Share`."""
    n = np.asarray(sizes, dtype=float)
    weights = n / n.sum()
    estimate = float(weights @ [s.estimate for s in found])
    variance = float(weights**2 @ [s.variance for s in found])
    decided, count = sum(s.decided for s in found), sum(s.count for s in found)
    return difference_interval(estimate, variance, decided, len(found), count, int(n.sum()), level)
