"""What every task type is made of, and the task a page shows.

A task type is one record (``TaskType``) in its own module of this package. Its ``build``
function turns a stored item into a ``Task`` from the item, the part of it asked about (BiVLC's
human baseline asks two independent questions per instance and direction) and a seed. The
*stimuli* (which caption or image is shown first, as (1) or A) are shuffled from that seed and
their order recorded with the label (``Task.displayed_order``), so position bias can be
analysed; answers are stored in the item's own terms. The *answer buttons* never move: each
task type has fixed answers on fixed keys (key 1 is "Altered is wrong" on every
validate_negative item, "A" on every pick_image item), or keyboard annotators make silent
mistakes.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from foil_studio.data.item_kinds import item_kind

Item = Mapping[str, Any]  # a stored item (`store.list_items` row)
Answer = Mapping[str, Any]


class TaskError(ValueError):
    """An item cannot be shown as this task (wrong item kind, or an answer out of range)."""


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


def single_part(item: Item) -> tuple[int, ...]:
    """One question per item (most task types)."""
    return (0,)


def no_expected_answer(item: Item, part: int) -> dict[str, str] | None:
    """No answer is known to be right (ambiguity judgements, comparisons of negatives)."""
    return None


def as_given(value: str) -> str:
    """Agreement on the answer itself."""
    return value


@dataclass(frozen=True)
class Baseline:
    """How a task type's majority answers become a human baseline (`annotate.baselines`).

    ``metric`` is the key of each question's outcome and ``macro``, where set, the key of its mean
    over categories; ``direction`` and ``part_outcomes``, for the two questions of a BiVLC group,
    name the direction the task asks and BiVLC's outcome of part 0 and of part 1;
    ``beside_models``: its figures are the models' own metrics, drawn beside their runs.
    """

    metric: str = "accuracy_micro"
    macro: str | None = "accuracy_macro"
    direction: str = ""
    part_outcomes: tuple[str, ...] = ()
    beside_models: bool = False


@dataclass(frozen=True)
class TaskType:
    """One annotation task type: everything the batches, agreement, exports and pages need.

    * ``build(item, part, rng)`` lays the task out; ``parts(item)`` lists the questions an item yields;
    * ``expected(item, part)`` is the right answer where the item's truth says it, and
      ``correct(item, part, answer)`` (default: equal to ``expected``) judges an answer;
    * ``questions`` are the questions of one answer, each agreed on separately, on the
      ``agreement_level`` scale, after ``agreement_code`` maps each value (pick_image: image/none);
    * ``keep``/``drop_reasons``/``clean_format``: for construction tasks, the consensus answers
      kept in the cleaned export, why the others are removed, and the benchmark format written;
    * ``describe(item, value)`` says one answer value in the item's terms ("chose the negative")
      where the option's label names a display position ("Caption (1)"), and ``question_words``
      a question whose label does; ``answer_words`` is the one way an answer is put in words;
    * ``baseline``/``model_like``: how its majority answers give a human baseline (None: they
      give none), and whether they answer the model's own question;
    * ``next_step``: the task type a batch's answers are built into next (pick_image's chosen
      images become groups for ambiguity, BiVLC's step 2);
    * ``summary``: what it asks, in a few words (the task table of docs/annotation.md);
    * ``example_kind``: the item kind its tests and that task table lay out (default: the first of
      ``item_kinds``; the demo holds one dataset of each item kind, ``data.demo.DEMO_DATASETS``);
    * ``shuffles``: whether ``build`` shuffles the stimuli (False where captions are shown under
      their roles, so there is no position to randomise). The answer buttons never move:
      ``buttons(item)`` reads them off ``build``;
    * ``flags``: what an annotator may flag beside an answer (My queue offers exactly these);
    * ``verdict_of_answer``: where its answers judge the item's negative, the verdict each gives
      (valid, invalid, ambiguous: ``negative_validation()``, which Benchmark health samples into).
    """

    name: str
    item_kinds: tuple[str, ...]
    instructions: str
    build: Callable[[Item, int, random.Random], Task]
    expected: Callable[[Item, int], dict[str, str] | None] = no_expected_answer
    correct: Callable[[Item, int, Answer], bool | None] | None = None
    parts: Callable[[Item], tuple[int, ...]] = single_part
    questions: tuple[str, ...] = ("answer",)
    agreement_level: str = "nominal"
    agreement_code: Callable[[str], str] = as_given
    keep: frozenset[str] = frozenset()
    drop_reasons: Mapping[str, str] = field(default_factory=dict)
    clean_format: str | None = None
    baseline: Baseline | None = None
    model_like: bool = False
    next_step: str | None = None
    describe: Callable[[Item, str], str] | None = None
    question_words: Callable[[Item, str], str] | None = None
    summary: str = ""
    example_kind: str = ""
    shuffles: bool = True
    flags: tuple[str, ...] = ("ambiguous",)
    verdict_of_answer: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.example_kind:
            object.__setattr__(self, "example_kind", self.item_kinds[0])
        if self.example_kind not in self.item_kinds:
            raise ValueError(f"{self.name}: example_kind {self.example_kind!r} is not one of {self.item_kinds}")

    def buttons(self, item: Item) -> tuple[tuple[str, str], ...]:
        """The answer buttons (label, key) in the order shown: the same for every seed."""
        return tuple((o.label, o.shortcut) for o in self.build(item, 0, random.Random(0)).options)

    @property
    def human_baseline(self) -> bool:
        """Its majority answers give a human baseline."""
        return self.baseline is not None

    def answer_words(self, item: Item, part: int, answer: Answer) -> str:
        """An answer in words, as the answer charts, the adjudication table and the item cards
        say it: each question's value by `describe` (or its option's label), "question: value"
        per question when there are several."""
        labels = {o.value: o.label for o in self.build(item, part, random.Random(0)).options}
        describe = self.describe
        word = (lambda v: describe(item, v)) if describe else (lambda v: labels.get(v, v))
        if self.questions == ("answer",):
            return word(str(answer.get("answer")))
        name = (lambda q: self.question_words(item, q)) if self.question_words else (lambda q: q)
        return "; ".join(f"{name(q)}: {word(str(answer.get(q)))}" for q in self.questions)

    def is_correct(self, item: Item, part: int, answer: Answer) -> bool | None:
        """Whether an answer matches the known truth; None where no truth is known."""
        if self.correct is not None:
            return self.correct(item, part, answer)
        expected = self.expected(item, part)
        return None if expected is None else all(answer.get(k) == v for k, v in expected.items())


def chosen_caption(item: Item, value: str) -> str:
    """An answer naming one of the item's captions by index, said by the caption's role.

    >>> chosen_caption({"kind": "pair", "captions": ["a dog on a cat", "a cat on a dog"]}, "1")
    'chose the negative'
    """
    roles = item_kind(item["kind"]).caption_roles(len(item["captions"]))
    return f"chose the {roles[int(value)]}" if value.isdigit() and int(value) < len(roles) else value


def chosen_image(item: Item, value: str) -> str:
    """An answer naming one of the item's images by index, said by the image's role."""
    roles = item_kind(item["kind"]).image_roles(len(item["images"]))
    return f"chose the {roles[int(value)]}" if value.isdigit() and int(value) < len(roles) else value


def shuffled(rng: random.Random, n: int) -> list[int]:
    """0..n-1 in the seeded random order the stimuli are shown in."""
    order = list(range(n))
    rng.shuffle(order)
    return order


def letter(n: int) -> str:
    """A, B, C... for the n-th image shown."""
    return chr(ord("A") + n)


def truth(item: Item) -> Mapping[str, Any]:
    """What the item's source says is true (empty when nothing is known)."""
    return item.get("truth") or {}
