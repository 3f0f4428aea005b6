"""Imported choices (GPT-4V's answers): correct under every caption order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from foil_studio.analysis import metrics as m
from foil_studio.analysis.metric_families.base import MetricFamily, Outcomes, Run, Settings, _decisions, _no_ties

CHOICE_HEADLINE = "correct under every caption order"  # the headline of a choices run (parity's)


def choice_outcomes(run: Run, ties: str) -> Outcomes:
    """Imported choices (GPT-4V): an item is right when it is right under every caption order."""
    every, _ = choice_correct(run)
    return {CHOICE_HEADLINE: every.astype(float)}, _no_ties(run)


def choice_columns(run: Run, ties: str) -> dict[str, Any]:
    """Inspection of a choices run: right under every caption order, and per order (None where
    that order was not asked)."""
    every, per_ordering = choice_correct(run)
    return {"correct": every, **{f"right when {ordering}": values for ordering, values in per_ordering.items()}}


def choice_summary(run: Run, settings: Settings) -> dict[str, Any]:
    """Accuracy of imported choices (GPT-4V) pooled over caption orderings, and per ordering.

    An answer naming neither option counts as wrong; `n_unparsed` says how many there were.
    `accuracy_reported` uses the source's own per-answer judgement instead of our reading.
    """
    answers = [
        (category, ordering, answer)
        for category, outcome in zip(run.categories, _decisions(run))
        for ordering, answer in sorted(outcome.items())
    ]
    categories = np.array([category for category, _, _ in answers])
    outcomes = {
        "accuracy": np.array([bool(a["correct"]) for _, _, a in answers]),
        "accuracy_reported": np.array([bool(a.get("reported_correct")) for _, _, a in answers]),
    }
    summary = m.summarize(outcomes, categories, n_boot=settings.n_boot, seed=settings.seed)
    summary["n"] = len(run)
    for category, values in summary["by_category"].items():
        values["n"] = int(np.sum(run.categories == category))  # items, not answers
    summary["metrics"]["n_unparsed"] = sum(not a["parsed"] for _, _, a in answers)
    summary["by_ordering"] = _by_ordering(answers)
    return summary


def choice_correct(run: Run) -> tuple[np.ndarray, dict[str, list[bool | None]]]:
    """Per item of a choices run: right under every ordering it was asked in, and per ordering
    whether it was right (None where that ordering was not asked)."""
    decisions = _decisions(run)
    orderings = sorted({ordering for outcome in decisions for ordering in outcome})
    per: dict[str, list[bool | None]] = {
        o: [None if o not in outcome else bool(outcome[o]["correct"]) for outcome in decisions] for o in orderings
    }
    every = np.array([all(bool(answer["correct"]) for answer in outcome.values()) for outcome in decisions], dtype=bool)
    return every, per


def _by_ordering(answers: list[tuple[str, str, Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    result = {}
    for ordering in sorted({o for _, o, _ in answers}):
        chosen = [a for _, o, a in answers if o == ordering]
        result[ordering] = {
            "n": len(chosen),
            "accuracy": m.percent([a["correct"] for a in chosen]),
            "n_unparsed": sum(not a["parsed"] for a in chosen),
        }
    return result


FAMILY = MetricFamily(
    "choices",
    choice_outcomes,
    CHOICE_HEADLINE,
    run_types=("choices",),
    summary=choice_summary,
    inspect=choice_columns,
)
