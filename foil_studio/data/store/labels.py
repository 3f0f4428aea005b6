"""Labels (one stored answer each, never twice) and admins' decisions."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import sqlite_utils

from foil_studio.data.store import dialect
from foil_studio.data.store.base import (
    LabelRefused,
    NotFoundError,
    _decode,
    _now,
    transaction,
)
from foil_studio.data.store.batches import _OPEN
from foil_studio.data.store.rows import ItemLabel, LabelRow

# Every column of the labels table, in its order (migrations 0004 and 0015): the one list of them.
# migrate-store's checksum reads these (`copying.labels_checksum`); `batch_labels` reads them too
# and a batch's label export writes its rows as they are. A migration that adds a column to labels
# adds it here (tests/test_label_columns.py compares this with the table).
LABEL_COLUMNS = (
    "id",
    "batch_id",
    "item_id",
    "part",
    "annotator_id",
    "task_type",
    "answer",
    "displayed_order",
    "flags",
    "comment",
    "started_at",
    "submitted_at",
    "seconds",
    "simulated",
)
# How `batch_labels` names the columns that point at other rows: the annotator by name, the item as
# `item`; the batch is the one asked for (None: not repeated on every row). The others keep theirs.
LABEL_KEY_NAMES: dict[str, str | None] = {"batch_id": None, "item_id": "item", "annotator_id": "annotator"}
# The keys of `batch_labels`' rows (`LabelRow`), which a batch's label export writes as its columns:
# the label, who gave it and on which item (with the item's source id and category), what the label
# holds, and whether the item was gold.
LABEL_ROW_COLUMNS = (
    "id",
    "annotator",
    "item",
    "source_id",
    "category",
    *(column for column in LABEL_COLUMNS if column != "id" and column not in LABEL_KEY_NAMES),
    "is_gold",
)
_LABEL_ROW_SQL = {
    "annotator": "annotators.name AS annotator",
    "item": "l.item_id AS item",
    "source_id": "items.source_id",
    "category": "items.category",
    "is_gold": "a.is_gold",
}
_BATCH_LABELS = (
    f"SELECT {', '.join(_LABEL_ROW_SQL.get(column, f'l.{column}') for column in LABEL_ROW_COLUMNS)}"
    " FROM labels l JOIN annotators ON annotators.id = l.annotator_id JOIN items ON items.id = l.item_id"
    " JOIN assignments a ON a.batch_id = l.batch_id AND a.item_id = l.item_id AND a.part = l.part"
    " AND a.annotator_id = l.annotator_id WHERE l.batch_id = ? ORDER BY l.id"
)


@dataclass(frozen=True)
class LabelWrite:
    """One submitted answer."""

    batch_id: int
    item_id: int
    part: int
    annotator_id: int
    task_type: str
    answer: dict[str, Any]
    displayed_order: list[int]
    flags: list[str]
    comment: str
    simulated: bool = False  # written by `annotate.simulation`: no person's answer, no person's time


def save_label(
    db: sqlite_utils.Database, label: LabelWrite, *, min_seconds: float = 0.0, require_shown: bool = False
) -> tuple[int, bool]:
    """Store an answer once: (label id, newly stored). A resubmission keeps the first answer.

    Checked inside the write transaction, so no lease reassignment can slip in between: the
    assignment must be this annotator's, its item drawn for them (``opened_at``) and, with
    `require_shown`, reported whole on their screen by their browser (``shown_at``), at least
    `min_seconds` before. Anything else raises LabelRefused and nothing is written. The item
    timer runs from the moment the item was on screen (``shown_at``), else from the first draw.
    """
    key = [label.batch_id, label.item_id, label.part, label.annotator_id]
    # The assignment's row stays locked to the end: a second submission, a lease reassignment
    # (`move_assignment`) or a return to the pool (`delete_assignment`) waits, then sees the label.
    with transaction(db, row_locks=True):
        assignment = db.execute(
            "SELECT opened_at, shown_at FROM assignments WHERE batch_id = ? AND item_id = ? AND part = ? AND "
            "annotator_id = ?" + dialect.for_update(db),
            key,
        ).fetchone()
        if assignment is None:
            raise LabelRefused(
                "not_in_queue",
                "This item is not in your queue (any more): its lease may have run out and "
                "it went to another annotator. Your answer was not stored.",
            )
        stored = db.execute(
            "SELECT id FROM labels WHERE batch_id = ? AND item_id = ? AND part = ? AND annotator_id = ?", key
        ).fetchone()
        if stored is not None:
            return int(stored[0]), False
        opened_at, shown_at = assignment
        if opened_at is None:
            raise LabelRefused("not_opened", "This item was not shown to you yet. Your answer was not stored.")
        if require_shown and shown_at is None:
            raise LabelRefused(
                "not_shown",
                "This item had not finished appearing on your screen (its images were still "
                "loading). Your answer was not stored: look at the item, then answer.",
            )
        started = shown_at or opened_at
        submitted = _now()
        seconds = _seconds_between(started, submitted)
        if seconds is not None and seconds < min_seconds:
            raise LabelRefused(
                "too_fast",
                f"This item was on screen for only {seconds:.2f} s, too briefly to be read "
                "(a key held down or pressed twice?). Your answer was not stored: look, then answer.",
            )
        label_id = db.execute(
            "INSERT INTO labels (batch_id, item_id, part, annotator_id, task_type, answer, displayed_order, flags,"
            " comment, started_at, submitted_at, seconds, simulated)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            [
                *key,
                label.task_type,
                json.dumps(label.answer),
                json.dumps(label.displayed_order),
                json.dumps(label.flags),
                label.comment,
                started,
                submitted,
                seconds,
                int(label.simulated),
            ],
        ).fetchone()[0]
    return int(label_id), True


def mark_shown(db: sqlite_utils.Database, batch_id: int, item_id: int, part: int, annotator_id: int) -> bool:
    """Record that the annotator's browser has the whole item on screen (once, while it is
    drawn and unanswered); False when it was already marked, or is not theirs to answer now."""
    with transaction(db):
        return (
            db.execute(
                "UPDATE assignments AS a SET shown_at = ? WHERE batch_id = ? AND item_id = ? AND part = ? AND "
                f"annotator_id = ? AND opened_at IS NOT NULL AND shown_at IS NULL AND {_OPEN}",
                [_now(), batch_id, item_id, part, annotator_id],
            ).rowcount
            == 1
        )


def _seconds_between(started: str | None, submitted: str) -> float | None:
    if not started:
        return None
    return (datetime.fromisoformat(submitted) - datetime.fromisoformat(started)).total_seconds()


def revise_label(
    db: sqlite_utils.Database, label_id: int, answer: dict[str, Any], *, by: str, reason: str = ""
) -> None:
    """The admin changes an answer; the previous one is kept in label_revisions."""
    with transaction(db):
        row = db.execute("SELECT answer FROM labels WHERE id = ?", [label_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no label with id {label_id}")
        db.execute(
            "INSERT INTO label_revisions (label_id, previous_answer, new_answer, revised_by, reason, revised_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [label_id, row[0], json.dumps(answer), by, reason, _now()],
        )
        db.execute("UPDATE labels SET answer = ? WHERE id = ?", [json.dumps(answer), label_id])


def batch_labels(db: sqlite_utils.Database, batch_id: int) -> list[LabelRow]:
    """Every label of a batch with annotator name, decoded answer and displayed order."""
    rows = db.query(_BATCH_LABELS, [batch_id])
    return [
        cast(LabelRow, {**_decode(row, "answer", "displayed_order", "flags"), "simulated": bool(row["simulated"])})
        for row in rows
    ]


def item_labels(db: sqlite_utils.Database, item_ids: Iterable[int]) -> list[ItemLabel]:
    """Every label given to these items in any batch: batch, task type, annotator, answer, flags, comment,
    and whether it was simulated."""
    wanted = sorted(set(item_ids))
    found: list[ItemLabel] = []
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        rows = db.query(
            "SELECT l.item_id AS item, l.part, batches.name AS batch, l.task_type, annotators.name AS annotator,"
            " l.answer, l.flags, l.comment, l.simulated FROM labels l JOIN batches ON batches.id = l.batch_id"
            f" JOIN annotators ON annotators.id = l.annotator_id WHERE l.item_id IN ({','.join('?' * len(chunk))})"
            " ORDER BY l.item_id, l.id",
            chunk,
        )
        found.extend(
            cast(ItemLabel, {**_decode(row, "answer", "flags"), "simulated": bool(row["simulated"])}) for row in rows
        )
    return found


def decide(
    db: sqlite_utils.Database,
    batch_id: int,
    item_id: int,
    part: int,
    answer: dict[str, Any],
    *,
    by: str,
    reason: str = "",
) -> None:
    """Record (or replace) the admin's decision on one question of a batch."""
    with transaction(db):
        db.execute(
            "INSERT INTO decisions (batch_id, item_id, part, answer, decided_by, reason, decided_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (batch_id, item_id, part) DO UPDATE SET answer = excluded.answer,"
            " decided_by = excluded.decided_by, reason = excluded.reason, decided_at = excluded.decided_at",
            [batch_id, item_id, part, json.dumps(answer), by, reason, _now()],
        )


def batch_decisions(db: sqlite_utils.Database, batch_id: int) -> dict[tuple[int, int], dict[str, Any]]:
    """(item, part) -> the admin's decision (answer decoded, who, why, when)."""
    rows = db.query("SELECT * FROM decisions WHERE batch_id = ?", [batch_id])
    return {(r["item_id"], r["part"]): _decode(r, "answer") for r in rows}
