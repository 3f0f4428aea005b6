"""Simulated annotators: a batch answered from ground truth with per-annotator noise, through the
annotators' own write path (`draw`, `submit_answer`), each label marked simulated."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import sqlite_utils

from foil_studio.annotate.queues import draw, submit_answer
from foil_studio.annotate.task_types import Task, expected_answer
from foil_studio.data import store


def simulate(
    db: sqlite_utils.Database,
    batch_name: str,
    *,
    accuracies: dict[str, float] | float = 0.9,
    n_annotators: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Answer a batch from ground truth with per-annotator noise, through the UI's write path.

    An annotator with accuracy p gives the known answer with probability p, else another option
    at random; where no truth is known (imported items carry none of whether their negative is
    valid), any option at random whatever p: the result counts those answers
    (`answered_at_random`) and its `note` says so. Where nothing was left to answer, its `note` says
    why (a crowd study's units are assigned only as participants join and work).
    """
    batch = store.get_batch(db, batch_name)
    assigned = store.batch_assignments(db, batch["id"])
    names = sorted({a["annotator"] for a in assigned})[:n_annotators]
    written, at_random, answered = Counter[str](), 0, 0
    for name in names:
        annotator = store.ensure_annotator(db, name)
        accuracy = accuracies if isinstance(accuracies, float) else accuracies.get(name, 0.9)
        rng = random.Random(f"simulate:{seed}:{name}")
        while (state := draw(db, annotator["id"], batch_name)).task is not None:
            item = store.items_by_id(db, [state.task.item_id])[state.task.item_id]
            right = expected_answer(state.task.type, item, state.task.part)
            answer = _simulated_answer(state.task, right, accuracy, rng)
            written[name] += submit_answer(db, annotator["id"], batch_name, state.task, answer, simulated=True)
            answered += 1
            at_random += right is None
    result: dict[str, Any] = {"batch": batch_name, "labels_written": dict(written), "answered_at_random": at_random}
    if at_random:
        result["note"] = (
            f"{at_random} of the {answered} answers were to items with no known answer (imported items carry no "
            "truth of whether their negative is valid): those were drawn uniformly at random among the options, "
            "whatever the accuracy asked"
        )
    elif not answered:
        result["note"] = nothing_to_answer(batch, bool(assigned))
    return result


def nothing_to_answer(batch: store.BatchRow, assigned: bool) -> str:
    """Why simulating `batch` answered nothing: a crowd study assigns its units only as participants
    join and work, and otherwise every assigned item was answered already.

    >>> nothing_to_answer({"config": {"crowd_token": "t"}}, False)[:58]
    'nothing to answer: a crowd study assigns its items to part'
    """
    crowd = "crowd_token" in batch["config"]
    if crowd and not assigned:
        return (
            "nothing to answer: a crowd study assigns its items to participants only as they join and work, and "
            "no participant holds any yet (simulate a batch with named annotators instead)"
        )
    if crowd:
        return (
            "nothing to answer: every item dealt to the study's participants is answered, and the rest are dealt "
            "only as participants work"
        )
    return "nothing to answer: every item assigned in the batch is answered already"


def _simulated_answer(task: Task, right: dict[str, str] | None, accuracy: float, rng: random.Random) -> dict[str, str]:
    values = [o.value for o in task.options]
    if right is None or rng.random() >= accuracy:
        wrong = {
            q: rng.choice([v for v in values if right is None or v != right.get(q)] or values) for q in task.questions
        }
        return wrong
    return right
