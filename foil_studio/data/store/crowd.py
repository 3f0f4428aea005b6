"""Crowd studies: who joined which study, their quotas, returns and open units."""

from __future__ import annotations

from typing import Any

import sqlite_utils

from foil_studio.data.store.base import (
    _now,
    transaction,
)
from foil_studio.data.store.batches import _ANSWERED, _OPEN


def record_join(db: sqlite_utils.Database, batch_id: int, annotator_id: int, external_id: str, quota: int) -> None:
    """Log a participant joining a crowd study (once per participant) with the units they must
    answer for their completion code; joining again (after their units went back to the pool)
    sets the new quota."""
    db.execute(
        "INSERT INTO crowd_joins (batch_id, annotator_id, external_id, joined_at, quota) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (batch_id, annotator_id) DO UPDATE SET quota = excluded.quota",
        [batch_id, annotator_id, external_id, _now(), quota],
    )


def joined_studies(db: sqlite_utils.Database, annotator_id: int) -> list[dict[str, Any]]:
    """The crowd studies a participant joined, shaped as `annotator_batches` rows (their progress
    counts their assignments now, 0 when every unit went back to the pool)."""
    return list(
        db.query(
            "SELECT b.id, b.name, b.task_type, b.config,"
            " (SELECT COUNT(*) FROM assignments a WHERE a.batch_id = b.id AND a.annotator_id = j.annotator_id)"
            " AS assigned,"
            " (SELECT COUNT(*) FROM assignments a WHERE a.batch_id = b.id AND a.annotator_id = j.annotator_id"
            f" AND {_ANSWERED} = 1) AS done"
            " FROM crowd_joins j JOIN batches b ON b.id = j.batch_id WHERE j.annotator_id = ? ORDER BY b.id",
            [annotator_id],
        )
    )


def return_study(db: sqlite_utils.Database, batch_id: int, annotator_id: int) -> int:
    """A participant returns a crowd study: their unanswered units go back to the pool now and
    they are marked as returned; return how many units went back."""
    with transaction(db):
        freed = db.execute(
            f"DELETE FROM assignments AS a WHERE batch_id = ? AND annotator_id = ? AND {_OPEN}",
            [batch_id, annotator_id],
        ).rowcount
        db.execute(
            "UPDATE crowd_joins SET returned_at = ? WHERE batch_id = ? AND annotator_id = ?",
            [_now(), batch_id, annotator_id],
        )
    return int(freed)


def has_returned(db: sqlite_utils.Database, batch_id: int, annotator_id: int) -> bool:
    """Whether a participant returned the study."""
    row = db.execute(
        "SELECT returned_at FROM crowd_joins WHERE batch_id = ? AND annotator_id = ?", [batch_id, annotator_id]
    ).fetchone()
    return bool(row and row[0])


def crowd_quota(db: sqlite_utils.Database, batch_id: int, annotator_id: int) -> int | None:
    """The units a participant must answer for their completion code; None if they never joined."""
    row = db.execute(
        "SELECT quota FROM crowd_joins WHERE batch_id = ? AND annotator_id = ?", [batch_id, annotator_id]
    ).fetchone()
    return None if row is None else int(row[0])


def participants_started_since(db: sqlite_utils.Database, batch_id: int, since: str) -> int:
    """Participants of a batch whose every assignment there was dealt at or after `since`: those
    who took their place in the batch since then (joining alone deals nothing in a crowd study)."""
    return int(
        db.execute(
            "SELECT COUNT(*) FROM (SELECT annotator_id FROM assignments WHERE batch_id = ?"
            " GROUP BY annotator_id HAVING MIN(assigned_at) >= ?) started",
            [batch_id, since],
        ).fetchone()[0]
    )


def open_units(db: sqlite_utils.Database, batch_id: int, annotator_id: int) -> tuple[int, int]:
    """(unanswered, all) assignments a participant holds in a batch: read on every draw, indexed."""
    row = db.execute(
        f"SELECT COUNT(*), COALESCE(SUM(CASE WHEN {_OPEN} THEN 1 ELSE 0 END), 0) FROM assignments AS a"
        " WHERE batch_id = ? AND annotator_id = ?",
        [batch_id, annotator_id],
    ).fetchone()
    return int(row[1]), int(row[0])


def participants_holding_work(db: sqlite_utils.Database, batch_id: int) -> int:
    """Participants of a batch who hold at least one unanswered assignment (those who finished,
    or whose units went back to the pool, hold no place)."""
    return int(
        db.execute(
            f"SELECT COUNT(DISTINCT annotator_id) FROM assignments AS a WHERE batch_id = ? AND {_OPEN}", [batch_id]
        ).fetchone()[0]
    )


def place_holders(db: sqlite_utils.Database, batch_id: int) -> list[dict[str, Any]]:
    """Each participant holding an unanswered assignment in a batch (a place, in a crowd study):
    `answered` and `unopened` counts, `last_active` (the latest of being dealt work, opening an
    item and answering, in the batch) and `latest_opened` (when their most recently opened
    unanswered item was opened; None when they opened none)."""
    rows = db.query(
        "SELECT a.annotator_id, SUM(a.answered) AS answered,"
        " SUM(CASE WHEN a.answered = 0 AND a.opened_at IS NULL THEN 1 ELSE 0 END) AS unopened,"
        " MAX(a.assigned_at) AS last_dealt, MAX(a.opened_at) AS last_opened,"
        " MAX(CASE WHEN a.answered = 0 THEN a.opened_at END) AS latest_opened,"
        " (SELECT MAX(l.submitted_at) FROM labels l WHERE l.batch_id = ? AND l.annotator_id = a.annotator_id)"
        " AS last_answer"
        " FROM assignments a WHERE a.batch_id = ? GROUP BY a.annotator_id"
        " HAVING SUM(CASE WHEN a.answered = 0 THEN 1 ELSE 0 END) > 0 ORDER BY a.annotator_id",
        [batch_id, batch_id],
    )
    return [
        {
            "annotator_id": row["annotator_id"],
            "answered": int(row["answered"] or 0),
            "unopened": int(row["unopened"] or 0),
            "last_active": max(t or "" for t in (row["last_dealt"], row["last_opened"], row["last_answer"])),
            "latest_opened": row["latest_opened"],
        }
        for row in rows
    ]


def crowd_joins(db: sqlite_utils.Database, batch_id: int) -> list[dict[str, Any]]:
    """Every participant who joined a crowd study: external id, when, when they returned it (None if
    they did not), and their assignments now."""
    return list(
        db.query(
            "SELECT annotators.name AS annotator, j.external_id, j.joined_at, j.returned_at,"
            " (SELECT COUNT(*) FROM assignments a WHERE a.batch_id = j.batch_id AND a.annotator_id = j.annotator_id)"
            " AS held,"
            " (SELECT COUNT(*) FROM labels l WHERE l.batch_id = j.batch_id AND l.annotator_id = j.annotator_id)"
            " AS answered"
            " FROM crowd_joins j JOIN annotators ON annotators.id = j.annotator_id WHERE j.batch_id = ? ORDER BY j.id",
            [batch_id],
        )
    )
