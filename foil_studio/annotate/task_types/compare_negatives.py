"""compare_negatives: which of two altered captions makes more sense, and which is more grammatical?"""

from __future__ import annotations

import random

from foil_studio.annotate.task_types.base import Item, Option, Task, TaskType, shuffled


def build(item: Item, part: int, rng: random.Random) -> Task:
    """Lay out one item; its answer buttons (label, key) are the same on every retrieval item:

    >>> from foil_studio.data.item_kinds import item_kind
    >>> TASK_TYPE.buttons(item_kind("retrieval").example)
    (('First', ''), ('Second', ''), ('Tie', ''))
    """
    order = [1 + i for i in shuffled(rng, 2)]  # caption 0 is the positive
    captions = (
        ("original", item["captions"][0]),
        *((f"altered ({n + 1})", item["captions"][i]) for n, i in enumerate(order)),
    )
    options = (Option(str(order[0]), "First", ""), Option(str(order[1]), "Second", ""), Option("tie", "Tie", ""))
    return Task(
        "compare_negatives",
        item["id"],
        part,
        "Which altered caption is better on each question?",
        captions,
        (),
        options,
        tuple(order),
        questions=("commonsense", "grammar"),
        question_labels=("Which makes more sense?", "Which is more grammatical?"),
    )


def altered_caption(item: Item, value: str) -> str:
    """An answer value (a caption index, or "tie") with the caption it names."""
    return "tie" if value == "tie" else f"altered caption {value} “{item['captions'][int(value)]}”"


TASK_TYPE = TaskType(
    "compare_negatives",
    ("retrieval",),
    "Both altered captions should be wrong for the original. Judge them on two separate "
    "questions: which makes more sense (commonsense), and which is more grammatical.",
    build,
    questions=("commonsense", "grammar"),
    describe=altered_caption,
    summary="which of two altered captions makes more sense, and which is more grammatical?",
)
