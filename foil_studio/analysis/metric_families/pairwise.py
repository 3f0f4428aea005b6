"""Pairwise accuracy (SugarCrepe, ARO, VALSE...): the positive caption scores above the negative."""

from __future__ import annotations

from foil_studio.analysis import metrics as m
from foil_studio.analysis.metric_families.base import MetricFamily, Outcomes, Run, _no_ties, _outcome_column


def pair_outcomes(run: Run, ties: str) -> Outcomes:
    """Per item `s(c) > s(c_n)` (or an imported `correct`)."""
    if run.scores is None:
        return {"accuracy_micro": _outcome_column(run, "correct")}, _no_ties(run)
    s = run.scores
    return {"accuracy_micro": m.credit(s[:, 0], s[:, 1], ties)}, m.tied(s[:, 0], s[:, 1])


FAMILY = MetricFamily("pairwise", pair_outcomes, "accuracy_micro", macro=True)
