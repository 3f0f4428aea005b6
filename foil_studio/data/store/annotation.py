"""Annotators and their link tokens, batches, assignments and leases, labels, decisions and crowd joins."""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import sqlite_utils

from foil_studio.data.store import dialect
from foil_studio.data.store.base import (
    LabelRefused,
    NotFoundError,
    StoreError,
    _decode,
    _now,
    _token_hash,
    check_name,
    transaction,
)
from foil_studio.data.store.rows import AnnotatorRow, BatchRow, BatchSummary, ItemLabel, LabelRow

# --- annotators ------------------------------------------------------------------------------


def ensure_annotator(db: sqlite_utils.Database, name: str, external_id: str | None = None) -> dict[str, Any]:
    """The annotator called `name`, created if absent. `token` holds their first link token
    when they were created by this call, else None (tokens are stored only as hashes)."""
    check_name("annotator", name)
    with transaction(db):
        existing = annotator_by_name(db, name)
        if existing is not None:
            return {**existing, "token": None}
        annotator_id = int(
            db.execute(
                "INSERT INTO annotators (name, token, external_id, created_at) VALUES (?, ?, ?, ?) RETURNING id",
                [name, f"pending:{secrets.token_hex(16)}", external_id, _now()],
            ).fetchone()[0]
        )
        db.execute("UPDATE annotators SET token = ? WHERE id = ?", [f"hashed:{annotator_id}", annotator_id])
        token = issue_token(db, annotator_id)
    return {"id": annotator_id, "name": name, "external_id": external_id, "token": token}


def issue_token(db: sqlite_utils.Database, annotator_id: int) -> str:
    """A new link token for an annotator (their other tokens stay valid); only its hash is stored."""
    token = secrets.token_urlsafe(16)  # 128 bits
    with transaction(db):
        db.execute(
            "INSERT INTO annotator_tokens (token_hash, annotator_id, created_at) VALUES (?, ?, ?)",
            [_token_hash(token), annotator_id, _now()],
        )
    return token


def revoke_tokens(db: sqlite_utils.Database, annotator_id: int) -> int:
    """Invalidate every link token an annotator holds; return how many."""
    with transaction(db):
        return db.execute("DELETE FROM annotator_tokens WHERE annotator_id = ?", [annotator_id]).rowcount


def annotator_by_name(db: sqlite_utils.Database, name: str) -> AnnotatorRow | None:
    """The annotator called `name` (id, name, external id), or None."""
    rows = list(db.query("SELECT id, name, external_id FROM annotators WHERE name = ?", [name]))
    return cast(AnnotatorRow, rows[0]) if rows else None


def annotator_by_token(db: sqlite_utils.Database, token: str) -> AnnotatorRow | None:
    """The annotator holding `token`, or None; the stored hash is compared in constant time."""
    wanted = _token_hash(token)
    row = db.execute("SELECT token_hash, annotator_id FROM annotator_tokens WHERE token_hash = ?", [wanted]).fetchone()
    if row is None or not hmac.compare_digest(row[0], wanted):
        return None
    return cast(AnnotatorRow, next(db.query("SELECT id, name, external_id FROM annotators WHERE id = ?", [row[1]])))


def list_annotators(db: sqlite_utils.Database) -> list[dict[str, Any]]:
    """Every annotator with id, name and external id (tokens are not listed)."""
    return list(db.query("SELECT id, name, external_id, created_at FROM annotators ORDER BY id"))


# --- batches, assignments, labels ---------------------------------------------------------

# SQL: assignment `a` has its label (the same batch, item, part and annotator), 1 or 0, kept by
# triggers on labels (migration 10); `_OPEN` is the condition of the partial index `assignments_open`.
_ANSWERED = "a.answered"
_OPEN = "a.answered = 0"


def create_batch(db: sqlite_utils.Database, name: str, dataset_id: int, task: str, config: dict[str, Any]) -> int:
    """Insert a batch; a taken name is a StoreError."""
    check_name("batch", name)
    if db.execute("SELECT 1 FROM batches WHERE name = ?", [name]).fetchone():
        raise StoreError(f"a batch named {name!r} already exists")
    return int(
        db.execute(
            "INSERT INTO batches (name, dataset_id, task, config, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id",
            [name, dataset_id, task, json.dumps(config), _now()],
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
    """Every batch with its dataset, task and label counts."""
    rows = db.query(
        "SELECT batches.id, batches.name, datasets.name AS dataset, task, batches.created_at,"
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


def annotator_batches(db: sqlite_utils.Database, annotator_id: int) -> list[dict[str, Any]]:
    """The batches holding work for one annotator, with their progress. The counts are grouped
    before the join: grouped after it, every assignment's row carried its batch's config into a
    temporary B-tree (165 ms a call with a 1,100-item health design, on every key press)."""
    return list(
        db.query(
            "SELECT b.id, b.name, b.task, b.config, c.assigned, c.done FROM"
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


@dataclass(frozen=True)
class LabelWrite:
    """One submitted answer."""

    batch_id: int
    item_id: int
    part: int
    annotator_id: int
    task: str
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
            "INSERT INTO labels (batch_id, item_id, part, annotator_id, task, answer, displayed_order, flags,"
            " comment, started_at, submitted_at, seconds, simulated)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            [
                *key,
                label.task,
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
    rows = db.query(
        "SELECT l.id, annotators.name AS annotator, l.item_id AS item, items.source_id, items.category, l.part,"
        " l.task, l.answer, l.displayed_order, l.flags, l.comment, l.started_at, l.submitted_at, l.seconds,"
        " l.simulated, a.is_gold FROM labels l JOIN annotators ON annotators.id = l.annotator_id"
        " JOIN items ON items.id = l.item_id"
        " JOIN assignments a ON a.batch_id = l.batch_id AND a.item_id = l.item_id AND a.part = l.part"
        " AND a.annotator_id = l.annotator_id WHERE l.batch_id = ? ORDER BY l.id",
        [batch_id],
    )
    return [
        cast(LabelRow, {**_decode(row, "answer", "displayed_order", "flags"), "simulated": bool(row["simulated"])})
        for row in rows
    ]


def item_labels(db: sqlite_utils.Database, item_ids: Iterable[int]) -> list[ItemLabel]:
    """Every label given to these items in any batch: batch, task, annotator, answer, flags, comment,
    and whether it was simulated."""
    wanted = sorted(set(item_ids))
    found: list[ItemLabel] = []
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        rows = db.query(
            "SELECT l.item_id AS item, l.part, batches.name AS batch, l.task, annotators.name AS annotator,"
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


def stale_assignments(
    db: sqlite_utils.Database, batch_id: int, opened_before: str, idle_before: str | None = None
) -> list[dict[str, Any]]:
    """Unanswered assignments whose lease ran out: opened before `opened_before` (the annotator
    walked away from the item), or, when `idle_before` is given, never opened and held by an
    annotator with no activity in the batch (joined, opened or answered) since `idle_before`."""
    idle = (
        (
            " OR (a.opened_at IS NULL AND a.annotator_id IN (SELECT b.annotator_id FROM assignments b"
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


# --- crowd studies ---------------------------------------------------------------------------


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
            "SELECT b.id, b.name, b.task, b.config,"
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


def crowd_joins(db: sqlite_utils.Database, batch_id: int) -> list[dict[str, Any]]:
    """Every participant who joined a crowd study: external id, when, and their assignments now."""
    return list(
        db.query(
            "SELECT annotators.name AS annotator, j.external_id, j.joined_at,"
            " (SELECT COUNT(*) FROM assignments a WHERE a.batch_id = j.batch_id AND a.annotator_id = j.annotator_id)"
            " AS held,"
            " (SELECT COUNT(*) FROM labels l WHERE l.batch_id = j.batch_id AND l.annotator_id = j.annotator_id)"
            " AS answered"
            " FROM crowd_joins j JOIN annotators ON annotators.id = j.annotator_id WHERE j.batch_id = ? ORDER BY j.id",
            [batch_id],
        )
    )


def set_batch_closed(db: sqlite_utils.Database, batch_id: int, closed: bool) -> None:
    """Close a crowd study to new participants (or open it again)."""
    with transaction(db):
        db.execute("UPDATE batches SET closed_at = ? WHERE id = ?", [_now() if closed else None, batch_id])
