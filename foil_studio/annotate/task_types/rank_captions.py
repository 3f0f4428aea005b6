"""rank_captions: rank a caption, its hard positive and its negative (hard-positives paper; also
SugarCrepe++'s two positives and negative, stored in the same order)."""

from __future__ import annotations

import random

from foil_studio.annotate.task_types.base import Answer, Baseline, Item, Option, Task, TaskType, shuffled, truth
from foil_studio.data.item_kinds import item_kind

QUESTIONS = ("rank_0", "rank_1", "rank_2")  # the rank of caption 0, 1, 2, whatever the display order


def build(item: Item, part: int, rng: random.Random) -> Task:
    """Lay out one item; its answer buttons (label, key) are the same on every triple item:

    >>> from foil_studio.data.item_kinds import item_kind
    >>> TASK_TYPE.buttons(item_kind("triple").example)
    (('1', ''), ('2', ''), ('3', ''))
    """
    order = shuffled(rng, 3)
    captions = tuple((f"({n + 1})", item["captions"][i]) for n, i in enumerate(order))
    return Task(
        "rank_captions",
        item["id"],
        part,
        "Rank the captions: 1 is best; equal captions may share a rank.",
        captions,
        (("image", item["images"][0]),) if item["images"] else (),
        tuple(Option(str(r), str(r), "") for r in (1, 2, 3)),
        tuple(order),
        questions=tuple(f"rank_{i}" for i in order),
        question_labels=tuple(f"rank of caption ({n + 1})" for n in range(3)),
    )


def expected(item: Item, part: int) -> dict[str, str] | None:
    """The caption and its hard positive tie first, the negative after."""
    return {"rank_0": "1", "rank_1": "2", "rank_2": "1"} if "negative" in truth(item) else None


def correct(item: Item, part: int, answer: Answer) -> bool | None:
    """Right when the caption and its hard positive share the best rank and the negative ranks lower."""
    if "negative" not in truth(item):
        return None
    ranks = [int(answer.get(q, 0)) for q in QUESTIONS]
    return ranks[0] == ranks[2] < ranks[1]


def question_words(item: Item, question: str) -> str:
    """ "rank_1" as the caption it ranks, by its role: "rank of the negative caption"."""
    roles = item_kind(item["kind"]).caption_roles(len(item["captions"]))
    return f"rank of the {roles[int(question.removeprefix('rank_'))]} caption"


TASK_TYPE = TaskType(
    "rank_captions",
    ("triple", "paraphrase"),
    "Rank the three captions by how well they describe the image: 1 is best. Captions that are "
    "equally good may share a rank.",
    build,
    expected,
    correct,
    questions=QUESTIONS,
    agreement_level="ordinal",
    model_like=True,
    question_words=question_words,
    baseline=Baseline("ranking_points", macro=None),  # a point when the majority ranking is right
    summary="rank a caption, its hard negative and its hard positive, 1 best, ties allowed",
)
