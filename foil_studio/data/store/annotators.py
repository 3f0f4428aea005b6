"""Annotators and their link tokens (stored only as hashes)."""

from __future__ import annotations

import hmac
import secrets
from typing import Any, cast

import sqlite_utils

from foil_studio.data.store.base import (
    _now,
    _token_hash,
    check_name,
    transaction,
)
from foil_studio.data.store.rows import AnnotatorRow


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
