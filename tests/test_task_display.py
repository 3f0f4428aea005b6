"""What the annotator sees is what the stored answer means: each task shows the item's own
captions and images under the right roles, every answer button stores the item index (or name)
of the stimulus it is drawn beside, and the buttons with their keys never move; only the stimuli
are shuffled, reproducibly per seed.
"""

from __future__ import annotations

import pytest

from foil_studio.annotate.task_types import REGISTRY, TASK_TYPES, build_task, parts_for
from foil_studio.data import store
from foil_studio.plugin_checks import check_task_buttons, check_task_layout
from tests.conftest import DATASET_FOR_TASK


def tasks_of(db, task_type: str, seed: str = "s", n: int = 24):
    dataset = store.get_dataset(db, DATASET_FOR_TASK[task_type])
    items = store.list_items(db, dataset["id"], limit=n)
    return [(item, build_task(task_type, item, part, seed)) for item in items for part in parts_for(task_type, item)]


def demo_items(db, task_type: str, n: int = 24):
    """The first `n` items of the demo dataset of the task type's example kind."""
    dataset = store.get_dataset(db, DATASET_FOR_TASK[task_type])
    return store.list_items(db, dataset["id"], limit=n)


@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_answer_buttons_and_keys_are_the_same_on_every_item(demo_db, task_type):
    """Each item shows its task type's buttons (`TaskType.buttons`, whose labels and keys the task
    type modules' doctests spell out), and items of one shape show the same ones: the generic
    check a plugin's task type passes too (`plugin_checks.check_task_buttons`)."""
    check_task_buttons(REGISTRY[task_type], demo_items(demo_db, task_type))


@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_stimuli_are_shuffled_per_item_and_reproducible_per_seed(demo_db, task_type):
    """Shown under their roles (`shuffles=False`): always in the item's order; otherwise shuffled
    per item and per seed, the same seed giving the same layout (`plugin_checks.check_task_layout`)."""
    check_task_layout(REGISTRY[task_type], demo_items(demo_db, task_type))


def test_validate_negative_shows_the_caption_and_the_altered_caption_under_their_roles(demo_db):
    for item, task in tasks_of(demo_db, "validate_negative"):
        assert task.captions == (("caption", item["captions"][0]), ("altered caption", item["captions"][1]))
        assert task.images == (("image", item["images"][0]),)
        assert [o.value for o in task.options] == ["negative_false", "negative_true", "unsure"]


def test_each_pick_image_button_stores_the_image_drawn_under_its_letter(demo_db):
    for item, task in tasks_of(demo_db, "pick_image"):
        assert task.captions == (("description", item["captions"][0]),)
        shown = dict(task.images)
        for option in task.options[:-1]:
            assert shown[option.label] == item["images"][int(option.value)]
        assert sorted(shown.values()) == sorted(item["images"]) and task.options[-1].value == "none"


def test_each_ambiguity_button_names_the_image_drawn_on_its_side(demo_db):
    for item, task in tasks_of(demo_db, "ambiguity"):
        assert task.captions == (("caption", item["captions"][0]),)
        shown = dict(task.images)
        names = {"original": item["images"][0], "generated": item["images"][1]}
        left, right, both = task.options
        assert shown["Left"] == names[left.value] and shown["Right"] == names[right.value] and both.value == "both"


def test_each_image_to_text_button_stores_the_caption_drawn_under_its_number(demo_db):
    for item, task in tasks_of(demo_db, "baseline_i2t"):
        assert task.images == (("image", item["images"][task.part]),)
        shown = dict(task.captions)
        for number, option in enumerate(task.options, 1):
            assert shown[f"({number})"] == item["captions"][int(option.value)]


def test_each_text_to_image_button_stores_the_image_drawn_under_its_letter(demo_db):
    for item, task in tasks_of(demo_db, "baseline_t2i"):
        assert task.captions == (("caption", item["captions"][task.part]),)
        shown = dict(task.images)
        for option in task.options:
            assert shown[option.label] == item["images"][int(option.value)]


def test_each_rank_question_names_the_caption_drawn_at_its_place(demo_db):
    for item, task in tasks_of(demo_db, "rank_captions"):
        assert task.images == (("image", item["images"][0]),)
        assert [text for _, text in task.captions] == [
            item["captions"][int(q.removeprefix("rank_"))] for q in task.questions
        ]
        assert [role for role, _ in task.captions] == ["(1)", "(2)", "(3)"]
        assert task.question_labels == ("rank of caption (1)", "rank of caption (2)", "rank of caption (3)")


def test_compare_negatives_shows_the_original_and_each_button_stores_the_altered_caption_it_names(demo_db):
    for item, task in tasks_of(demo_db, "compare_negatives"):
        assert task.captions[0] == ("original", item["captions"][0])
        shown = dict(task.captions[1:])
        first, second, tie = task.options
        assert shown["altered (1)"] == item["captions"][int(first.value)]
        assert shown["altered (2)"] == item["captions"][int(second.value)]
        assert {int(first.value), int(second.value)} == {1, 2} and tie.value == "tie"
        assert task.questions == ("commonsense", "grammar")
