"""Retrieval sets (CREPE, What'sUp, ARO's order sets): the positive ranked first among negatives."""

from __future__ import annotations

from typing import Any

import numpy as np

from foil_studio.analysis import metrics as m
from foil_studio.analysis.metric_families.base import MetricFamily, Outcomes, Run, Settings, _no_ties, _outcome_column


def retrieval_outcomes(run: Run, ties: str) -> Outcomes:
    """Recall at 1, 3 and 5 of the positive among its negatives (CREPE, What'sUp)."""
    if run.scores is None:
        return {"recall_at_1": _outcome_column(run, "correct")}, _no_ties(run)
    return {f"recall_at_{k}": m.recall_at_k(run.scores, k, ties) for k in (1, 3, 5)}, m.retrieval_tied(run.scores)


def add_retrieval_chance(
    summary: dict[str, Any], run: Run, outcomes: dict[str, np.ndarray], settings: Settings
) -> None:
    """`chance`: recall at k of a random ranking, overall and per category; it depends on each
    item's number of captions (CREPE's vary, What'sUp's are 4 or 2)."""
    if run.scores is None:
        return
    options = np.sum(~np.isnan(np.asarray(run.scores, dtype=float)), axis=1)
    by_item = {key: np.minimum(1.0, int(key.rsplit("_", 1)[1]) / options) for key in outcomes}
    groups = {"(all)": np.ones(len(options), dtype=bool)} | {
        str(c): run.categories == c for c in summary["by_category"]
    }
    summary["chance"] = {
        group: {key: m.percent(values[mask]) for key, values in by_item.items()} for group, mask in groups.items()
    }


FAMILY = MetricFamily("retrieval", retrieval_outcomes, "recall_at_1", extend=add_retrieval_chance)
