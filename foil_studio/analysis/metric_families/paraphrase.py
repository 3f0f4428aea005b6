"""SugarCrepe++: image-to-text with two positives, and the text-only TOT."""

from __future__ import annotations

from foil_studio.analysis import metrics as m
from foil_studio.analysis.metric_families.base import MetricFamily, Outcomes, Run, _no_ties, _outcome_column


def paraphrase_outcomes(run: Run, ties: str) -> Outcomes:
    """SugarCrepe++: ITT, Image-P1-Neg, Image-P2-Neg and, from the text encoder, TOT
    (imported decisions: `correct` as ITT)."""
    if run.scores is None:
        return {"itt": _outcome_column(run, "correct")}, _no_ties(run)
    scores = run.scores
    return m.paraphrase_outcomes(scores, ties), m.paraphrase_tied(scores)


FAMILY = MetricFamily("paraphrase", paraphrase_outcomes, "itt", columns={"text only right": "tot"})
