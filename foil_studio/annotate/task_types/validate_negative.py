"""validate_negative: is the altered caption really wrong for the image? (SugarCrepe, BiVLC; on a
retrieval item such as ARO's order sets, one question per negative.)"""

from __future__ import annotations

import random

from foil_studio.annotate.task_types.base import Baseline, Item, Option, Task, TaskType, truth
from foil_studio.data.item_kinds import CAPTION_PAIR_KINDS, negative_captions, source_verdict


def build(item: Item, part: int, rng: random.Random) -> Task:
    """Lay out one item; its answer buttons (label, key) are the same on every pair item:

    >>> from foil_studio.data.item_kinds import item_kind
    >>> TASK_TYPE.buttons(item_kind("pair").example)
    (('Altered is wrong', '1'), ('Altered is also true', '2'), ('Unsure', '3'))
    """
    # The two captions are shown under their roles (the annotator must know which one is
    # altered), so there is no position to randomise; the answers keep keys 1-3 on every item.
    options = (
        Option("negative_false", "Altered is wrong", "1"),
        Option("negative_true", "Altered is also true", "2"),
        Option("unsure", "Unsure", "3"),
    )
    return Task(
        "validate_negative",
        item["id"],
        part,
        "Is the altered caption wrong for this image?",
        (("caption", item["captions"][0]), ("altered caption", item["captions"][negative_captions(item)[part]])),
        (("image", item["images"][0]),) if item["images"] else (),
        options,
        (0, 1),
    )


def one_question_per_negative(item: Item) -> tuple[int, ...]:
    """Part k asks about the item's k-th negative (`negative_captions`): a retrieval item's every
    negative (ARO's order sets: a perturbation may happen to be a valid caption), a pair's one.

    >>> one_question_per_negative({"kind": "retrieval", "captions": ["c", "n1", "n2", "n3"]})
    (0, 1, 2)
    """
    return tuple(range(len(negative_captions(item))))


VERDICT_OF_ANSWER = {"negative_false": "valid", "negative_true": "invalid", "unsure": "ambiguous"}


def expected(item: Item, part: int) -> dict[str, str] | None:
    """The answer the item's source gives (`source_verdict`: the demo's truth, VALSE's crowd rule)."""
    verdict = source_verdict(truth(item))
    answer_of_verdict = {verdict: answer for answer, verdict in VERDICT_OF_ANSWER.items()}
    return None if verdict is None else {"answer": answer_of_verdict[verdict]}


TASK_TYPE = TaskType(
    "validate_negative",
    (*CAPTION_PAIR_KINDS, "retrieval"),
    "You see an image, a caption that describes it, and an altered caption. Decide whether the "
    "altered caption is wrong for the image. If it is also true, say so: it is not a valid negative. "
    "Pay close attention to word order. Flag captions that make no sense or are ungrammatical.",
    build,
    expected,
    keep=frozenset({"negative_false"}),
    drop_reasons={
        "negative_true": "false negative: the altered caption is also true",
        "unsure": "annotators unsure whether the negative is wrong",
    },
    clean_format="sugarcrepe",
    baseline=Baseline(),
    summary="is the altered caption really wrong for the image? Flags nonsensical and ungrammatical captions; "
    "a retrieval item asks once per negative",
    shuffles=False,
    parts=one_question_per_negative,
    flags=("ambiguous", "nonsensical", "ungrammatical"),
    verdict_of_answer=VERDICT_OF_ANSWER,
)
