"""Errors, names, times and transactions shared by every part of the store."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime
from typing import Any

import psycopg
import sqlite_utils

from foil_studio.data.store.dialect import begin_write


class StoreError(Exception):
    """Base class of the store's errors."""


class NotFoundError(StoreError):
    """A named dataset, run or annotator does not exist."""


class InvalidNameError(StoreError):
    """A name (dataset, run, batch, annotator) that Foil Studio will not store."""


# What either engine raises when a write breaks a constraint (unique, foreign key, not null).
INTEGRITY_ERRORS = (sqlite3.IntegrityError, psycopg.IntegrityError)
MAX_NAME_CHARS = 120
_NAME_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f]")


def check_name(what: str, name: Any) -> str:
    """`name` if it can name a `what` (a dataset, a run...): text of 1 to 120 characters, not blank, no control
    characters. Names are shown as plain text everywhere, so markdown or HTML in them is harmless.

    >>> check_name("run", "ViT-B-32 [openai]")
    'ViT-B-32 [openai]'
    """
    named = f"{'an' if what[:1] in 'aeiou' else 'a'} {what} name"
    if not isinstance(name, str) or not name.strip():
        raise InvalidNameError(f"{named} must be non-empty text, got {name!r}")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidNameError(
            f"{named} may have at most {MAX_NAME_CHARS} characters, got {len(name)}: {name[:40]!r}..."
        )
    bad = _NAME_FORBIDDEN.search(name)
    if bad:
        raise InvalidNameError(f"{named} may not hold control characters, got {bad.group()!r} in {name!r}")
    return name


class LabelRefused(StoreError):
    """An answer the store will not keep: the message says why, for the annotator to read.

    `reason` is one of "not_in_queue" (never theirs, or reassigned after the lease ran out),
    "not_opened" (the item was never drawn for them), "not_shown" (their browser never reported the
    whole item on screen) and "too_fast" (on screen too briefly to be read).
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


Migration = Callable[[sqlite_utils.Database], None]


def _now() -> str:
    return timestamp(datetime.now(UTC))


def timestamp(moment: datetime) -> str:
    """The store's text form of a time (UTC, milliseconds): such strings sort in time order."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


@contextmanager
def transaction(db: sqlite_utils.Database, *, row_locks: bool = False) -> Iterator[None]:
    """All writes inside happen or none do; nested uses become savepoints.

    One writer at a time, as SQLite has it, on either engine (`dialect.begin_write`). On
    PostgreSQL a caller that locks the rows it decides on itself (``SELECT ... FOR UPDATE``,
    `lock_batch`) passes ``row_locks=True`` and writes beside other such callers.
    """
    conn = db.conn
    # PostgreSQL: one thread's transaction at a time on a connection
    with getattr(conn, "session_lock", None) or nullcontext(), _transaction_on(db, conn, row_locks):
        yield


@contextmanager
def _transaction_on(db: sqlite_utils.Database, conn: Any, row_locks: bool) -> Iterator[None]:
    if conn.in_transaction:
        name = f"sp_{secrets.token_hex(4)}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")
        return
    with getattr(conn, "write_lock", None) or nullcontext():  # this process's writers in turn (connection.py)
        try:
            for statement in begin_write(db, row_locks=row_locks):
                conn.execute(statement)
            yield
        except BaseException:
            conn.rollback()
            raise
        conn.commit()


def _decode(row: dict[str, Any], *columns: str) -> dict[str, Any]:
    for column in columns:
        if row.get(column) is not None:
            row[column] = json.loads(row[column])
    return row


def _token_hash(token: str) -> str:
    # An unkeyed hash suffices: tokens are 128-bit random, so no table of guesses can reach them.
    return hashlib.sha256(token.encode()).hexdigest()
