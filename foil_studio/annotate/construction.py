"""BiVLC construction: the survivors of a pick_image batch (majority choice per candidate set)
become BiVLC groups in a new dataset, and an ambiguity batch over them."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import sqlite_utils

from foil_studio.annotate.batches import SPEC_DEFAULTS, BatchError, BatchSpec, create_batch
from foil_studio.annotate.task_types import TASK_TYPES, task_type
from foil_studio.data import store

# The task types whose batches' chosen images are built into a next step's batch (`TaskType.next_step`).
STEP_TASKS = tuple(name for name in TASK_TYPES if task_type(name).next_step)


def majority_choice(answers: list[str]) -> str | None:
    """The construction decision of one candidate set from its annotators' picks.

    Tie policy: any "none" among tied top answers drops the item (conservative, as BiVLC drops
    instances a human rejects); a tie between two images keeps the lower candidate index.

    >>> majority_choice(["2", "2", "none"]), majority_choice(["1", "none"]), majority_choice(["3", "1"])
    ('2', None, '1')
    """
    counts = Counter(answers)
    top = max(counts.values())
    tied = sorted(a for a, n in counts.items() if n == top)
    if "none" in tied:
        return None
    return tied[0]


def pick_image_survivors(db: sqlite_utils.Database, batch_name: str) -> list[tuple[store.ItemRow, int]]:
    """(candidate item, chosen candidate index) for every item the batch keeps: a batch of a task
    type with a next step (`TaskType.next_step`: pick_image)."""
    batch = store.get_batch(db, batch_name)
    if task_type(batch["task_type"]).next_step is None:
        raise BatchError(f"{batch_name} is a {batch['task_type']} batch, not {' or '.join(STEP_TASKS)}")
    answers: dict[int, list[str]] = {}
    for label in store.batch_labels(db, batch["id"]):
        if not label["is_gold"]:
            answers.setdefault(label["item"], []).append(label["answer"]["answer"])
    items = store.items_by_id(db, answers)
    chosen = {item_id: majority_choice(picks) for item_id, picks in answers.items()}
    return [(items[i], int(c)) for i, c in sorted(chosen.items()) if c is not None]


def create_ambiguity_batch(
    db: sqlite_utils.Database,
    pick_batch: str,
    *,
    annotators: tuple[str, ...] | None = None,
    overlap: int | None = None,
    seed: int = 0,
    name: str | None = None,
) -> dict[str, Any]:
    """Turn the survivors of a pick_image batch into BiVLC groups and an ambiguity batch over them.

    The chosen candidate becomes each group's negative image I1; the source image and positive
    caption are I0 and C0. The groups form a new dataset `<candidates dataset>-constructed`. By
    default the pick batch's annotators hold the new batch, each item seen by two of them (or one,
    when there is only one).
    """
    from foil_studio.data.formats import Parsed
    from foil_studio.data.formats.made_here import CONSTRUCTION
    from foil_studio.data.items import Item
    from foil_studio.data.loading import store_parsed

    survivors = pick_image_survivors(db, pick_batch)
    if not survivors:
        raise BatchError(f"no item of {pick_batch} has a chosen image yet")
    source = store.get_dataset(db, store.get_batch(db, pick_batch)["dataset"])
    target = f"{source['name']}-constructed"
    parsed = Parsed(CONSTRUCTION.name, target)
    for item, choice in survivors:
        group = Item(
            kind="group",
            category=item["category"],
            source_id=f"{item['source_id']}#{choice}",
            captions=(item["meta"]["positive_caption"], item["captions"][0]),
            images=(item["meta"]["source_image"], item["images"][choice]),
            truth=_constructed_truth(item, choice),
            meta={"from_batch": pick_batch, "candidate_item": item["id"], "chosen": choice},
        )
        parsed.add(group, f"batch:{pick_batch}", item["id"])
    root = Path(source["image_root"]) if source["image_root"] else None
    store_parsed(db, parsed, source_format=CONSTRUCTION.name, path=f"batch:{pick_batch}", images=root, name=target)
    ids = tuple(
        i["id"]
        for i in store.list_items(db, store.get_dataset(db, target)["id"], limit=1 << 62)
        if i["meta"].get("from_batch") == pick_batch
    )
    picked = store.get_batch(db, pick_batch)
    holders = annotators or tuple(sorted({a["annotator"] for a in store.batch_assignments(db, picked["id"])}))
    overlap = overlap or min(SPEC_DEFAULTS["overlap"], len(holders))
    follow = task_type(picked["task_type"]).next_step or ""  # ambiguity
    return create_batch(db, BatchSpec(target, follow, holders, overlap, item_ids=ids, seed=seed, name=name))


def _constructed_truth(item: store.ItemRow, choice: int) -> dict[str, Any]:
    """Ground truth carried over from a candidate set, where the source knows it (the demo)."""
    truth = item.get("truth") or {}
    known = {"valid_choice": truth["valid"][choice]} if "valid" in truth else {}
    ambiguous = (truth.get("ambiguous_candidates") or {}).get(str(choice))
    return {**known, "ambiguous": ambiguous} if ambiguous is not None else known
