"""A health sample with an active batch, estimated round by round (`analysis.active_sampling`): per
category the rounds its batches make (a run of random batches one round, an active batch one of
its own), the plain and prediction-powered shares from them."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from foil_studio.analysis.active_sampling import Round, RoundEstimate, rounds_estimate
from foil_studio.annotate.health.sample import HealthSample, is_active


def round_groups(sample: HealthSample) -> list[tuple[set[int], bool]]:
    """The sample's rounds, oldest first: the ids of the answered batches each holds (`answered`), and
    whether it is an active batch (a run of random batches is one round)."""
    groups: list[tuple[set[int], bool]] = []
    for batch in sample.answered:
        if groups and not is_active(batch) and not groups[-1][1]:
            groups[-1][0].add(batch["id"])
        else:
            groups.append(({batch["id"]}, is_active(batch)))
    return groups


def category_rounds(
    sample: HealthSample, category: str, counted: frozenset[str], groups: list[tuple[set[int], bool]]
) -> list[Round]:
    """The category's rounds (`round_groups`), oldest first: positions in `sample.frame[category]`,
    inclusion probabilities given the rounds before, and outcomes (1 where the verdict is in
    `counted`, nan undecided)."""
    items = sample.frame[category]
    position = {item: p for p, item in enumerate(items)}
    rounds, left = [], len(items)
    for batch_ids, active in groups:
        drawn = sorted(i for i, c in sample.drawn.items() if c == category and sample.batch_of[i] in batch_ids)
        if not drawn:
            continue
        # a random round is a simple random sample of what the rounds before it left
        recorded = [sample.inclusion[i] for i in drawn] if active else [len(drawn) / left] * len(drawn)
        inclusion = np.array(recorded)
        outcomes = np.array([float(sample.verdicts[i] in counted) if i in sample.verdicts else np.nan for i in drawn])
        rounds.append(Round(np.array([position[i] for i in drawn]), inclusion, outcomes))
        left -= len(drawn)
    return rounds


def round_estimates(
    sample: HealthSample, counted: frozenset[str], predictions: Mapping[int, float] | None = None
) -> dict[str, RoundEstimate]:
    """Per category with a decided item, the share of verdicts in `counted` from its rounds, with the
    predictions on every item (prediction-powered) or without (plain)."""
    found = {}
    groups = round_groups(sample)
    for category in sorted(sample.frame):
        rounds = category_rounds(sample, category, counted, groups)
        if not any((~np.isnan(r.outcomes)).any() for r in rounds):
            continue
        items = sample.frame[category]
        population = np.array([predictions[i] for i in items]) if predictions is not None else np.zeros(len(items))
        found[category] = rounds_estimate(rounds, population, weight=None if predictions is not None else 0.0)
    return found
