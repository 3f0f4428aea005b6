"""Batches, their assignments and leases, and the items a health sample drew."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, cast

import sqlite_utils

from foil_studio.data.store import dialect
from foil_studio.data.store.base import (
    NotFoundError,
    StoreError,
    _decode,
    _now,
    check_name,
    transaction,
)
from foil_studio.data.store.rows import BatchRow, BatchSummary

# SQL: assignment `a` has its label (the same batch, item, part and annotator), 1 or 0, kept by
# triggers on labels (migration 10); `_OPEN` is the condition of the partial index `assignments_open`.
_ANSWERED = "a.answered"


_OPEN = "a.answered = 0"


def create_batch(db: sqlite_utils.Database, name: str, dataset_id: int, task_type: str, config: dict[str, Any]) -> int:
    """Insert a batch; a taken name is a StoreError."""
    check_name("batch", name)
    if db.execute("SELECT 1 FROM batches WHERE name = ?", [name]).fetchone():
        raise StoreError(f"a batch named {name!r} already exists")
    return int(
        db.execute(
            "INSERT INTO batches (name, dataset_id, task_type, config, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id",
            [name, dataset_id, task_type, json.dumps(config), _now()],
        ).fetchone()[0]
    )


def add_assignments(db: sqlite_utils.Database, batch_id: int, rows: Iterable[tuple[int, int, int, int, bool]]) -> None:
    """Insert (item id, part, annotator id, position, is gold) rows of a batch, handed out now."""
    now = _now()
    db.conn.executemany(
        "INSERT INTO assignments (batch_id, item_id, part, annotator_id, position, is_gold, assigned_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(batch_id, item, part, annotator, position, int(gold), now) for item, part, annotator, position, gold in rows],
    )


def get_batch(db: sqlite_utils.Database, name: str) -> BatchRow:
    """The batch `name` with its dataset name (config decoded), or NotFoundError."""
    rows = list(
        db.query(
            "SELECT batches.*, datasets.name AS dataset FROM batches JOIN datasets ON datasets.id = batches.dataset_id"
            " WHERE batches.name = ?",
            [name],
        )
    )
    if not rows:
        known = ", ".join(r["name"] for r in db.query("SELECT name FROM batches")) or "none"
        raise NotFoundError(f"no batch named {name!r} (batches: {known})")
    return cast(BatchRow, _decode(rows[0], "config"))


def batches_with_setting(db: sqlite_utils.Database, dataset_id: int, key: str) -> list[BatchRow]:
    """The dataset's batches whose config holds `key` (say, a health sample's design), oldest first."""
    rows = db.query(
        f"SELECT name FROM batches WHERE dataset_id = ? AND {dialect.json_text(db, 'config', key)} IS NOT NULL"
        " ORDER BY id",
        [dataset_id],
    )
    return [get_batch(db, row["name"]) for row in list(rows)]


def batch_by_crowd_token(db: sqlite_utils.Database, token: str) -> BatchRow | None:
    """The crowd batch whose study link carries `token`, or None."""
    rows = list(
        db.query(f"SELECT name FROM batches WHERE {dialect.json_text(db, 'config', 'crowd_token')} = ?", [token])
    )
    return get_batch(db, rows[0]["name"]) if rows else None


def list_batches(db: sqlite_utils.Database) -> list[BatchSummary]:
    """Every batch with its dataset, task type and label counts."""
    rows = db.query(
        "SELECT batches.id, batches.name, datasets.name AS dataset, task_type, batches.created_at,"
        " (SELECT COUNT(*) FROM assignments a WHERE a.batch_id = batches.id) AS n_assignments,"
        " (SELECT COUNT(*) FROM labels l WHERE l.batch_id = batches.id) AS n_labels"
        " FROM batches JOIN datasets ON datasets.id = batches.dataset_id ORDER BY batches.id"
    )
    return cast(list[BatchSummary], list(rows))


def batch_assignments(db: sqlite_utils.Database, batch_id: int) -> list[dict[str, Any]]:
    """Every assignment of a batch with annotator name and whether it is answered."""
    return list(
        db.query(
            "SELECT a.id, a.item_id, a.part, annotators.name AS annotator, a.annotator_id, a.position, a.is_gold,"
            f" a.opened_at, {_ANSWERED} AS done FROM assignments a"
            " JOIN annotators ON annotators.id = a.annotator_id WHERE a.batch_id = ? ORDER BY a.annotator_id, "
            "a.position",
            [batch_id],
        )
    )


def assigned_per_annotator(db: sqlite_utils.Database, batch_id: int) -> dict[str, int]:
    """Annotator name -> how many assignments of a batch they hold, answered or not (counted in
    SQL: a 5,000-item health batch's 15,000 rows read as dicts took 0.1 s on every page rerun)."""
    return dict(
        db.execute(
            "SELECT annotators.name, COUNT(*) FROM assignments a JOIN annotators ON annotators.id = a.annotator_id"
            " WHERE a.batch_id = ? GROUP BY annotators.name ORDER BY annotators.name",
            [batch_id],
        ).fetchall()
    )


def first_assigned_item(db: sqlite_utils.Database, batch_id: int) -> int | None:
    """The item of a batch's first assignment (None for a batch with none)."""
    row = db.execute("SELECT item_id FROM assignments WHERE batch_id = ? ORDER BY id LIMIT 1", [batch_id]).fetchone()
    return None if row is None else int(row[0])


def annotator_batches(db: sqlite_utils.Database, annotator_id: int) -> list[dict[str, Any]]:
    """The batches holding work for one annotator, with their progress. The counts are grouped
    before the join: grouped after it, every assignment's row carried its batch's config into a
    temporary B-tree (165 ms a call with a 1,100-item health design, on every key press)."""
    return list(
        db.query(
            "SELECT b.id, b.name, b.task_type, b.config, c.assigned, c.done FROM"
            f" (SELECT a.batch_id, COUNT(*) AS assigned, SUM({_ANSWERED}) AS done FROM assignments a"
            "  WHERE a.annotator_id = ? GROUP BY a.batch_id) c"
            " JOIN batches b ON b.id = c.batch_id ORDER BY b.id",
            [annotator_id],
        )
    )


def add_health_items(db: sqlite_utils.Database, batch_id: int, rows: Iterable[tuple[int, str, float]]) -> None:
    """Record a health sample batch's drawn items: (item id, category, inclusion probability)."""
    db.conn.executemany(
        "INSERT INTO health_items (batch_id, item_id, category, inclusion) VALUES (?, ?, ?, ?)",
        [(batch_id, item, category, inclusion) for item, category, inclusion in rows],
    )


def health_items(db: sqlite_utils.Database, batch_ids: Sequence[int]) -> list[tuple[int, int, str, float]]:
    """(batch id, item id, category, inclusion) of every item these health batches drew."""
    if not batch_ids:
        return []
    marks = ", ".join("?" for _ in batch_ids)
    return [
        (int(b), int(i), str(c), float(p))
        for b, i, c, p in db.execute(
            f"SELECT batch_id, item_id, category, inclusion FROM health_items WHERE batch_id IN ({marks})"
            " ORDER BY batch_id, item_id",
            list(batch_ids),
        ).fetchall()
    ]


def unanswered_assignments(
    db: sqlite_utils.Database, annotator_id: int, batch_id: int, limit: int = 1
) -> list[dict[str, Any]]:
    """The annotator's first `limit` unanswered assignments in the batch, in queue order (the first is
    the resume point)."""
    return list(
        db.query(
            f"SELECT a.* FROM assignments a WHERE a.annotator_id = ? AND a.batch_id = ? AND {_OPEN}"
            " ORDER BY a.position LIMIT ?",
            [annotator_id, batch_id, limit],
        )
    )


def open_assignment(db: sqlite_utils.Database, assignment_id: int) -> str:
    """Start the lease and the timer of an assignment the first time its item is drawn; return
    when that was. Writes only on the first draw (a reload keeps the first time)."""
    row = db.execute("SELECT opened_at FROM assignments WHERE id = ?", [assignment_id]).fetchone()
    if row is None:
        raise NotFoundError(f"no assignment with id {assignment_id}")
    if row[0] is not None:
        return str(row[0])
    with transaction(db, row_locks=True):  # one conditional UPDATE: its row lock is all it needs
        db.execute("UPDATE assignments SET opened_at = ? WHERE id = ? AND opened_at IS NULL", [_now(), assignment_id])
    return str(db.execute("SELECT opened_at FROM assignments WHERE id = ?", [assignment_id]).fetchone()[0])


def stale_assignments(
    db: sqlite_utils.Database, batch_id: int, opened_before: str, idle_before: str | None = None
) -> list[dict[str, Any]]:
    """Unanswered assignments whose lease ran out: opened before `opened_before` (the annotator
    walked away from the item), or, when `idle_before` is given (a crowd study's no-show time),
    held by an annotator with no activity in the batch (dealt work, opened or answered) since
    `idle_before` and either never opened or held by one who answered nothing in the batch."""
    # One who opened an item and answered nothing is a no-show: their opened item goes back at the
    # no-show time too, so ids that each open one item cannot hold the study's places for a lease.
    idle = (
        (
            " OR ((a.opened_at IS NULL OR NOT EXISTS (SELECT 1 FROM assignments c WHERE c.batch_id = a.batch_id"
            " AND c.annotator_id = a.annotator_id AND c.answered = 1))"
            " AND a.annotator_id IN (SELECT b.annotator_id FROM assignments b"
            " WHERE b.batch_id = a.batch_id GROUP BY b.annotator_id HAVING "
            + dialect.greatest(
                db,
                "MAX(COALESCE(b.assigned_at, ''))",
                "MAX(COALESCE(b.opened_at, ''))",
                "COALESCE((SELECT MAX(l.submitted_at) FROM labels l"
                " WHERE l.batch_id = a.batch_id AND l.annotator_id = b.annotator_id), '')",
            )
            + " < :idle_before))"
        )
        if idle_before
        else ""
    )
    return list(
        db.query(
            f"SELECT a.* FROM assignments a WHERE a.batch_id = :batch AND {_OPEN}"
            f" AND ((a.opened_at IS NOT NULL AND a.opened_at < :opened_before){idle}) ORDER BY a.id",
            {"batch": batch_id, "opened_before": opened_before, "idle_before": idle_before},
        )
    )


def delete_assignment(db: sqlite_utils.Database, assignment_id: int) -> bool:
    """Drop an assignment still unanswered (its unit returns to a crowd batch's pool); False when
    it was answered meanwhile and stays."""
    return db.execute(f"DELETE FROM assignments AS a WHERE id = ? AND {_OPEN}", [assignment_id]).rowcount == 1


def move_assignment(db: sqlite_utils.Database, assignment_id: int, annotator_id: int, position: int) -> bool:
    """Give an assignment still unanswered to another annotator, at `position` in their queue,
    unopened; False when it was answered meanwhile and stays."""
    return (
        db.execute(
            "UPDATE assignments AS a SET annotator_id = ?, position = ?, opened_at = NULL, shown_at = NULL, "
            f"assigned_at = ? WHERE id = ? AND {_OPEN}",
            [annotator_id, position, _now(), assignment_id],
        ).rowcount
        == 1
    )


def lock_batch(db: sqlite_utils.Database, batch_id: int) -> None:
    """Inside a ``transaction(db, row_locks=True)``: hold the batch until the transaction ends, so
    the callers that deal out or take back its work (crowd joins, lease reassignment) go one at
    a time on every server. SQLite's single writer already does this."""
    if dialect.is_postgres(db):
        # NO KEY UPDATE: the foreign-key checks of label and assignment inserts (KEY SHARE) pass beside it
        db.execute("SELECT id FROM batches WHERE id = ? FOR NO KEY UPDATE", [batch_id]).fetchall()


def set_batch_closed(db: sqlite_utils.Database, batch_id: int, closed: bool) -> None:
    """Close a crowd study to new participants (or open it again)."""
    with transaction(db):
        db.execute("UPDATE batches SET closed_at = ? WHERE id = ?", [_now() if closed else None, batch_id])
