"""The Foil Studio store: the only module that speaks SQL.

One SQLite file (WAL mode, foreign keys on) opened through sqlite-utils. The schema only
changes through the named, forward-only migrations in ``MIGRATIONS``; the table
``schema_migrations`` records which ones ran. Never edit a committed migration: add one.

Schema (version 9)
------------------
``datasets``      one imported benchmark (or demo set): unique ``name``, ``source_kind``
                  (the importer), ``image_root`` (absolute folder image paths are relative to).
``items``         one benchmark item (see ``data/items.py``): ``kind``, ``category``,
                  ``source_id``, JSON ``captions``/``images``/``truth``/``meta``.
                  ``item_key`` (content key plus occurrence number) is unique per dataset, which
                  makes imports idempotent; ``text_key`` matches sources that name no images.
``images``        one referenced image file per dataset and relative ``path``: ``status``
                  (ok / missing / unreadable), ``sha256``, ``size`` in bytes, ``width``, ``height``.
``annotators``    ``name``; ``external_id`` for crowd workers (``token`` is a placeholder since 9).
``annotator_tokens`` (since 9) the SHA-256 hash of every link token an annotator holds (several:
                  each batch and each crowd visit issues one); the token itself is never stored.
``batches``       an annotation batch over a dataset: ``task`` and JSON ``config`` (overlap,
                  gold share, seed, instructions, completion code...); ``closed_at`` (since 8): a
                  closed crowd study takes no new participants.
``crowd_joins``   (since version 8) every participant who joined a crowd study through its link.
``assignments``   (batch, item, part, annotator) with a ``position`` in the annotator's queue,
                  ``is_gold``, ``assigned_at`` (since 8: when it was handed to this annotator) and
                  ``opened_at`` (the lease and the item timer: when the item was first drawn for them).
                  ``part`` tells apart the independent questions one item yields.
``labels``        one answer per (batch, item, part, annotator), unique, so a resubmission
                  cannot add a second: ``task``, JSON ``answer``, ``displayed_order`` and
                  ``flags``, ``comment``, ``started_at``, ``submitted_at``, ``seconds``.
``label_revisions`` (since version 4) the admin's revisions of a label, with the old answer.
``decisions``     (since version 5) the admin's adjudication of a disagreement: one answer per
                  (batch, item, part), which wins over any vote.
``runs``          a model's (or imported) results on a dataset: ``model``, ``pretrained``,
                  ``kind`` (``scores`` for similarities, ``correct``/``groups``/``choices`` for
                  imported decisions), JSON ``meta``; ``version`` (since 7) counts writes of its scores.
``run_summaries`` (since version 7) a run's metrics JSON per ``settings`` (bootstrap size, seed),
                  valid while the run's ``version`` is the one it was computed at.
``scores``        per (run, item): JSON ``scores`` (similarities) and/or JSON ``outcome``.
``audits``        (since version 6) the latest hackability audit of a dataset per ``settings``
                  (scorers, folds, seed), with the ``items_fingerprint`` it was computed on.
``imports``       (since version 2) a log of every import: file, kind, counts, time.
``embeddings``    (since version 3) cached embeddings: ``model`` identity, ``modality`` (image or
                  text), content ``key`` (image sha256 plus crop, or caption sha256), float32
                  ``vector`` bytes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import sqlite3
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_utils

from data.images import ImageInfo
from data.items import Item


class StoreError(Exception):
    """Base class of the store's errors."""


class NotFoundError(StoreError):
    """A named dataset, run or annotator does not exist."""


class InvalidNameError(StoreError):
    """A name (dataset, run, batch, annotator) that Foil Studio will not store."""


MAX_NAME_CHARS = 120
_NAME_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f]")


def check_name(kind: str, name: Any) -> str:
    """`name` if it can name a `kind`: text of 1 to 120 characters, not blank, no control
    characters. Names are shown as plain text everywhere, so markdown or HTML in them is harmless.

    >>> check_name("run", "ViT-B-32 [openai]")
    'ViT-B-32 [openai]'
    """
    if not isinstance(name, str) or not name.strip():
        raise InvalidNameError(f"a {kind} name must be non-empty text, got {name!r}")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidNameError(f"a {kind} name may have at most {MAX_NAME_CHARS} characters, got {len(name)}: {name[:40]!r}...")
    bad = _NAME_FORBIDDEN.search(name)
    if bad:
        raise InvalidNameError(f"a {kind} name may not hold control characters, got {bad.group()!r} in {name!r}")
    return name


class LabelRefused(StoreError):
    """An answer the store will not keep: the message says why, for the annotator to read.

    `reason` is one of "not_in_queue" (never theirs, or reassigned after the lease ran out),
    "not_opened" (the item was never drawn for them) and "too_fast" (drawn too briefly to be seen).
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


Migration = Callable[[sqlite_utils.Database], None]


def _now() -> str:
    return timestamp(datetime.now(timezone.utc))


def timestamp(moment: datetime) -> str:
    """The store's text form of a time (UTC, milliseconds): such strings sort in time order."""
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds")


def _m0001_initial(db: sqlite_utils.Database) -> None:
    db.executescript(
        """
        CREATE TABLE datasets (
            id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, source_kind TEXT NOT NULL,
            image_root TEXT, created_at TEXT NOT NULL, meta TEXT NOT NULL DEFAULT '{}');
        CREATE TABLE items (
            id INTEGER PRIMARY KEY,
            dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
            kind TEXT NOT NULL, category TEXT NOT NULL, source_id TEXT NOT NULL,
            item_key TEXT NOT NULL, text_key TEXT NOT NULL,
            captions TEXT NOT NULL, images TEXT NOT NULL,
            truth TEXT NOT NULL DEFAULT '{}', meta TEXT NOT NULL DEFAULT '{}',
            UNIQUE (dataset_id, item_key));
        CREATE INDEX items_by_text ON items (dataset_id, text_key);
        CREATE INDEX items_by_category ON items (dataset_id, category);
        CREATE TABLE images (
            id INTEGER PRIMARY KEY,
            dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
            path TEXT NOT NULL, status TEXT NOT NULL, sha256 TEXT, size INTEGER,
            width INTEGER, height INTEGER, UNIQUE (dataset_id, path));
        CREATE INDEX images_by_hash ON images (sha256);
        CREATE TABLE annotators (
            id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, token TEXT NOT NULL UNIQUE,
            external_id TEXT, created_at TEXT NOT NULL);
        CREATE TABLE batches (
            id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
            dataset_id INTEGER NOT NULL REFERENCES datasets(id),
            task TEXT NOT NULL, config TEXT NOT NULL DEFAULT '{}', created_at TEXT NOT NULL);
        CREATE TABLE assignments (
            id INTEGER PRIMARY KEY,
            batch_id INTEGER NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
            item_id INTEGER NOT NULL REFERENCES items(id),
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            position INTEGER NOT NULL, UNIQUE (batch_id, item_id, annotator_id));
        CREATE TABLE labels (
            id INTEGER PRIMARY KEY,
            batch_id INTEGER NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
            item_id INTEGER NOT NULL REFERENCES items(id),
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            answer TEXT NOT NULL, displayed_order TEXT NOT NULL DEFAULT '[]',
            started_at TEXT, submitted_at TEXT NOT NULL, seconds REAL,
            UNIQUE (batch_id, item_id, annotator_id));
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY, name TEXT NOT NULL,
            dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
            model TEXT, pretrained TEXT, kind TEXT NOT NULL,
            meta TEXT NOT NULL DEFAULT '{}', created_at TEXT NOT NULL,
            UNIQUE (dataset_id, name));
        CREATE TABLE scores (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            scores TEXT, outcome TEXT, PRIMARY KEY (run_id, item_id));
        """
    )


def _m0002_imports_log(db: sqlite_utils.Database) -> None:
    db.executescript(
        """
        CREATE TABLE imports (
            id INTEGER PRIMARY KEY,
            dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
            kind TEXT NOT NULL, path TEXT NOT NULL, n_items INTEGER NOT NULL,
            n_new_items INTEGER NOT NULL, run TEXT, imported_at TEXT NOT NULL);
        """
    )


def _m0003_embedding_cache(db: sqlite_utils.Database) -> None:
    db.executescript(
        """
        CREATE TABLE embeddings (
            model TEXT NOT NULL, modality TEXT NOT NULL, key TEXT NOT NULL, vector BLOB NOT NULL,
            PRIMARY KEY (model, modality, key)) WITHOUT ROWID;
        """
    )


def _m0004_annotation_parts_and_leases(db: sqlite_utils.Database) -> None:
    # Before version 4 nothing wrote assignments or labels, so they are rebuilt, not copied.
    db.executescript(
        """
        DROP TABLE labels;
        DROP TABLE assignments;
        CREATE TABLE assignments (
            id INTEGER PRIMARY KEY,
            batch_id INTEGER NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
            item_id INTEGER NOT NULL REFERENCES items(id),
            part INTEGER NOT NULL DEFAULT 0,
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            position INTEGER NOT NULL, is_gold INTEGER NOT NULL DEFAULT 0, opened_at TEXT,
            UNIQUE (batch_id, item_id, part, annotator_id));
        CREATE INDEX assignments_by_annotator ON assignments (annotator_id, batch_id, position);
        CREATE TABLE labels (
            id INTEGER PRIMARY KEY,
            batch_id INTEGER NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
            item_id INTEGER NOT NULL REFERENCES items(id),
            part INTEGER NOT NULL DEFAULT 0,
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            task TEXT NOT NULL, answer TEXT NOT NULL, displayed_order TEXT NOT NULL,
            flags TEXT NOT NULL DEFAULT '[]', comment TEXT NOT NULL DEFAULT '',
            started_at TEXT, submitted_at TEXT NOT NULL, seconds REAL,
            UNIQUE (batch_id, item_id, part, annotator_id));
        CREATE TABLE label_revisions (
            id INTEGER PRIMARY KEY, label_id INTEGER NOT NULL REFERENCES labels(id) ON DELETE CASCADE,
            previous_answer TEXT NOT NULL, new_answer TEXT NOT NULL, revised_by TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '', revised_at TEXT NOT NULL);
        """
    )


def _m0005_decisions(db: sqlite_utils.Database) -> None:
    db.executescript(
        """
        CREATE TABLE decisions (
            id INTEGER PRIMARY KEY,
            batch_id INTEGER NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
            item_id INTEGER NOT NULL REFERENCES items(id), part INTEGER NOT NULL DEFAULT 0,
            answer TEXT NOT NULL, decided_by TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '',
            decided_at TEXT NOT NULL, UNIQUE (batch_id, item_id, part));
        """
    )


def _m0006_audits_and_labels_by_item(db: sqlite_utils.Database) -> None:
    db.executescript(
        """
        CREATE TABLE audits (
            dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
            settings TEXT NOT NULL, items_fingerprint TEXT NOT NULL,
            result TEXT NOT NULL, created_at TEXT NOT NULL,
            PRIMARY KEY (dataset_id, settings));
        CREATE INDEX labels_by_item ON labels (item_id);
        """
    )


def _m0007_run_versions_and_summaries(db: sqlite_utils.Database) -> None:
    db.executescript(
        """
        ALTER TABLE runs ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE run_summaries (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            settings TEXT NOT NULL, version INTEGER NOT NULL, summary TEXT NOT NULL,
            created_at TEXT NOT NULL, PRIMARY KEY (run_id, settings));
        """
    )


def _m0008_leases_and_crowd_joins(db: sqlite_utils.Database) -> None:
    db.executescript(
        """
        ALTER TABLE assignments ADD COLUMN assigned_at TEXT;
        UPDATE assignments SET assigned_at = (SELECT created_at FROM batches WHERE batches.id = assignments.batch_id);
        ALTER TABLE batches ADD COLUMN closed_at TEXT;
        CREATE TABLE crowd_joins (
            id INTEGER PRIMARY KEY,
            batch_id INTEGER NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            external_id TEXT NOT NULL, joined_at TEXT NOT NULL,
            UNIQUE (batch_id, annotator_id));
        CREATE INDEX crowd_joins_by_time ON crowd_joins (batch_id, joined_at);
        CREATE INDEX labels_by_annotator ON labels (batch_id, annotator_id);
        """
    )


def _m0009_hashed_tokens(db: sqlite_utils.Database) -> None:
    # Tokens move to their own table as SHA-256 hashes; the old column keeps a placeholder only
    # (it is NOT NULL UNIQUE, and SQLite cannot drop such a column).
    db.executescript(
        """
        CREATE TABLE annotator_tokens (
            token_hash TEXT PRIMARY KEY,
            annotator_id INTEGER NOT NULL REFERENCES annotators(id) ON DELETE CASCADE,
            created_at TEXT NOT NULL) WITHOUT ROWID;
        CREATE INDEX annotator_tokens_by_annotator ON annotator_tokens (annotator_id);
        """
    )
    rows = db.execute("SELECT id, token, created_at FROM annotators").fetchall()
    db.conn.executemany("INSERT INTO annotator_tokens VALUES (?, ?, ?)", [(_token_hash(t), i, c) for i, t, c in rows])
    db.conn.executemany("UPDATE annotators SET token = ? WHERE id = ?", [(f"hashed:{i}", i) for i, _, _ in rows])


MIGRATIONS: list[tuple[str, Migration]] = [
    ("0001_initial", _m0001_initial),
    ("0002_imports_log", _m0002_imports_log),
    ("0003_embedding_cache", _m0003_embedding_cache),
    ("0004_annotation_parts_and_leases", _m0004_annotation_parts_and_leases),
    ("0005_decisions", _m0005_decisions),
    ("0006_audits_and_labels_by_item", _m0006_audits_and_labels_by_item),
    ("0007_run_versions_and_summaries", _m0007_run_versions_and_summaries),
    ("0008_leases_and_crowd_joins", _m0008_leases_and_crowd_joins),
    ("0009_hashed_tokens", _m0009_hashed_tokens),
]
SCHEMA_VERSION = len(MIGRATIONS)


# --- connection and transactions -------------------------------------------------------------


def open_db(path: str | Path | None = None, *, upto: int = SCHEMA_VERSION) -> sqlite_utils.Database:
    """Open (creating if needed) the store at `path`, or in memory when `path` is None.

    The connection belongs to the calling thread; Streamlit pages open one per rerun.
    """
    if path is None:
        db = sqlite_utils.Database(memory=True)
    else:
        db = _connect_checked(Path(path))
    db.conn.execute("PRAGMA foreign_keys = ON")
    db.conn.execute("PRAGMA busy_timeout = 10000")
    migrate(db, upto=upto)
    return db


# Store files with a live connection in this process, by (device, inode). Closing any file
# descriptor of a file drops every POSIX lock this process holds on it (sqlite.org/howtocorrupt.html,
# 2.2), so the raw header check must not run while a connection here may hold locks: another
# process could then checkpoint and reset the WAL under that connection and this process would
# go on reading an old snapshot (seen: links issued by the CLI refused by the running app).
_live_connections: dict[tuple[int, int], weakref.WeakSet] = {}
_opening = threading.Lock()


def _connect_checked(path: Path) -> sqlite_utils.Database:
    """A WAL connection to `path`, checked first (check_store_file) unless this process already
    holds a live connection to the same file, which was checked when it was opened."""
    with _opening:
        key = _file_key(path)
        if key is None or not _live_connections.get(key):
            check_store_file(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(path, factory=_TrackedConnection)
        db = sqlite_utils.Database(connection)
        db.enable_wal()
        _live_connections.setdefault(_file_key(path), weakref.WeakSet()).add(connection)
    return db


class _TrackedConnection(sqlite3.Connection):
    """An sqlite3 connection that can be weakly referenced (the base class cannot)."""


def _file_key(path: Path) -> tuple[int, int] | None:
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    return status.st_dev, status.st_ino


_SQLITE_MAGIC = b"SQLite format 3\x00"


def check_store_file(path: Path) -> None:
    """Raise StoreError, writing nothing, unless `path` is absent, empty, or a sound Foil Studio
    store of this version or older: not a folder, an SQLite file, whole, with our migrations table."""
    if path.is_dir():
        raise StoreError(f"{path} is a folder; expected a Foil Studio store file (give --db FILE or set FOIL_DB)")
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb") as handle:
        header = handle.read(100)
    if not header.startswith(_SQLITE_MAGIC) or len(header) < 100:
        raise StoreError(f"{path} is not a Foil Studio store (not an SQLite database); nothing was written to it. "
                         "Give another --db path.")
    _check_whole(path, header)
    version = _stored_schema_version(path)
    if version > SCHEMA_VERSION:
        raise StoreError(f"{path} was written by a newer Foil Studio (schema version {version}; this one knows up to "
                         f"{SCHEMA_VERSION}); upgrade Foil Studio to open it. Nothing was written to it.")


def _check_whole(path: Path, header: bytes) -> None:
    """A file shorter than the pages its header counts was truncated (header fields per sqlite.org/fileformat)."""
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages, counter, valid_for = (int.from_bytes(header[i:i + 4], "big") for i in (28, 24, 92))
    if counter == valid_for and path.stat().st_size < pages * page_size:
        raise StoreError(f"{path} is damaged: {path.stat().st_size:,} bytes where its header counts {pages * page_size:,} "
                         "(a truncated copy?); restore it from a backup. Nothing was written to it.")


def _stored_schema_version(path: Path) -> int:
    """The migrations a store file records, read through a read-only connection."""
    connection = None
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and "schema_migrations" not in tables:
            raise StoreError(f"{path} is an SQLite database but not a Foil Studio store (it has no schema_migrations "
                             "table); nothing was written to it. Give another --db path.")
        return int(connection.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0]) if tables else 0
    except sqlite3.DatabaseError as error:
        raise StoreError(f"{path} is damaged or not a Foil Studio store ({error}); nothing was written to it") from None
    finally:
        if connection is not None:
            connection.close()


def db_file(db: sqlite_utils.Database) -> Path | None:
    """The file behind a store, or None for an in-memory one."""
    path = db.execute("PRAGMA database_list").fetchone()[2]
    return Path(path) if path else None


def schema_version(db: sqlite_utils.Database) -> int:
    """How many migrations have been applied to `db`."""
    if "schema_migrations" not in db.table_names():
        return 0
    return int(db.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0])


def migrate(db: sqlite_utils.Database, *, upto: int = SCHEMA_VERSION) -> list[str]:
    """Apply the pending migrations up to version `upto`; return the names applied."""
    with transaction(db):
        db.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
    applied = []
    for version in range(schema_version(db) + 1, upto + 1):
        name, step = MIGRATIONS[version - 1]
        with transaction(db):
            step(db)
            db.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                [version, name, _now()],
            )
        applied.append(name)
    return applied


@contextmanager
def transaction(db: sqlite_utils.Database) -> Iterator[None]:
    """All writes inside happen or none do; nested uses become savepoints."""
    conn = db.conn
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
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.rollback()
        raise
    conn.commit()


# --- datasets --------------------------------------------------------------------------------


def ensure_dataset(
    db: sqlite_utils.Database, name: str, source_kind: str, image_root: Path | None = None
) -> int:
    """The id of dataset `name`, created if absent; a newly given image root is recorded."""
    check_name("dataset", name)
    row = db.execute("SELECT id, image_root FROM datasets WHERE name = ?", [name]).fetchone()
    root = str(image_root.resolve()) if image_root is not None else None
    if row is None:
        cursor = db.execute(
            "INSERT INTO datasets (name, source_kind, image_root, created_at) VALUES (?, ?, ?, ?)",
            [name, source_kind, root, _now()],
        )
        return int(cursor.lastrowid)
    if root is not None and row[1] != root:
        db.execute("UPDATE datasets SET image_root = ? WHERE id = ?", [root, row[0]])
    return int(row[0])


def get_dataset(db: sqlite_utils.Database, name: str) -> dict[str, Any]:
    """The dataset row named `name`, or NotFoundError listing the names that exist."""
    rows = list(db.query("SELECT * FROM datasets WHERE name = ?", [name]))
    if not rows:
        known = ", ".join(r["name"] for r in db.query("SELECT name FROM datasets")) or "none"
        raise NotFoundError(f"no dataset named {name!r} (datasets: {known})")
    return rows[0]


def delete_dataset(db: sqlite_utils.Database, name: str) -> None:
    """Remove a dataset with its items, images, runs and scores."""
    dataset_id = get_dataset(db, name)["id"]
    with transaction(db):
        db.execute("DELETE FROM datasets WHERE id = ?", [dataset_id])


def list_datasets(db: sqlite_utils.Database) -> list[dict[str, Any]]:
    """Every dataset with `n_items`, `by_category` counts and image status counts."""
    datasets = list(db.query("SELECT id, name, source_kind AS kind, image_root FROM datasets"))
    for dataset in datasets:
        dataset["by_category"] = category_counts(db, dataset["id"])
        dataset["n_items"] = sum(dataset["by_category"].values())
        dataset["item_kinds"] = item_kind_counts(db, dataset["id"])
        dataset["images"] = image_status_counts(db, dataset["id"])
    return datasets


def dataset_names(db: sqlite_utils.Database, *, with_runs: bool = False) -> list[str]:
    """Names of every dataset (or of those with at least one run), oldest first, without counting items."""
    where = " WHERE EXISTS (SELECT 1 FROM runs WHERE runs.dataset_id = datasets.id)" if with_runs else ""
    return [row[0] for row in db.execute(f"SELECT name FROM datasets{where} ORDER BY id").fetchall()]


def category_counts(db: sqlite_utils.Database, dataset_id: int) -> dict[str, int]:
    """Items per category of one dataset, categories in sorted order."""
    sql = "SELECT category, COUNT(*) FROM items WHERE dataset_id = ? GROUP BY category ORDER BY category"
    return {category: n for category, n in db.execute(sql, [dataset_id]).fetchall()}


def item_kind_counts(db: sqlite_utils.Database, dataset_id: int) -> dict[str, int]:
    """Items per item kind (pair, triple, group...) of one dataset."""
    sql = "SELECT kind, COUNT(*) FROM items WHERE dataset_id = ? GROUP BY kind ORDER BY kind"
    return {kind: n for kind, n in db.execute(sql, [dataset_id]).fetchall()}


def image_status_counts(db: sqlite_utils.Database, dataset_id: int) -> dict[str, int]:
    """Referenced image files of one dataset by status (ok, missing, unreadable)."""
    sql = "SELECT status, COUNT(*) FROM images WHERE dataset_id = ? GROUP BY status"
    return {status: n for status, n in db.execute(sql, [dataset_id]).fetchall()}


# --- items and images ------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredItem:
    """An item as stored, with its database id."""

    id: int
    dataset: str
    item: Item


def upsert_items(
    db: sqlite_utils.Database, dataset_id: int, items: Iterable[Item]
) -> list[tuple[int, bool]]:
    """Insert the items not yet stored; return (item id, newly inserted) in input order.

    Identical items within one input are told apart by their occurrence number, so the same
    file imported twice maps onto the same rows. An item without images matches a stored item
    with the same text; an item with images fills in a stored text-only item.
    """
    content_seen: Counter[str] = Counter()
    text_seen: Counter[str] = Counter()
    result = []
    for item in items:
        item_key = f"{item.content_key}#{content_seen[item.content_key]}"
        text_key = f"{item.text_key}#{text_seen[item.text_key]}"
        content_seen[item.content_key] += 1
        text_seen[item.text_key] += 1
        result.append(_upsert_item(db, dataset_id, item, item_key, text_key))
    return result


def _upsert_item(
    db: sqlite_utils.Database, dataset_id: int, item: Item, item_key: str, text_key: str
) -> tuple[int, bool]:
    found = db.execute(
        "SELECT id FROM items WHERE dataset_id = ? AND item_key = ?", [dataset_id, item_key]
    ).fetchone()
    if found:
        return int(found[0]), False
    same_text = db.execute(
        "SELECT id, images FROM items WHERE dataset_id = ? AND text_key = ?", [dataset_id, text_key]
    ).fetchone()
    if same_text and not item.images:
        return int(same_text[0]), False
    if same_text and same_text[1] == "[]":
        db.execute(
            "UPDATE items SET images = ?, item_key = ? WHERE id = ?",
            [json.dumps(list(item.images)), item_key, same_text[0]],
        )
        return int(same_text[0]), False
    cursor = db.execute(
        "INSERT INTO items (dataset_id, kind, category, source_id, item_key, text_key, captions,"
        " images, truth, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            dataset_id, item.kind, item.category, item.source_id, item_key, text_key,
            json.dumps(list(item.captions)), json.dumps(list(item.images)),
            json.dumps(item.truth), json.dumps(item.meta),
        ],
    )
    return int(cursor.lastrowid), True


def record_images(db: sqlite_utils.Database, dataset_id: int, infos: Iterable[ImageInfo]) -> None:
    """Insert or refresh the image rows of a dataset."""
    db.conn.executemany(
        "INSERT INTO images (dataset_id, path, status, sha256, size, width, height)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (dataset_id, path) DO UPDATE SET"
        " status = excluded.status, sha256 = excluded.sha256, size = excluded.size,"
        " width = excluded.width, height = excluded.height",
        [(dataset_id, i.path, i.status, i.sha256, i.size, i.width, i.height) for i in infos],
    )


def known_image_paths(db: sqlite_utils.Database, dataset_id: int) -> dict[str, str]:
    """Relative path -> status for every image row of a dataset."""
    sql = "SELECT path, status FROM images WHERE dataset_id = ?"
    return dict(db.execute(sql, [dataset_id]).fetchall())


def item_ids_by_category(
    db: sqlite_utils.Database, dataset_id: int, categories: Iterable[str]
) -> dict[int, str]:
    """Item id -> source id of the dataset's items in the given categories."""
    wanted = list(categories)
    marks = ",".join("?" * len(wanted))
    sql = f"SELECT id, source_id FROM items WHERE dataset_id = ? AND category IN ({marks})"
    return dict(db.execute(sql, [dataset_id, *wanted]).fetchall())


def list_items(
    db: sqlite_utils.Database,
    dataset_id: int,
    *,
    category: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> list[dict[str, Any]]:
    """One page of a dataset's items (JSON columns decoded), in import order."""
    where, params = "dataset_id = ?", [dataset_id]
    if category:
        where, params = where + " AND category = ?", [*params, category]
    rows = db.query(
        f"SELECT id, kind, category, source_id, captions, images, truth, meta FROM items"
        f" WHERE {where} ORDER BY id LIMIT ? OFFSET ?",
        [*params, limit, offset],
    )
    return [_decode(row, "captions", "images", "truth", "meta") for row in rows]


def count_items(db: sqlite_utils.Database, dataset_id: int, category: str | None = None) -> int:
    """Number of items in a dataset, optionally in one category."""
    if category:
        sql, params = "SELECT COUNT(*) FROM items WHERE dataset_id = ? AND category = ?", [dataset_id, category]
    else:
        sql, params = "SELECT COUNT(*) FROM items WHERE dataset_id = ?", [dataset_id]
    return int(db.execute(sql, params).fetchone()[0])


def _decode(row: dict[str, Any], *columns: str) -> dict[str, Any]:
    for column in columns:
        if row.get(column) is not None:
            row[column] = json.loads(row[column])
    return row


# --- runs and scores -------------------------------------------------------------------------


def ensure_run(
    db: sqlite_utils.Database,
    dataset_id: int,
    name: str,
    *,
    kind: str,
    model: str | None = None,
    pretrained: str | None = None,
    meta: dict[str, Any] | None = None,
) -> int:
    """The id of run `name` on a dataset, created if absent."""
    check_name("run", name)
    row = db.execute(
        "SELECT id FROM runs WHERE dataset_id = ? AND name = ?", [dataset_id, name]
    ).fetchone()
    if row:
        return int(row[0])
    cursor = db.execute(
        "INSERT INTO runs (name, dataset_id, model, pretrained, kind, meta, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [name, dataset_id, model, pretrained, kind, json.dumps(meta or {}), _now()],
    )
    return int(cursor.lastrowid)


def put_outcomes(
    db: sqlite_utils.Database, run_id: int, rows: Iterable[tuple[int, dict[str, Any]]]
) -> None:
    """Store (item id, outcome) rows of a run; a re-import merges into the same rows."""
    db.conn.executemany(
        "INSERT INTO scores (run_id, item_id, outcome) VALUES (?, ?, ?)"
        " ON CONFLICT (run_id, item_id) DO UPDATE SET outcome = json_patch(COALESCE(scores.outcome, '{}'), excluded.outcome)",
        [(run_id, item_id, json.dumps(outcome)) for item_id, outcome in rows],
    )
    _new_run_version(db, run_id)


def put_scores(db: sqlite_utils.Database, run_id: int, rows: Iterable[tuple[int, Any]]) -> None:
    """Store (item id, similarity scores) rows of a run; scoring again replaces them."""
    db.conn.executemany(
        "INSERT INTO scores (run_id, item_id, scores) VALUES (?, ?, ?)"
        " ON CONFLICT (run_id, item_id) DO UPDATE SET scores = excluded.scores",
        [(run_id, item_id, json.dumps(scores)) for item_id, scores in rows],
    )
    _new_run_version(db, run_id)


def _new_run_version(db: sqlite_utils.Database, run_id: int) -> None:
    """A run's scores changed: its stored summaries and the pages' caches no longer hold."""
    db.execute("UPDATE runs SET version = version + 1 WHERE id = ?", [run_id])


def get_run_summary(db: sqlite_utils.Database, run_id: int, settings: str) -> dict[str, Any] | None:
    """A run's stored metrics under these settings, if computed on its current scores."""
    row = db.execute(
        "SELECT s.summary FROM run_summaries s JOIN runs ON runs.id = s.run_id"
        " WHERE s.run_id = ? AND s.settings = ? AND s.version = runs.version", [run_id, settings]).fetchone()
    return None if row is None else json.loads(row[0])


def put_run_summary(db: sqlite_utils.Database, run_id: int, settings: str, summary: dict[str, Any]) -> None:
    """Store a run's metrics under these settings, for its current scores."""
    with transaction(db):
        db.execute(
            "INSERT OR REPLACE INTO run_summaries (run_id, settings, version, summary, created_at)"
            " SELECT id, ?, version, ?, ? FROM runs WHERE id = ?", [settings, json.dumps(summary), _now(), run_id])


def update_run_meta(db: sqlite_utils.Database, run_id: int, meta: dict[str, Any]) -> None:
    """Replace a run's metadata (model stamp, timings)."""
    db.execute("UPDATE runs SET meta = ? WHERE id = ?", [json.dumps(meta), run_id])


def get_embeddings(db: sqlite_utils.Database, model: str, modality: str, keys: list[str]) -> dict[str, bytes]:
    """Cached vectors of `model` for the given content keys (those present)."""
    found: dict[str, bytes] = {}
    for start in range(0, len(keys), 500):
        chunk = keys[start:start + 500]
        marks = ",".join("?" * len(chunk))
        sql = f"SELECT key, vector FROM embeddings WHERE model = ? AND modality = ? AND key IN ({marks})"
        found.update(db.execute(sql, [model, modality, *chunk]).fetchall())
    return found


def put_embeddings(db: sqlite_utils.Database, model: str, modality: str, vectors: Iterable[tuple[str, bytes]]) -> None:
    """Cache vectors of `model` in one transaction (a batch survives an interrupted run)."""
    with transaction(db):
        db.conn.executemany(
            "INSERT OR REPLACE INTO embeddings (model, modality, key, vector) VALUES (?, ?, ?, ?)",
            [(model, modality, key, vector) for key, vector in vectors],
        )


def image_hashes(db: sqlite_utils.Database, dataset_id: int) -> dict[str, str]:
    """Relative path -> sha256 of every readable image of a dataset."""
    sql = "SELECT path, sha256 FROM images WHERE dataset_id = ? AND status = 'ok'"
    return dict(db.execute(sql, [dataset_id]).fetchall())


def list_runs(db: sqlite_utils.Database, dataset: str | None = None) -> list[dict[str, Any]]:
    """Runs with their dataset name and number of scored items, optionally of one dataset."""
    sql = (
        "SELECT runs.name AS run, datasets.name AS dataset, model, pretrained, runs.kind AS kind,"
        " (SELECT COUNT(*) FROM scores WHERE scores.run_id = runs.id) AS n_items"
        " FROM runs JOIN datasets ON datasets.id = runs.dataset_id"
    )
    if dataset is None:
        return list(db.query(sql + " ORDER BY runs.id"))
    return list(db.query(sql + " WHERE datasets.name = ? ORDER BY runs.id", [dataset]))


def get_run(db: sqlite_utils.Database, dataset: str, name: str) -> dict[str, Any]:
    """The run `name` of a dataset (meta decoded), or NotFoundError listing the dataset's runs."""
    dataset_id = get_dataset(db, dataset)["id"]
    rows = list(db.query("SELECT * FROM runs WHERE dataset_id = ? AND name = ?", [dataset_id, name]))
    if not rows:
        known = ", ".join(r["run"] for r in list_runs(db, dataset)) or "none"
        raise NotFoundError(f"no run named {name!r} on dataset {dataset!r} (runs: {known})")
    return _decode(rows[0], "meta")


@dataclass(frozen=True)
class RunColumns:
    """A run as columns (one entry per scored item, by item id): what metrics and pages read.

    ``run_kind`` is the run's kind (``scores``, or ``correct``/``groups``/``choices`` for imported
    decisions); ``scores`` is one float array (items first) when every item has similarities,
    else None; ``outcomes`` lists the imported decisions (None where an item has none).
    """

    run_kind: str
    item_ids: np.ndarray
    kinds: np.ndarray
    categories: np.ndarray
    scores: np.ndarray | None
    outcomes: list[dict[str, Any] | None]

    def __len__(self) -> int:
        return len(self.item_ids)


def run_columns(db: sqlite_utils.Database, run_id: int) -> RunColumns:
    """Every scored item of a run as columns, decoded in bulk (fast on 100,000 items)."""
    rows = db.execute(
        "SELECT scores.item_id, items.kind, items.category, scores.scores, scores.outcome"
        " FROM scores JOIN items ON items.id = scores.item_id WHERE scores.run_id = ? ORDER BY scores.item_id",
        [run_id],
    ).fetchall()
    ids, kinds, categories, scores, outcomes = zip(*rows) if rows else ((), (), (), (), ())
    return RunColumns(
        run_kind=db.execute("SELECT kind FROM runs WHERE id = ?", [run_id]).fetchone()[0],
        item_ids=np.array(ids, dtype=np.int64),
        kinds=np.array(kinds, dtype=str),
        categories=np.array(categories, dtype=str),
        scores=_score_array(scores) if rows and None not in scores else None,
        outcomes=[None if o is None else json.loads(o) for o in outcomes],
    )


def _score_array(texts: tuple[str, ...]) -> np.ndarray:
    """JSON score lists as one float array (items first), parsed in one pass.

    Retrieval sets may hold different numbers of negatives (CREPE's systematicity files): their
    rows are padded with NaN, which never outranks a caption.
    """
    shape = np.shape(json.loads(texts[0]))
    flat = np.fromstring(",".join(texts).replace("[", " ").replace("]", " "), sep=",")
    if len({text.count(",") for text in texts}) == 1 and flat.size == len(texts) * int(np.prod(shape)):
        return flat.reshape(len(texts), *shape)
    rows = [json.loads(text) for text in texts]
    if any(np.ndim(row) != 1 for row in rows):
        raise StoreError(f"scores of one run have different shapes ({shape} and others); score one item kind per run")
    padded = np.full((len(rows), max(map(len, rows))), np.nan)
    for number, row in enumerate(rows):
        padded[number, :len(row)] = row
    return padded


def dataset_fingerprint(db: sqlite_utils.Database, dataset: str) -> str:
    """Changes whenever a dataset's items, runs, scores, labels or decisions do (a cache key for pages)."""
    dataset_id = get_dataset(db, dataset)["id"]
    row = db.execute(
        "SELECT (SELECT COUNT(*) FROM items WHERE dataset_id = :d),"
        # every write of a run's scores bumps its version: no need to count 100,000s of score rows
        " (SELECT COALESCE(MAX(id), 0) || ':' || COUNT(*) || ':' || COALESCE(SUM(version), 0) FROM runs WHERE dataset_id = :d),"
        " (SELECT COUNT(*) FROM labels JOIN batches ON batches.id = labels.batch_id WHERE batches.dataset_id = :d),"
        # revisions and adjudications change answers without adding labels
        " (SELECT COUNT(*) FROM label_revisions r JOIN labels ON labels.id = r.label_id JOIN batches ON batches.id = labels.batch_id"
        "  WHERE batches.dataset_id = :d),"
        " (SELECT COUNT(*) || ':' || COALESCE(MAX(decisions.decided_at), '') FROM decisions JOIN batches ON batches.id = decisions.batch_id"
        "  WHERE batches.dataset_id = :d)",
        {"d": dataset_id},
    ).fetchone()
    return ":".join(map(str, row))


def items_fingerprint(db: sqlite_utils.Database, dataset_id: int) -> str:
    """Changes whenever items are added to or removed from a dataset (imports never edit items)."""
    row = db.execute("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM items WHERE dataset_id = ?", [dataset_id]).fetchone()
    return f"{row[0]}:{row[1]}"


def put_audit(db: sqlite_utils.Database, dataset: str, settings: str, result: dict[str, Any]) -> None:
    """Store a dataset's audit result under its settings, replacing an older one."""
    dataset_id = get_dataset(db, dataset)["id"]
    with transaction(db):
        db.execute(
            "INSERT OR REPLACE INTO audits (dataset_id, settings, items_fingerprint, result, created_at) VALUES (?, ?, ?, ?, ?)",
            [dataset_id, settings, items_fingerprint(db, dataset_id), json.dumps(result), _now()],
        )


def get_audit(db: sqlite_utils.Database, dataset: str, settings: str) -> dict[str, Any] | None:
    """The stored audit of a dataset under these settings, unless its items changed since."""
    dataset_id = get_dataset(db, dataset)["id"]
    row = db.execute(
        "SELECT result FROM audits WHERE dataset_id = ? AND settings = ? AND items_fingerprint = ?",
        [dataset_id, settings, items_fingerprint(db, dataset_id)],
    ).fetchone()
    return None if row is None else json.loads(row[0])


def run_outcomes(db: sqlite_utils.Database, run_id: int) -> dict[int, dict[str, Any]]:
    """Item id -> outcome of one run."""
    sql = "SELECT item_id, outcome FROM scores WHERE run_id = ? AND outcome IS NOT NULL"
    return {item_id: json.loads(o) for item_id, o in db.execute(sql, [run_id]).fetchall()}


# --- annotators ------------------------------------------------------------------------------


def ensure_annotator(db: sqlite_utils.Database, name: str, external_id: str | None = None) -> dict[str, Any]:
    """The annotator called `name`, created if absent. `token` holds their first link token
    when they were created by this call, else None (tokens are stored only as hashes)."""
    check_name("annotator", name)
    with transaction(db):
        existing = annotator_by_name(db, name)
        if existing is not None:
            return {**existing, "token": None}
        cursor = db.execute(
            "INSERT INTO annotators (name, token, external_id, created_at) VALUES (?, ?, ?, ?)",
            [name, f"pending:{secrets.token_hex(16)}", external_id, _now()])
        annotator_id = int(cursor.lastrowid)
        db.execute("UPDATE annotators SET token = ? WHERE id = ?", [f"hashed:{annotator_id}", annotator_id])
        token = issue_token(db, annotator_id)
    return {"id": annotator_id, "name": name, "external_id": external_id, "token": token}


def issue_token(db: sqlite_utils.Database, annotator_id: int) -> str:
    """A new link token for an annotator (their other tokens stay valid); only its hash is stored."""
    token = secrets.token_urlsafe(16)  # 128 bits
    with transaction(db):
        db.execute("INSERT INTO annotator_tokens (token_hash, annotator_id, created_at) VALUES (?, ?, ?)",
                   [_token_hash(token), annotator_id, _now()])
    return token


def _token_hash(token: str) -> str:
    # An unkeyed hash suffices: tokens are 128-bit random, so no table of guesses can reach them.
    return hashlib.sha256(token.encode()).hexdigest()


def annotator_by_name(db: sqlite_utils.Database, name: str) -> dict[str, Any] | None:
    """The annotator called `name` (id, name, external id), or None."""
    rows = list(db.query("SELECT id, name, external_id FROM annotators WHERE name = ?", [name]))
    return rows[0] if rows else None


def annotator_by_token(db: sqlite_utils.Database, token: str) -> dict[str, Any] | None:
    """The annotator holding `token`, or None; the stored hash is compared in constant time."""
    wanted = _token_hash(token)
    row = db.execute("SELECT token_hash, annotator_id FROM annotator_tokens WHERE token_hash = ?", [wanted]).fetchone()
    if row is None or not hmac.compare_digest(row[0], wanted):
        return None
    return next(db.query("SELECT id, name, external_id FROM annotators WHERE id = ?", [row[1]]))


def list_annotators(db: sqlite_utils.Database) -> list[dict[str, Any]]:
    """Every annotator with id, name and external id (tokens are not listed)."""
    return list(db.query("SELECT id, name, external_id, created_at FROM annotators ORDER BY id"))


# --- batches, assignments, labels ---------------------------------------------------------

# SQL condition: assignment `a` has its label (the same batch, item, part and annotator).
_ANSWERED = (
    "EXISTS (SELECT 1 FROM labels l WHERE l.batch_id = a.batch_id AND l.item_id = a.item_id"
    " AND l.part = a.part AND l.annotator_id = a.annotator_id)"
)


def create_batch(db: sqlite_utils.Database, name: str, dataset_id: int, task: str, config: dict[str, Any]) -> int:
    """Insert a batch; a taken name is a StoreError."""
    check_name("batch", name)
    if db.execute("SELECT 1 FROM batches WHERE name = ?", [name]).fetchone():
        raise StoreError(f"a batch named {name!r} already exists")
    cursor = db.execute(
        "INSERT INTO batches (name, dataset_id, task, config, created_at) VALUES (?, ?, ?, ?, ?)",
        [name, dataset_id, task, json.dumps(config), _now()],
    )
    return int(cursor.lastrowid)


def add_assignments(db: sqlite_utils.Database, batch_id: int, rows: Iterable[tuple[int, int, int, int, bool]]) -> None:
    """Insert (item id, part, annotator id, position, is gold) rows of a batch, handed out now."""
    now = _now()
    db.conn.executemany(
        "INSERT INTO assignments (batch_id, item_id, part, annotator_id, position, is_gold, assigned_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(batch_id, item, part, annotator, position, int(gold), now) for item, part, annotator, position, gold in rows],
    )


def get_batch(db: sqlite_utils.Database, name: str) -> dict[str, Any]:
    """The batch `name` with its dataset name (config decoded), or NotFoundError."""
    rows = list(db.query(
        "SELECT batches.*, datasets.name AS dataset FROM batches JOIN datasets ON datasets.id = batches.dataset_id"
        " WHERE batches.name = ?", [name]))
    if not rows:
        known = ", ".join(r["name"] for r in db.query("SELECT name FROM batches")) or "none"
        raise NotFoundError(f"no batch named {name!r} (batches: {known})")
    return _decode(rows[0], "config")


def batch_by_crowd_token(db: sqlite_utils.Database, token: str) -> dict[str, Any] | None:
    """The crowd batch whose study link carries `token`, or None."""
    rows = list(db.query("SELECT name FROM batches WHERE json_extract(config, '$.crowd_token') = ?", [token]))
    return get_batch(db, rows[0]["name"]) if rows else None


def list_batches(db: sqlite_utils.Database) -> list[dict[str, Any]]:
    """Every batch with its dataset, task and label counts."""
    rows = db.query(
        "SELECT batches.id, batches.name, datasets.name AS dataset, task, batches.created_at,"
        " (SELECT COUNT(*) FROM assignments a WHERE a.batch_id = batches.id) AS n_assignments,"
        " (SELECT COUNT(*) FROM labels l WHERE l.batch_id = batches.id) AS n_labels"
        " FROM batches JOIN datasets ON datasets.id = batches.dataset_id ORDER BY batches.id"
    )
    return list(rows)


def batch_assignments(db: sqlite_utils.Database, batch_id: int) -> list[dict[str, Any]]:
    """Every assignment of a batch with annotator name and whether it is answered."""
    return list(db.query(
        "SELECT a.id, a.item_id, a.part, annotators.name AS annotator, a.annotator_id, a.position, a.is_gold,"
        f" a.opened_at, {_ANSWERED} AS done FROM assignments a"
        " JOIN annotators ON annotators.id = a.annotator_id WHERE a.batch_id = ? ORDER BY a.annotator_id, a.position",
        [batch_id]))


def annotator_batches(db: sqlite_utils.Database, annotator_id: int) -> list[dict[str, Any]]:
    """The batches holding work for one annotator, with their progress."""
    return list(db.query(
        "SELECT b.id, b.name, b.task, b.config, COUNT(a.id) AS assigned,"
        f" SUM({_ANSWERED}) AS done"
        " FROM assignments a JOIN batches b ON b.id = a.batch_id WHERE a.annotator_id = ?"
        " GROUP BY b.id ORDER BY b.id", [annotator_id]))


def unanswered_assignments(db: sqlite_utils.Database, annotator_id: int, batch_id: int, limit: int = 1) -> list[dict[str, Any]]:
    """The annotator's first `limit` unanswered assignments in the batch, in queue order (the first is the resume point)."""
    return list(db.query(
        f"SELECT a.* FROM assignments a WHERE a.annotator_id = ? AND a.batch_id = ? AND NOT {_ANSWERED}"
        " ORDER BY a.position LIMIT ?", [annotator_id, batch_id, limit]))


def open_assignment(db: sqlite_utils.Database, assignment_id: int) -> str:
    """Start the lease and the timer of an assignment the first time its item is drawn; return
    when that was. Writes only on the first draw (a reload keeps the first time)."""
    row = db.execute("SELECT opened_at FROM assignments WHERE id = ?", [assignment_id]).fetchone()
    if row is None:
        raise NotFoundError(f"no assignment with id {assignment_id}")
    if row[0] is not None:
        return str(row[0])
    with transaction(db):
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


def save_label(db: sqlite_utils.Database, label: LabelWrite, *, min_seconds: float = 0.0) -> tuple[int, bool]:
    """Store an answer once: (label id, newly stored). A resubmission keeps the first answer.

    Checked inside the write transaction, so no lease reassignment can slip in between: the
    assignment must be this annotator's, its item drawn for them (``opened_at``) at least
    `min_seconds` ago. Anything else raises LabelRefused and nothing is written. The item timer
    runs from the first draw.
    """
    key = [label.batch_id, label.item_id, label.part, label.annotator_id]
    with transaction(db):
        assignment = db.execute(
            "SELECT opened_at FROM assignments WHERE batch_id = ? AND item_id = ? AND part = ? AND annotator_id = ?", key).fetchone()
        if assignment is None:
            raise LabelRefused("not_in_queue", "This item is not in your queue (any more): its lease may have run out and "
                               "it went to another annotator. Your answer was not stored.")
        stored = db.execute("SELECT id FROM labels WHERE batch_id = ? AND item_id = ? AND part = ? AND annotator_id = ?", key).fetchone()
        if stored is not None:
            return int(stored[0]), False
        opened_at = assignment[0]
        if opened_at is None:
            raise LabelRefused("not_opened", "This item was not shown to you yet. Your answer was not stored.")
        submitted = _now()
        seconds = _seconds_between(opened_at, submitted)
        if seconds is not None and seconds < min_seconds:
            raise LabelRefused("too_fast", f"This item was on screen for only {seconds:.2f} s, too briefly to be read "
                               "(a key held down or pressed twice?). Your answer was not stored: look, then answer.")
        cursor = db.execute(
            "INSERT INTO labels (batch_id, item_id, part, annotator_id, task, answer, displayed_order, flags,"
            " comment, started_at, submitted_at, seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [*key, label.task, json.dumps(label.answer), json.dumps(label.displayed_order), json.dumps(label.flags),
             label.comment, opened_at, submitted, seconds])
    return int(cursor.lastrowid), True


def _seconds_between(started: str | None, submitted: str) -> float | None:
    if not started:
        return None
    return (datetime.fromisoformat(submitted) - datetime.fromisoformat(started)).total_seconds()


def revise_label(db: sqlite_utils.Database, label_id: int, answer: dict[str, Any], *, by: str, reason: str = "") -> None:
    """The admin changes an answer; the previous one is kept in label_revisions."""
    with transaction(db):
        row = db.execute("SELECT answer FROM labels WHERE id = ?", [label_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no label with id {label_id}")
        db.execute(
            "INSERT INTO label_revisions (label_id, previous_answer, new_answer, revised_by, reason, revised_at)"
            " VALUES (?, ?, ?, ?, ?, ?)", [label_id, row[0], json.dumps(answer), by, reason, _now()])
        db.execute("UPDATE labels SET answer = ? WHERE id = ?", [json.dumps(answer), label_id])


def batch_labels(db: sqlite_utils.Database, batch_id: int) -> list[dict[str, Any]]:
    """Every label of a batch with annotator name, decoded answer and displayed order."""
    rows = db.query(
        "SELECT l.id, annotators.name AS annotator, l.item_id AS item, items.source_id, items.category, l.part,"
        " l.task, l.answer, l.displayed_order, l.flags, l.comment, l.started_at, l.submitted_at, l.seconds,"
        " a.is_gold FROM labels l JOIN annotators ON annotators.id = l.annotator_id JOIN items ON items.id = l.item_id"
        " JOIN assignments a ON a.batch_id = l.batch_id AND a.item_id = l.item_id AND a.part = l.part"
        " AND a.annotator_id = l.annotator_id WHERE l.batch_id = ? ORDER BY l.id", [batch_id])
    return [_decode(row, "answer", "displayed_order", "flags") for row in rows]


def item_labels(db: sqlite_utils.Database, item_ids: Iterable[int]) -> list[dict[str, Any]]:
    """Every label given to these items in any batch: batch, task, annotator, answer, flags, comment."""
    wanted = sorted(set(item_ids))
    found: list[dict[str, Any]] = []
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        rows = db.query(
            "SELECT l.item_id AS item, l.part, batches.name AS batch, l.task, annotators.name AS annotator,"
            " l.answer, l.flags, l.comment FROM labels l JOIN batches ON batches.id = l.batch_id"
            f" JOIN annotators ON annotators.id = l.annotator_id WHERE l.item_id IN ({','.join('?' * len(chunk))})"
            " ORDER BY l.item_id, l.id", chunk)
        found.extend(_decode(row, "answer", "flags") for row in rows)
    return found


def items_by_id(db: sqlite_utils.Database, item_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """Decoded item rows by id."""
    wanted = sorted(set(item_ids))
    found: dict[int, dict[str, Any]] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        rows = db.query(
            f"SELECT id, kind, category, source_id, captions, images, truth, meta FROM items WHERE id IN ({','.join('?' * len(chunk))})",
            chunk)
        found.update({row["id"]: _decode(row, "captions", "images", "truth", "meta") for row in rows})
    return found


def decide(db: sqlite_utils.Database, batch_id: int, item_id: int, part: int, answer: dict[str, Any], *, by: str, reason: str = "") -> None:
    """Record (or replace) the admin's decision on one question of a batch."""
    with transaction(db):
        db.execute(
            "INSERT INTO decisions (batch_id, item_id, part, answer, decided_by, reason, decided_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (batch_id, item_id, part) DO UPDATE SET answer = excluded.answer,"
            " decided_by = excluded.decided_by, reason = excluded.reason, decided_at = excluded.decided_at",
            [batch_id, item_id, part, json.dumps(answer), by, reason, _now()])


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
        " OR (a.opened_at IS NULL AND a.annotator_id IN (SELECT b.annotator_id FROM assignments b WHERE b.batch_id = a.batch_id"
        " GROUP BY b.annotator_id HAVING MAX(MAX(COALESCE(b.assigned_at, '')), MAX(COALESCE(b.opened_at, '')),"
        " COALESCE((SELECT MAX(l.submitted_at) FROM labels l WHERE l.batch_id = a.batch_id AND l.annotator_id = b.annotator_id), ''))"
        " < :idle_before))"
    ) if idle_before else ""
    return list(db.query(
        f"SELECT a.* FROM assignments a WHERE a.batch_id = :batch AND NOT {_ANSWERED}"
        f" AND ((a.opened_at IS NOT NULL AND a.opened_at < :opened_before){idle}) ORDER BY a.id",
        {"batch": batch_id, "opened_before": opened_before, "idle_before": idle_before}))


def delete_assignment(db: sqlite_utils.Database, assignment_id: int) -> None:
    """Drop an unanswered assignment (its unit returns to a crowd batch's pool)."""
    db.execute(f"DELETE FROM assignments AS a WHERE id = ? AND NOT {_ANSWERED}", [assignment_id])


def move_assignment(db: sqlite_utils.Database, assignment_id: int, annotator_id: int, position: int) -> None:
    """Give an unanswered assignment to another annotator, at `position` in their queue, unopened."""
    db.execute(
        f"UPDATE assignments AS a SET annotator_id = ?, position = ?, opened_at = NULL, assigned_at = ? WHERE id = ? AND NOT {_ANSWERED}",
        [annotator_id, position, _now(), assignment_id])


# --- crowd studies ---------------------------------------------------------------------------


def record_join(db: sqlite_utils.Database, batch_id: int, annotator_id: int, external_id: str) -> None:
    """Log a participant joining a crowd study (once per participant)."""
    db.execute(
        "INSERT INTO crowd_joins (batch_id, annotator_id, external_id, joined_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (batch_id, annotator_id) DO NOTHING", [batch_id, annotator_id, external_id, _now()])


def joins_since(db: sqlite_utils.Database, batch_id: int, since: str) -> int:
    """How many participants joined a crowd study at or after `since`."""
    return int(db.execute("SELECT COUNT(*) FROM crowd_joins WHERE batch_id = ? AND joined_at >= ?", [batch_id, since]).fetchone()[0])


def participants_holding_work(db: sqlite_utils.Database, batch_id: int) -> int:
    """Participants of a batch who hold at least one assignment (answered or not)."""
    return int(db.execute("SELECT COUNT(DISTINCT annotator_id) FROM assignments WHERE batch_id = ?", [batch_id]).fetchone()[0])


def crowd_joins(db: sqlite_utils.Database, batch_id: int) -> list[dict[str, Any]]:
    """Every participant who joined a crowd study: external id, when, and their assignments now."""
    return list(db.query(
        "SELECT annotators.name AS annotator, j.external_id, j.joined_at,"
        " (SELECT COUNT(*) FROM assignments a WHERE a.batch_id = j.batch_id AND a.annotator_id = j.annotator_id) AS held,"
        " (SELECT COUNT(*) FROM labels l WHERE l.batch_id = j.batch_id AND l.annotator_id = j.annotator_id) AS answered"
        " FROM crowd_joins j JOIN annotators ON annotators.id = j.annotator_id WHERE j.batch_id = ? ORDER BY j.id", [batch_id]))


def set_batch_closed(db: sqlite_utils.Database, batch_id: int, closed: bool) -> None:
    """Close a crowd study to new participants (or open it again)."""
    with transaction(db):
        db.execute("UPDATE batches SET closed_at = ? WHERE id = ?", [_now() if closed else None, batch_id])


# --- import log ------------------------------------------------------------------------------


def log_import(
    db: sqlite_utils.Database,
    dataset_id: int,
    *,
    kind: str,
    path: str,
    n_items: int,
    n_new_items: int,
    run: str | None,
) -> None:
    """Record one finished import."""
    db.execute(
        "INSERT INTO imports (dataset_id, kind, path, n_items, n_new_items, run, imported_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [dataset_id, kind, path, n_items, n_new_items, run, _now()],
    )
