"""grammatical_negative: is the altered caption grammatical English? A negative that is not can be
told from the caption by a text-only model, image unseen (SugarCrepe's finding); the answers say
which negatives to rewrite. The image is not shown: grammar needs none."""

from __future__ import annotations

import random

from foil_studio.annotate.task_types.base import Item, Option, Task, TaskType
from foil_studio.data.item_kinds import negative_captions

OPTIONS = (
    Option("grammatical", "Grammatical", "1"),
    Option("ungrammatical", "Ungrammatical", "2"),
    Option("unsure", "Unsure", "3"),
)


def build(item: Item, part: int, rng: random.Random) -> Task:
    """The altered caption alone, with the same three buttons on every item:

    >>> from foil_studio.data.item_kinds import item_kind
    >>> TASK_TYPE.buttons(item_kind("pair").example)
    (('Grammatical', '1'), ('Ungrammatical', '2'), ('Unsure', '3'))
    """
    negative = negative_captions(item)[0]
    return Task(
        "grammatical_negative",
        item["id"],
        part,
        "Is this caption grammatical English?",
        (("altered caption", item["captions"][negative]),),
        (),
        OPTIONS,
        (negative,),
    )


TASK_TYPE = TaskType(
    "grammatical_negative",
    ("pair", "triple"),
    "Read the caption and say whether it is grammatical English, whatever it describes. "
    "Press 1 (grammatical), 2 (ungrammatical) or 3 (unsure).",
    build,
    summary="is the altered caption grammatical English?",
    shuffles=False,
)
