"""BiVLC's groups: image-to-text, text-to-image and group scores, and the subtypes' types."""

from __future__ import annotations

from typing import Any

import numpy as np

from foil_studio.analysis import metrics as m
from foil_studio.analysis.metric_families.base import (
    MetricFamily,
    Outcomes,
    Run,
    Settings,
    _no_ties,
    _outcome_column,
    category_types,
)


def group_outcomes(run: Run, ties: str) -> Outcomes:
    """The seven BiVLC outcomes of each item, from scores or from imported decisions."""
    if run.scores is None:
        parts = {k: _outcome_column(run, k) for k in ("ipos2t", "ineg2t", "tpos2i", "tneg2i")}
        outcomes = m.combine_bivlc(**parts)
        tied = _no_ties(run)
    else:
        outcomes, tied = m.bivlc_outcomes(run.scores, ties), m.bivlc_tied(run.scores)
    return {k: outcomes[k] for k in m.BIVLC_KEYS}, tied


def add_group_types(summary: dict[str, Any], run: Run, outcomes: dict[str, np.ndarray], settings: Settings) -> None:
    """Where the source's categories are subtypes (BiVLC): `by_type` and `type_intervals` hold
    the types (`replace`) beside the subtypes (`replace_obj`) of `by_category`."""
    types = category_types(run.categories, settings.source)
    if types is None:
        return
    by_type = m.summarize(outcomes, types, n_boot=settings.n_boot, seed=settings.seed)
    type_of = dict(zip(map(str, run.categories), types.tolist()))
    for category, figures in summary["by_category"].items():  # a type's ties: its subtypes' ties
        if "ties" in figures:
            counts = by_type["by_category"][type_of[category]]
            counts["ties"] = counts.get("ties", 0) + figures["ties"]
    summary["by_type"], summary["type_intervals"] = by_type["by_category"], by_type["category_intervals"]


FAMILY = MetricFamily("bivlc", group_outcomes, "group", extend=add_group_types)
