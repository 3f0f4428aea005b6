"""baseline_i2t: the human baseline of image-to-text: which caption best matches the image?"""

from __future__ import annotations

import random

from foil_studio.annotate.task_types.base import Baseline, Item, Option, Task, TaskType, chosen_caption, shuffled
from foil_studio.data.item_kinds import item_kind


def build(item: Item, part: int, rng: random.Random) -> Task:
    """Lay out one item; its answer buttons (label, key) are the same on every group item:

    >>> from foil_studio.data.item_kinds import item_kind
    >>> TASK_TYPE.buttons(item_kind("group").example)
    (('Caption (1)', '1'), ('Caption (2)', '2'))
    """
    order = shuffled(rng, 2)
    image = item["images"][part] if item["images"] else ""
    captions = tuple((f"({n + 1})", item["captions"][i]) for n, i in enumerate(order))
    return Task(
        "baseline_i2t",
        item["id"],
        part,
        "Which caption BEST matches the image?",
        captions,
        (("image", image),),
        tuple(Option(str(i), f"Caption ({n + 1})", str(n + 1)) for n, i in enumerate(order)),
        tuple(order),
    )


def expected(item: Item, part: int) -> dict[str, str]:
    """Caption `part` belongs to image `part` (a pair asks once: the positive, caption 0)."""
    return {"answer": str(part)}


def one_question_per_image(item: Item) -> tuple[int, ...]:
    """One question per image of the item's kind: BiVLC asks about each of a group's two images
    on its own, a pair asks once."""
    return tuple(range(item_kind(item["kind"]).n_images or 1))


TASK_TYPE = TaskType(
    "baseline_i2t",
    ("pair", "group"),
    "Pick the caption that BEST matches the image. Word order matters: 'a dog on a cat' is not 'a cat on a dog'.",
    build,
    expected,
    parts=one_question_per_image,
    describe=chosen_caption,
    model_like=True,
    baseline=Baseline(direction="i2t", part_outcomes=("ipos2t", "ineg2t"), beside_models=True),
    summary="which caption best matches the image? A human baseline (BiVLC: once per image)",
    example_kind="group",
)
