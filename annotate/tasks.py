"""Annotation task types as data: what an annotator sees, what they may answer, and how the shown
order maps back to the item.

A task is built by a pure function from an item, the part of it (BiVLC's human baseline asks
two independent questions per instance and direction) and a seed. The *stimuli* (which caption
or image is shown first, as (1) or A) are shuffled from that seed and their order recorded with
the label (``Task.displayed_order``), so position bias can be analysed; answers are stored in the
item's own terms. The *answer buttons* never move: each task type has fixed answers on fixed keys
(key 1 is "Altered caption is wrong" on every validate_negative item, "A" on every pick_image
item), or keyboard annotators make silent mistakes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

TASK_TYPES = (
    "validate_negative", "pick_image", "ambiguity", "baseline_i2t", "baseline_t2i", "rank_captions", "compare_negatives",
)
ITEM_KINDS_FOR_TASK = {
    "validate_negative": ("pair", "triple", "group"),
    "pick_image": ("candidates",),
    "ambiguity": ("group",),
    "baseline_i2t": ("pair", "group"),
    "baseline_t2i": ("group",),
    "rank_captions": ("triple",),
    "compare_negatives": ("retrieval",),
}

# The questions an answer holds, in the item's own terms (rank_0 is the rank of caption 0, whatever
# the display order), and the scale agreement is measured on: ranks are ordinal, the rest nominal.
ANSWER_QUESTIONS = {"rank_captions": ("rank_0", "rank_1", "rank_2"), "compare_negatives": ("commonsense", "grammar")}
AGREEMENT_LEVEL = {"rank_captions": "ordinal"}


def answer_questions(task_type: str) -> tuple[str, ...]:
    """The questions of one answer of this task type, each agreed on separately.

    >>> answer_questions("compare_negatives"), answer_questions("pick_image")
    (('commonsense', 'grammar'), ('answer',))
    """
    return ANSWER_QUESTIONS.get(task_type, ("answer",))


INSTRUCTIONS = {
    "validate_negative": (
        "You see an image, a caption that describes it, and an altered caption. Decide whether the "
        "altered caption is wrong for the image. If it is also true, say so: it is not a valid negative. "
        "Pay close attention to word order. Flag captions that make no sense or are ungrammatical."
    ),
    "pick_image": (
        "Read the description, then pick the image that shows all the information in it. "
        "Aesthetic defects (deformed hands or faces, odd textures) are accepted. If no image shows "
        "everything the description says, choose None."
    ),
    "ambiguity": (
        "Read the caption and pick the image it describes best. If it describes both equally well, "
        "choose Both."
    ),
    "baseline_i2t": (
        "Pick the caption that BEST matches the image. Word order matters: 'a dog on a cat' is not "
        "'a cat on a dog'."
    ),
    "baseline_t2i": "Pick the image that BEST matches the caption. Word order matters.",
    "rank_captions": (
        "Rank the three captions by how well they describe the image: 1 is best. Captions that are "
        "equally good may share a rank."
    ),
    "compare_negatives": (
        "Both altered captions should be wrong for the original. Judge them on two separate "
        "questions: which makes more sense (commonsense), and which is more grammatical."
    ),
}


class TaskError(ValueError):
    """An item cannot be shown as this task (wrong kind, or an answer out of range)."""


@dataclass(frozen=True)
class Option:
    """One choice shown to the annotator: `value` is what gets stored, in the item's terms.

    `shortcut` is the key that picks it (digits by position; "" where a form is submitted).
    """

    value: str
    label: str
    shortcut: str


@dataclass(frozen=True)
class Task:
    """Everything a page needs to show one question, and nothing it must compute."""

    type: str
    item_id: int
    part: int
    prompt: str
    captions: tuple[tuple[str, str], ...]  # (role shown, text), in display order
    images: tuple[tuple[str, str], ...]  # (label shown, relative path), in display order
    options: tuple[Option, ...]
    displayed_order: tuple[int, ...]  # item indices in the order shown
    questions: tuple[str, ...] = ("answer",)
    question_labels: tuple[str, ...] = ("answer",)
    extra: dict[str, Any] = field(default_factory=dict)


def parts_for(task_type: str, kind: str) -> tuple[int, ...]:
    """The independent questions an item yields: BiVLC baselines ask once per image / caption."""
    if task_type in ("baseline_i2t", "baseline_t2i") and kind == "group":
        return (0, 1)
    return (0,)


def build_task(task_type: str, item: dict[str, Any], part: int, seed: str) -> Task:
    """The task for one stored item (`store.list_items` row); same seed, same layout."""
    if task_type not in TASK_TYPES:
        raise TaskError(f"unknown task {task_type!r}; expected one of {TASK_TYPES}")
    if item["kind"] not in ITEM_KINDS_FOR_TASK[task_type]:
        raise TaskError(f"{task_type} needs items of kind {ITEM_KINDS_FOR_TASK[task_type]}, got {item['kind']}")
    rng = random.Random(f"{seed}:{item['id']}:{part}")
    return _BUILDERS[task_type](item, part, rng)


def _shuffled(rng: random.Random, n: int) -> list[int]:
    order = list(range(n))
    rng.shuffle(order)
    return order


def _validate_negative(item: dict[str, Any], part: int, rng: random.Random) -> Task:
    # The two captions are shown under their roles (the annotator must know which one is
    # altered), so there is no position to randomise; the answers keep keys 1-3 on every item.
    positive, negative = item["captions"][0], item["captions"][1]
    options = (
        Option("negative_false", "Altered is wrong", "1"),
        Option("negative_true", "Altered is also true", "2"),
        Option("unsure", "Unsure", "3"),
    )
    return Task(
        "validate_negative", item["id"], part, "Is the altered caption wrong for this image?",
        (("caption", positive), ("altered caption", negative)), (("image", item["images"][0]),) if item["images"] else (),
        options, (0, 1), extra={"flags": ("nonsensical", "ungrammatical")},
    )


def _pick_image(item: dict[str, Any], part: int, rng: random.Random) -> Task:
    order = _shuffled(rng, len(item["images"]))
    letters = [chr(ord("A") + n) for n in range(len(order))]
    options = [Option(str(i), letters[n], str(n + 1)) for n, i in enumerate(order)]
    return Task(
        "pick_image", item["id"], part, "Which image shows everything the description says?",
        (("description", item["captions"][0]),), tuple((letters[n], item["images"][i]) for n, i in enumerate(order)),
        (*options, Option("none", "None", "0")), tuple(order),
    )


def _ambiguity(item: dict[str, Any], part: int, rng: random.Random) -> Task:
    order = _shuffled(rng, 2)  # item image 0 is the original, 1 the generated one
    names = {0: "original", 1: "generated"}
    return Task(
        "ambiguity", item["id"], part, "Which image does the caption describe best?",
        (("caption", item["captions"][0]),), (("Left", item["images"][order[0]]), ("Right", item["images"][order[1]])),
        (Option(names[order[0]], "Left", "1"), Option(names[order[1]], "Right", "2"), Option("both", "Both", "3")),
        tuple(order),
    )


def _baseline_i2t(item: dict[str, Any], part: int, rng: random.Random) -> Task:
    order = _shuffled(rng, 2)
    image = item["images"][part] if item["images"] else ""
    captions = tuple((f"({n + 1})", item["captions"][i]) for n, i in enumerate(order))
    return Task(
        "baseline_i2t", item["id"], part, "Which caption BEST matches the image?", captions, (("image", image),),
        tuple(Option(str(i), f"Caption ({n + 1})", str(n + 1)) for n, i in enumerate(order)), tuple(order),
    )


def _baseline_t2i(item: dict[str, Any], part: int, rng: random.Random) -> Task:
    order = _shuffled(rng, 2)
    images = tuple((f"Image {chr(ord('A') + n)}", item["images"][i]) for n, i in enumerate(order))
    return Task(
        "baseline_t2i", item["id"], part, "Which image BEST matches the caption?", (("caption", item["captions"][part]),),
        images, tuple(Option(str(i), f"Image {chr(ord('A') + n)}", str(n + 1)) for n, i in enumerate(order)), tuple(order),
    )


def _rank_captions(item: dict[str, Any], part: int, rng: random.Random) -> Task:
    order = _shuffled(rng, 3)
    captions = tuple((f"({n + 1})", item["captions"][i]) for n, i in enumerate(order))
    return Task(
        "rank_captions", item["id"], part, "Rank the captions: 1 is best; equal captions may share a rank.",
        captions, (("image", item["images"][0]),) if item["images"] else (),
        tuple(Option(str(r), str(r), "") for r in (1, 2, 3)), tuple(order),
        questions=tuple(f"rank_{i}" for i in order), question_labels=tuple(f"rank of caption ({n + 1})" for n in range(3)),
    )


def _compare_negatives(item: dict[str, Any], part: int, rng: random.Random) -> Task:
    order = [1 + i for i in _shuffled(rng, 2)]  # caption 0 is the positive
    captions = (("original", item["captions"][0]), *((f"altered ({n + 1})", item["captions"][i]) for n, i in enumerate(order)))
    options = (Option(str(order[0]), "First", ""), Option(str(order[1]), "Second", ""), Option("tie", "Tie", ""))
    return Task(
        "compare_negatives", item["id"], part, "Which altered caption is better on each question?", captions, (),
        options, tuple(order), questions=("commonsense", "grammar"),
        question_labels=("Which makes more sense?", "Which is more grammatical?"),
    )


_BUILDERS = {
    "validate_negative": _validate_negative, "pick_image": _pick_image, "ambiguity": _ambiguity,
    "baseline_i2t": _baseline_i2t, "baseline_t2i": _baseline_t2i, "rank_captions": _rank_captions,
    "compare_negatives": _compare_negatives,
}


def check_answer(task: Task, answer: dict[str, Any]) -> dict[str, Any]:
    """Return `answer` if every question has an allowed value, else raise TaskError."""
    allowed = {option.value for option in task.options}
    for question in task.questions:
        if str(answer.get(question)) not in allowed:
            raise TaskError(f"{task.type}: {question} must be one of {sorted(allowed)}, got {answer.get(question)!r}")
    return {q: str(answer[q]) for q in task.questions}


def expected_answer(task_type: str, item: dict[str, Any], part: int = 0) -> dict[str, str] | None:
    """The right answer where the item's ground truth says it (gold items, simulated annotators)."""
    truth = item.get("truth") or {}
    if task_type == "validate_negative" and "negative" in truth:
        return {"answer": {"false": "negative_false", "true": "negative_true"}.get(truth["negative"], "unsure")}
    if task_type == "pick_image" and "valid" in truth:
        return {"answer": "none" if truth.get("best") is None else str(truth["best"])}
    if task_type == "ambiguity" and "ambiguous" in truth:
        return {"answer": "both" if truth["ambiguous"] else "original"}
    if task_type == "baseline_i2t":
        return {"answer": str(part)}
    if task_type == "baseline_t2i":
        return {"answer": str(part)}
    if task_type == "rank_captions" and "negative" in truth:
        return {"rank_0": "1", "rank_1": "2", "rank_2": "1"}  # c and c_p tie first, c_n after
    return None


def is_correct(task_type: str, item: dict[str, Any], part: int, answer: dict[str, Any]) -> bool | None:
    """Whether an answer matches the known truth; None where no truth is known.

    pick_image counts any valid candidate as right, not only the first; rank_captions is right
    when the caption and its hard positive share the best rank and the negative ranks lower.
    """
    truth = item.get("truth") or {}
    if task_type == "rank_captions" and "negative" in truth:
        ranks = [int(answer.get(f"rank_{i}", 0)) for i in range(3)]
        return ranks[0] == ranks[2] < ranks[1]
    if task_type == "pick_image" and "valid" in truth:
        choice = answer.get("answer")
        return choice == "none" if not any(truth["valid"]) else choice != "none" and truth["valid"][int(choice)]
    expected = expected_answer(task_type, item, part)
    return None if expected is None else all(answer.get(k) == v for k, v in expected.items())
