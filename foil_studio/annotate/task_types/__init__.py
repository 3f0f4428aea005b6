"""The annotation task types: one module each, listed once in ``REGISTRY``.

Batches, agreement, cleaned exports, human baselines, the CLI's ``--task-type`` choices, the
Batches page's select box and the task table of docs/annotation.md (``task_table``) all read this registry; a
new task type is a new module defining a ``TASK_TYPE`` record (``base.TaskType``) and one line below,
or an installed package's entry point in group ``foil_studio.task_types`` (docs/plugins.md).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from foil_studio.annotate.task_types import (
    ambiguity,
    baseline_i2t,
    baseline_t2i,
    compare_negatives,
    pick_image,
    rank_captions,
    validate_negative,
)
from foil_studio.annotate.task_types.base import Answer, Baseline, Item, Option, Task, TaskError, TaskType
from foil_studio.data import plugins
from foil_studio.data.item_kinds import item_kind

# The built-in task types, then each installed plugin's (`data.plugins`, entry-point group foil_studio.task_types).
REGISTRY: plugins.Registry[TaskType] = plugins.Registry(
    plugins.TASK_TYPES,
    TaskType,
    (
        validate_negative.TASK_TYPE,
        pick_image.TASK_TYPE,
        ambiguity.TASK_TYPE,
        baseline_i2t.TASK_TYPE,
        baseline_t2i.TASK_TYPE,
        rank_captions.TASK_TYPE,
        compare_negatives.TASK_TYPE,
    ),
)
if TYPE_CHECKING:  # computed on first use, with the registry (`__getattr__` below)
    TASK_TYPES: tuple[str, ...]
__getattr__ = plugins.lazy_names(globals(), TASK_TYPES=lambda: tuple(REGISTRY))

__all__ = [
    "REGISTRY",
    "TASK_TYPES",
    "Baseline",
    "Option",
    "Task",
    "TaskError",
    "TaskType",
    "task_type",
    "negative_validation",
    "build_task",
    "check_answer",
    "expected_answer",
    "is_correct",
    "parts_for",
    "answer_questions",
    "task_table",
]


def negative_validation() -> TaskType:
    """The task type whose answers judge an item's negative (its ``verdict_of_answer``): what
    Benchmark health samples into and the validated-negatives exports read."""
    return next(t for t in REGISTRY.values() if t.verdict_of_answer)


def task_type(name: str) -> TaskType:
    """The registered task type called `name`; TaskError names the known ones otherwise."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise TaskError(f"unknown task type {name!r}; expected one of {tuple(REGISTRY)}") from None


def build_task(name: str, item: Item, part: int, seed: str) -> Task:
    """The task for one stored item (`store.list_items` row); same seed, same layout."""
    asked = task_type(name)
    if item["kind"] not in asked.item_kinds:
        raise TaskError(f"{name} needs items of kind {asked.item_kinds}, got {item['kind']}")
    return asked.build(item, part, random.Random(f"{seed}:{item['id']}:{part}"))


def parts_for(name: str, item: Item) -> tuple[int, ...]:
    """The independent questions an item yields: BiVLC baselines ask once per image / caption,
    validate_negative once per negative of a retrieval item."""
    return task_type(name).parts(item)


def answer_questions(name: str) -> tuple[str, ...]:
    """The questions of one answer of this task type, each agreed on separately.

    >>> answer_questions("compare_negatives"), answer_questions("pick_image")
    (('commonsense', 'grammar'), ('answer',))
    """
    return task_type(name).questions


def check_answer(task: Task, answer: Answer) -> dict[str, Any]:
    """Return `answer` if every question has an allowed value, else raise TaskError."""
    allowed = {option.value for option in task.options}
    for question in task.questions:
        if str(answer.get(question)) not in allowed:
            raise TaskError(f"{task.type}: {question} must be one of {sorted(allowed)}, got {answer.get(question)!r}")
    return {q: str(answer[q]) for q in task.questions}


def expected_answer(name: str, item: Item, part: int = 0) -> dict[str, str] | None:
    """The right answer where the item's ground truth says it (gold items, simulated annotators)."""
    return task_type(name).expected(item, part)


def is_correct(name: str, item: Item, part: int, answer: Answer) -> bool | None:
    """Whether an answer matches the known truth; None where no truth is known.

    pick_image counts any valid candidate as right, not only the first; rank_captions is right
    when the caption and its hard positive share the best rank and the negative ranks lower.
    """
    return task_type(name).is_correct(item, part, answer)


def task_table() -> str:
    """The task table of docs/annotation.md, one row per registered type, its answers as `build` lays
    them out on its example item.

    >>> task_table().splitlines()[0]
    '| task type | items | asks | answers (keys) |'
    """
    rows = ["| task type | items | asks | answers (keys) |", "| --- | --- | --- | --- |"]
    for t in REGISTRY.values():
        name = plugins.marked(plugins.TASK_TYPES, t.name)
        rows.append(f"| {name} | {', '.join(t.item_kinds)} | {t.summary} | {_answers_in_words(t)} |")
    return "\n".join(rows)


def _answers_in_words(asked: TaskType) -> str:
    """ "Left `1`, Right `2`, Both `3`" (label and key); a task type of several questions names them."""
    shown = asked.build(item_kind(asked.example_kind).example, 0, random.Random(0))
    answers = ", ".join(f"{o.label} `{o.shortcut}`" if o.shortcut else o.label for o in shown.options)
    return answers if shown.questions == ("answer",) else f"{answers}, for each of: {' / '.join(shown.question_labels)}"
