"""A health sample with an active batch, estimated round by round (`analysis.active_sampling`): per
category the rounds its batches make (a run of random batches one round, an active batch one of
its own), the plain and prediction-powered shares from them."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from foil_studio.analysis.active_sampling import Round, RoundEstimate, rounds_estimate
from foil_studio.annotate.health.sample import HealthSample, is_active


def category_rounds(sample: HealthSample, category: str, counted: frozenset[str]) -> list[Round]:
    """The category's rounds, oldest first: positions in `sample.frame[category]`, inclusion
    probabilities given the rounds before, and outcomes (1 where the outcome is in `counted`,
    nan undecided)."""
    items = sample.frame[category]
    position = {item: p for p, item in enumerate(items)}
    groups: list[list[int]] = []  # batch ids per round
    for batch in sample.batches:
        if groups and not is_active(batch) and not _active_round(sample, groups[-1]):
            groups[-1].append(batch["id"])
        else:
            groups.append([batch["id"]])
    rounds, left = [], len(items)
    for group in groups:
        drawn = sorted(i for i, c in sample.drawn.items() if c == category and sample.batch_of[i] in group)
        if not drawn:
            continue
        if _active_round(sample, group):
            inclusion = np.array([sample.inclusion[i] for i in drawn])
        else:
            inclusion = np.full(len(drawn), len(drawn) / left)  # a simple random sample of what was left
        outcomes = np.array([float(sample.outcomes[i] in counted) if i in sample.outcomes else np.nan for i in drawn])
        rounds.append(Round(np.array([position[i] for i in drawn]), inclusion, outcomes))
        left -= len(drawn)
    return rounds


def _active_round(sample: HealthSample, group: list[int]) -> bool:
    return any(is_active(b) for b in sample.batches if b["id"] in group)


def round_estimates(
    sample: HealthSample, counted: frozenset[str], predictions: Mapping[int, float] | None = None
) -> dict[str, RoundEstimate]:
    """Per category with a decided item, the share of outcomes in `counted` from its rounds, with the
    predictions on every item (prediction-powered) or without (plain)."""
    found = {}
    for category in sorted(sample.frame):
        rounds = category_rounds(sample, category, counted)
        if not any((~np.isnan(r.outcomes)).any() for r in rounds):
            continue
        items = sample.frame[category]
        population = np.array([predictions[i] for i in items]) if predictions is not None else np.zeros(len(items))
        found[category] = rounds_estimate(rounds, population, weight=None if predictions is not None else 0.0)
    return found
