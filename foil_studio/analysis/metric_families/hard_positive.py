"""The hard-positives benchmark: the positive and its hard positive both above the negative."""

from __future__ import annotations

from typing import Any

import numpy as np

from foil_studio.analysis import metrics as m
from foil_studio.analysis.metric_families.base import MetricFamily, Outcomes, Run, Settings, _no_ties, _outcome_column


def triple_outcomes(run: Run, ties: str) -> Outcomes:
    """Hard-positive outcomes (imported decisions: `correct` as the augmented accuracy)."""
    if run.scores is None:
        return {"aug_acc": _outcome_column(run, "correct")}, _no_ties(run)
    scores = run.scores[:, :3]
    tied = m.tied(scores[:, 0], scores[:, 1]) + m.tied(scores[:, 2], scores[:, 1])
    return m.hard_positive_outcomes(scores[:, 0], scores[:, 1], scores[:, 2], ties), tied


def add_caption_means(summary: dict[str, Any], run: Run, outcomes: dict[str, np.ndarray], settings: Settings) -> None:
    """Hard positives: the mean of each caption's score, overall and per category."""
    if run.scores is None:
        return
    scores = run.scores[:, :3]
    summary["metrics"].update(zip(("mean_s_c", "mean_s_cn", "mean_s_cp"), (float(v) for v in scores.mean(axis=0))))
    for category, values in summary["by_category"].items():
        mask = run.categories == category
        values.update(zip(("mean_s_c", "mean_s_cn", "mean_s_cp"), (float(v) for v in scores[mask].mean(axis=0))))


FAMILY = MetricFamily(
    "hard_positive", triple_outcomes, "aug_acc", extend=add_caption_means, columns={"brittle": "brittleness"}
)
