"""Serving an annotator's queue: the next item (`queue_state` reads, `draw` puts it on screen and
starts its lease and timer), its images, storing an answer under the batch's reading-time rule
(`submit_answer`), and leases: work an annotator walked away from goes to someone else."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlite_utils

from foil_studio.annotate.batches import MIN_SECONDS, setting
from foil_studio.annotate.crowd_studies import free_abandoned_units, top_up
from foil_studio.annotate.task_types import Task, build_task, check_answer
from foil_studio.data import store
from foil_studio.data.images import existing_image, thumbnail
from foil_studio.data.paths import thumbnail_dir


@dataclass(frozen=True)
class QueueState:
    """Where an annotator stands in one batch: the next task (None when done) and progress.

    `started_at` is None until the item is drawn (`draw`): reading the queue starts no lease.
    """

    batch: store.BatchRow
    task: Task | None
    assignment_id: int | None
    started_at: str | None
    done: int
    assigned: int


def queue_state(db: sqlite_utils.Database, annotator_id: int, batch_name: str) -> QueueState:
    """The annotator's first unanswered item of the batch (a refresh resumes here). Reads only.

    An annotator whose every item went to others (leases ran out) holds nothing: 0 of 0.
    """
    return _queue_state(db, annotator_id, store.get_batch(db, batch_name))


def _queue_state(db: sqlite_utils.Database, annotator_id: int, batch: store.BatchRow) -> QueueState:
    # Scoped to this annotator's assignments (indexed), not the whole batch: this runs on every answer.
    mine = next((b for b in store.annotator_batches(db, annotator_id) if b["id"] == batch["id"]), None)
    if mine is None:
        return QueueState(batch, None, None, None, 0, 0)
    done, assigned = int(mine["done"]), int(mine["assigned"])
    upcoming = store.unanswered_assignments(db, annotator_id, batch["id"])
    if not upcoming:
        return QueueState(batch, None, None, None, done, assigned)
    nxt = upcoming[0]
    item = store.items_by_id(db, [nxt["item_id"]])[nxt["item_id"]]
    task = build_task(batch["task_type"], item, nxt["part"], seed=_task_seed(batch, annotator_id))
    return QueueState(batch, task, nxt["id"], nxt["opened_at"], done, assigned)


def draw(db: sqlite_utils.Database, annotator_id: int, batch_name: str) -> QueueState:
    """The annotator's next item as it is put on screen: its lease and timer start now (once).
    A crowd participant is first dealt units up to their window (`top_up`)."""
    batch = store.get_batch(db, batch_name)
    if "crowd_token" in batch["config"]:
        top_up(db, batch, annotator_id)
    state = _queue_state(db, annotator_id, batch)  # the batch read once per draw: this runs on every answer
    if state.assignment_id is None or state.started_at is not None:
        return state
    return replace(state, started_at=store.open_assignment(db, state.assignment_id))


def batches_waiting(progress: list[dict[str, Any]], finished: str) -> list[str]:
    """The names of an annotator's batches other than `finished` that still hold items for them, in
    their order (`progress`: `store.annotator_batches` rows).

    >>> batches_waiting([{"name": "a", "done": 2, "assigned": 2}, {"name": "b", "done": None, "assigned": 3},
    ...                  {"name": "c", "done": 1, "assigned": 1}], "a")
    ['b']
    """
    return [row["name"] for row in progress if row["name"] != finished and (row["done"] or 0) < row["assigned"]]


def _task_seed(batch: store.BatchRow, annotator_id: int) -> str:
    return f"{batch['config']['seed']}:{annotator_id}"


def task_images(db: sqlite_utils.Database, batch: store.BatchRow, task: Task) -> list[tuple[str, Path | None]]:
    """The task's images as cached thumbnails of the files under the dataset's image root
    (None where a file is missing or unreadable)."""
    root_text = store.get_dataset(db, batch["dataset"])["image_root"]
    root = Path(root_text) if root_text else None
    where = store.location(db)
    cache = thumbnail_dir(where) if where else None
    files = [(label, existing_image(root, reference)) for label, reference in task.images]
    return [(label, thumbnail(path, cache) if path and cache else path) for label, path in files]


def submit_answer(
    db: sqlite_utils.Database,
    annotator_id: int,
    batch_name: str,
    task: Task,
    answer: dict[str, Any],
    *,
    flags: list[str] | None = None,
    comment: str = "",
    require_shown: bool = False,
    simulated: bool = False,
) -> bool:
    """Store one answer to the item `task` was built for; True if stored now, False if that item
    already had this annotator's answer (nothing is stored twice).

    The batch's reading time (`reading_seconds`) applies: an answer sooner after the item was
    drawn is refused. `require_shown` says the caller's browser reports the whole item on screen
    (`mark_shown`, as the annotator page does): in a batch with a reading time, an answer before
    that report is refused and the time counts from it. Raises TaskError for an answer outside
    the task's options and store.LabelRefused when the item is not (or no longer) the
    annotator's, was never drawn for them, or came too soon: nothing is stored then.
    """
    batch = store.get_batch(db, batch_name)
    clean = check_answer(task, answer)
    label = store.LabelWrite(
        batch["id"],
        task.item_id,
        task.part,
        annotator_id,
        task.type,
        clean,
        list(task.displayed_order),
        sorted(flags or []),
        comment.strip(),
        simulated,
    )
    min_seconds = reading_seconds(batch, simulated)
    return store.save_label(db, label, min_seconds=min_seconds, require_shown=require_shown and min_seconds > 0)[1]


def reading_seconds(batch: store.BatchRow, simulated: bool = False) -> float:
    """The too-fast rule: the least time an item must be on screen before its answer is kept,
    from the batch's config (`BatchSpec.min_seconds`; MIN_SECONDS for a batch that predates it).
    A simulated answer has no reader, so no reading time applies."""
    return 0.0 if simulated else float(batch["config"].get("min_seconds", MIN_SECONDS))


def mark_shown(db: sqlite_utils.Database, annotator_id: int, batch_name: str, item_id: int, part: int) -> bool:
    """The annotator's browser reports the whole item (every caption and image) on screen: the
    reading clock starts now (`submit_answer(..., require_shown=True)` counts from here)."""
    return store.mark_shown(db, store.get_batch(db, batch_name)["id"], item_id, part, annotator_id)


def upcoming_images(db: sqlite_utils.Database, annotator_id: int, batch_name: str, ahead: int = 2) -> list[Path]:
    """The image files (thumbnails) of the annotator's next `ahead` items after the current one,
    for the browser to decode before they are needed."""
    batch = store.get_batch(db, batch_name)
    following = store.unanswered_assignments(db, annotator_id, batch["id"], limit=ahead + 1)[1:]
    items = store.items_by_id(db, [a["item_id"] for a in following])
    tasks = [
        build_task(batch["task_type"], items[a["item_id"]], a["part"], seed=_task_seed(batch, annotator_id))
        for a in following
    ]
    return [path for task in tasks for _, path in task_images(db, batch, task) if path is not None]


def reassign_stale(db: sqlite_utils.Database, batch_name: str, *, now: datetime | None = None) -> int:
    """Free the work annotators walked away from; return how many assignments moved.

    An item drawn longer than the lease ago and still unanswered goes to the annotator with the
    fewest open items among those who still have an open queue and lack that unit (or stays put
    when nobody has). A crowd batch returns abandoned units to the pool instead, the no-show time
    included (`crowd_studies.free_abandoned_units`). One write transaction re-reads what is stale,
    so an answer stored a moment ago is never moved.
    """
    batch = store.get_batch(db, batch_name)
    moment = now or datetime.now(UTC)
    if "crowd_token" in batch["config"]:
        return free_abandoned_units(db, batch, moment)
    opened_before = store.timestamp(moment - timedelta(minutes=setting(batch["config"], "lease_minutes")))
    if not store.stale_assignments(db, batch["id"], opened_before):  # the common case: no lock taken
        return 0
    moved = 0
    # Labels are written under row locks (`store.save_label`): an answer stored while this runs
    # keeps its assignment, which then neither moves nor counts.
    with store.transaction(db, row_locks=True):
        store.lock_batch(db, batch["id"])
        for assignment in store.stale_assignments(db, batch["id"], opened_before):
            if (target := _reassignment_target(store.batch_assignments(db, batch["id"]), assignment)) is not None:
                moved += store.move_assignment(db, assignment["id"], *target)
    return moved


def _reassignment_target(current: list[dict[str, Any]], assignment: dict[str, Any]) -> tuple[int, int] | None:
    """(annotator, queue position) to take over a stale assignment: someone still working who
    lacks the unit, fewest open items first; None when nobody qualifies."""
    unit = (assignment["item_id"], assignment["part"])
    holders = {a["annotator_id"] for a in current if (a["item_id"], a["part"]) == unit}
    open_items = Counter(a["annotator_id"] for a in current if not a["done"])
    working = [a for a in open_items if a not in holders]
    if not working:
        return None
    target = min(working, key=lambda a: (open_items[a], a))
    last = max(a["position"] for a in current if a["annotator_id"] == target)
    return target, last + 1
