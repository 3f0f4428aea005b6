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
    at random; where no truth is known, any option at random.
    """
    batch = store.get_batch(db, batch_name)
    names = sorted({a["annotator"] for a in store.batch_assignments(db, batch["id"])})[:n_annotators]
    written = Counter[str]()
    for name in names:
        annotator = store.ensure_annotator(db, name)
        accuracy = accuracies if isinstance(accuracies, float) else accuracies.get(name, 0.9)
        rng = random.Random(f"simulate:{seed}:{name}")
        while (state := draw(db, annotator["id"], batch_name)).task is not None:
            item = store.items_by_id(db, [state.task.item_id])[state.task.item_id]
            answer = _simulated_answer(state.task, item, accuracy, rng)
            written[name] += submit_answer(db, annotator["id"], batch_name, state.task, answer, simulated=True)
    return {"batch": batch_name, "labels_written": dict(written)}


def _simulated_answer(task: Task, item: store.ItemRow, accuracy: float, rng: random.Random) -> dict[str, str]:
    values = [o.value for o in task.options]
    right = expected_answer(task.type, item, task.part)
    if right is None or rng.random() >= accuracy:
        wrong = {
            q: rng.choice([v for v in values if right is None or v != right.get(q)] or values) for q in task.questions
        }
        return wrong
    return right
