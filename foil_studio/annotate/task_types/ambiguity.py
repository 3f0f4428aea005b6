"""ambiguity: does the positive caption fit the generated image as well as the original? (BiVLC)"""

from __future__ import annotations

import random

from foil_studio.annotate.task_types.base import Item, Option, Task, TaskType, shuffled, truth

_NAMES = {0: "original", 1: "generated"}  # item image 0 is the original, 1 the generated one


def build(item: Item, part: int, rng: random.Random) -> Task:
    """Lay out one item; its answer buttons (label, key) are the same on every group item:

    >>> from foil_studio.data.item_kinds import item_kind
    >>> TASK_TYPE.buttons(item_kind("group").example)
    (('Left', '1'), ('Right', '2'), ('Both', '3'))
    """
    order = shuffled(rng, 2)
    return Task(
        "ambiguity",
        item["id"],
        part,
        "Which image does the caption describe best?",
        (("caption", item["captions"][0]),),
        (("Left", item["images"][order[0]]), ("Right", item["images"][order[1]])),
        (Option(_NAMES[order[0]], "Left", "1"), Option(_NAMES[order[1]], "Right", "2"), Option("both", "Both", "3")),
        tuple(order),
    )


def chosen_side(item: Item, value: str) -> str:
    """A pick by the image it names, not by the side it was shown on.

    >>> chosen_side({}, "generated"), chosen_side({}, "both")
    ('chose the generated image', 'chose both')
    """
    return f"chose the {value} image" if value in _NAMES.values() else f"chose {value}"


def expected(item: Item, part: int) -> dict[str, str] | None:
    known = truth(item)
    return {"answer": "both" if known["ambiguous"] else "original"} if "ambiguous" in known else None


TASK_TYPE = TaskType(
    "ambiguity",
    ("group",),
    "Read the caption and pick the image it describes best. If it describes both equally well, choose Both.",
    build,
    expected,
    describe=chosen_side,
    keep=frozenset({"original"}),
    drop_reasons={
        "generated": "ambiguous: the positive caption fits the generated image better",
        "both": "ambiguous: the positive caption fits both images",
    },
    clean_format="bivlc",
    summary="does the positive caption fit the original image, the generated one, or both? (BiVLC)",
)
