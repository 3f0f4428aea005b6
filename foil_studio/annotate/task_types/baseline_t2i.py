"""baseline_t2i: the human baseline of text-to-image: which image best matches the caption? (BiVLC)"""

from __future__ import annotations

import random

from foil_studio.annotate.task_types.base import Baseline, Item, Option, Task, TaskType, chosen_image, letter, shuffled


def build(item: Item, part: int, rng: random.Random) -> Task:
    """Lay out one item; its answer buttons (label, key) are the same on every group item:

    >>> from foil_studio.data.item_kinds import item_kind
    >>> TASK_TYPE.buttons(item_kind("group").example)
    (('Image A', '1'), ('Image B', '2'))
    """
    order = shuffled(rng, 2)
    images = tuple((f"Image {letter(n)}", item["images"][i]) for n, i in enumerate(order))
    return Task(
        "baseline_t2i",
        item["id"],
        part,
        "Which image BEST matches the caption?",
        (("caption", item["captions"][part]),),
        images,
        tuple(Option(str(i), f"Image {letter(n)}", str(n + 1)) for n, i in enumerate(order)),
        tuple(order),
    )


def expected(item: Item, part: int) -> dict[str, str]:
    """Image `part` belongs to caption `part`."""
    return {"answer": str(part)}


def one_question_per_caption(item: Item) -> tuple[int, ...]:
    return (0, 1)


TASK_TYPE = TaskType(
    "baseline_t2i",
    ("group",),
    "Pick the image that BEST matches the caption. Word order matters.",
    build,
    expected,
    parts=one_question_per_caption,
    describe=chosen_image,
    model_like=True,
    baseline=Baseline(direction="t2i", part_outcomes=("tpos2i", "tneg2i"), beside_models=True),
    summary="which image best matches the caption? A human baseline (BiVLC: once per caption)",
)
