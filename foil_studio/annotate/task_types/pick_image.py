"""pick_image: which generated image shows everything the description says, or none? (BiVLC)"""

from __future__ import annotations

import random

from foil_studio.annotate.task_types.base import Answer, Item, Option, Task, TaskType, letter, shuffled, truth


def build(item: Item, part: int, rng: random.Random) -> Task:
    """Lay out one item; its answer buttons (label, key) are a letter per image on keys 1.., then None on 0:

    >>> from foil_studio.data.item_kinds import item_kind
    >>> TASK_TYPE.buttons(item_kind("candidates").example)
    (('A', '1'), ('B', '2'), ('C', '3'), ('D', '4'), ('None', '0'))
    """
    order = shuffled(rng, len(item["images"]))
    options = [Option(str(i), letter(n), str(n + 1)) for n, i in enumerate(order)]
    return Task(
        "pick_image",
        item["id"],
        part,
        "Which image shows everything the description says?",
        (("description", item["captions"][0]),),
        tuple((letter(n), item["images"][i]) for n, i in enumerate(order)),
        (*options, Option("none", "None", "0")),
        tuple(order),
    )


def expected(item: Item, part: int) -> dict[str, str] | None:
    known = truth(item)
    if "valid" not in known:
        return None
    return {"answer": "none" if known.get("best") is None else str(known["best"])}


def correct(item: Item, part: int, answer: Answer) -> bool | None:
    """Any valid candidate counts as right, not only the best one."""
    known = truth(item)
    if "valid" not in known:
        return None
    choice = answer.get("answer")
    return choice == "none" if not any(known["valid"]) else choice != "none" and known["valid"][int(str(choice))]


def chosen_candidate(item: Item, value: str) -> str:
    """A pick by the candidate's own letter (A is the item's first image), whatever the order shown.

    >>> chosen_candidate({}, "2"), chosen_candidate({}, "none")
    ('chose candidate C', 'chose none')
    """
    return f"chose candidate {letter(int(value))}" if value.isdigit() else f"chose {value}"


def image_or_none(value: str) -> str:
    """BiVLC reports agreement on "some image" against "none", not on which image."""
    return "none" if value == "none" else "image"


TASK_TYPE = TaskType(
    "pick_image",
    ("candidates",),
    "Read the description, then pick the image that shows all the information in it. "
    "Aesthetic defects (deformed hands or faces, odd textures) are accepted. If no image shows "
    'everything the description says, choose "None".',
    build,
    expected,
    correct,
    agreement_code=image_or_none,
    describe=chosen_candidate,
    next_step="ambiguity",
    summary="which generated image shows everything the description says, or none? (BiVLC)",
)
