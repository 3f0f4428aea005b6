"""Copying a whole store to another engine (SQLite to PostgreSQL and back), checked."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import sqlite_utils

from foil_studio.data.store.base import StoreError, transaction
from foil_studio.data.store.dialect import is_postgres
from foil_studio.data.store.labels import LABEL_COLUMNS
from foil_studio.data.store.schema import schema_version

# Every table but schema_migrations, parents before the rows that reference them.
COPY_ORDER = (
    "datasets",
    "items",
    "item_counts",
    "images",
    "imports",
    "annotators",
    "annotator_tokens",
    "batches",
    "assignments",
    "health_items",
    "labels",
    "label_revisions",
    "decisions",
    "crowd_joins",
    "runs",
    "run_summaries",
    "run_copies",
    "scores",
    "audits",
    "embeddings",
    "prediction_sets",
    "predictions",
)
_CHUNK = 2000


def row_counts(db: sqlite_utils.Database) -> dict[str, int]:
    """Rows per table of a store, in copy order."""
    return {table: int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]) for table in COPY_ORDER}


def labels_checksum(db: sqlite_utils.Database) -> str:
    """SHA-256 of every label (every column of the table, `LABEL_COLUMNS`), in id order: equal
    on two stores exactly when they hold the same labels."""
    digest = hashlib.sha256()
    cursor = db.execute(f"SELECT {', '.join(LABEL_COLUMNS)} FROM labels ORDER BY id")
    while rows := cursor.fetchmany(_CHUNK):
        for row in rows:
            digest.update(json.dumps(list(row)).encode())
            digest.update(b"\n")
    return digest.hexdigest()


def copy_store(source: sqlite_utils.Database, target: sqlite_utils.Database) -> dict[str, Any]:
    """Copy every row of `source` into the empty store `target` (both at the same schema) in
    one transaction, then check that the row counts and the labels' checksum agree; a
    StoreError otherwise, with nothing kept in `target`. Returns the counts and the checksum."""
    if schema_version(source) != schema_version(target):
        raise StoreError(
            f"the two stores are at schema versions {schema_version(source)} and {schema_version(target)}; "
            "open both with this Foil Studio first (it migrates them)"
        )
    held = {table: n for table, n in row_counts(target).items() if n}
    if held:
        raise StoreError(
            f"the destination is not empty ({', '.join(f'{n} {t}' for t, n in held.items())}); "
            "copy into a new store. Nothing was copied."
        )
    with transaction(target):
        for table in COPY_ORDER:
            _copy_table(source, target, table)
        if is_postgres(target):
            _restart_identities(target)
        counts, copied = row_counts(source), row_counts(target)
        if counts != copied:
            differ = {t: (counts[t], copied[t]) for t in COPY_ORDER if counts[t] != copied[t]}
            raise StoreError(f"the copy does not match its source (rows in source, copy: {differ}); nothing was kept")
        checksum = labels_checksum(source)
        if labels_checksum(target) != checksum:
            raise StoreError("the copied labels differ from the source's (checksum); nothing was kept")
    return {"rows": counts, "labels_checksum": checksum}


def _copy_table(source: sqlite_utils.Database, target: sqlite_utils.Database, table: str) -> None:
    cursor = source.execute(f"SELECT * FROM {table}")
    columns = [column[0] for column in cursor.description]
    insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    while rows := cursor.fetchmany(_CHUNK):
        target.conn.executemany(insert, rows)


def _restart_identities(db: sqlite_utils.Database) -> None:
    """After ids were copied in, PostgreSQL's identity sequences continue past the largest."""
    identities = [
        row[0]
        for row in db.execute(
            "SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema()"
            " AND column_name = 'id' AND is_identity = 'YES'"
        ).fetchall()
    ]
    for table in identities:
        db.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), COALESCE(MAX(id), 0) + 1, false) FROM {table}"
        )
