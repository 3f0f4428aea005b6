"""The schema: forward-only migrations, opening (and checking) a store file, its version."""

from __future__ import annotations

import re
import sqlite3
import threading
import weakref
from pathlib import Path

import psycopg
import sqlite_utils

from data.paths import is_store_url
from data.store.base import Migration, StoreError, _now, _token_hash, transaction
from data.store.dialect import is_postgres
from data.store.postgres import PostgresDatabase


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


def _m0010_answered_assignments(db: sqlite_utils.Database) -> None:
    # An assignment says whether it is answered (kept by triggers on labels, whatever writes
    # them), so the annotator page's checks read a few open rows through a partial index instead
    # of testing every assignment of the batch against the labels on each rerun.
    db.executescript(
        """
        ALTER TABLE assignments ADD COLUMN answered INTEGER NOT NULL DEFAULT 0;
        UPDATE assignments AS a SET answered = 1 WHERE EXISTS (SELECT 1 FROM labels l WHERE l.batch_id = a.batch_id
            AND l.item_id = a.item_id AND l.part = a.part AND l.annotator_id = a.annotator_id);
        CREATE INDEX assignments_open ON assignments (batch_id, opened_at) WHERE answered = 0;
        """
    )
    if is_postgres(db):
        db.executescript(_POSTGRES_ANSWERED_TRIGGERS)
        return
    db.executescript(
        """
        CREATE TRIGGER labels_answer_assignment AFTER INSERT ON labels BEGIN
            UPDATE assignments SET answered = 1 WHERE batch_id = NEW.batch_id AND item_id = NEW.item_id
                AND part = NEW.part AND annotator_id = NEW.annotator_id;
        END;
        CREATE TRIGGER labels_unanswer_assignment AFTER DELETE ON labels BEGIN
            UPDATE assignments SET answered = 0 WHERE batch_id = OLD.batch_id AND item_id = OLD.item_id
                AND part = OLD.part AND annotator_id = OLD.annotator_id;
        END;
        """
    )


def _m0011_crowd_quota(db: sqlite_utils.Database) -> None:
    # How many units a participant was dealt in all: their completion code needs that many
    # answers, not merely an empty queue (units they did not open go back to the pool).
    db.executescript(
        """
        ALTER TABLE crowd_joins ADD COLUMN quota INTEGER NOT NULL DEFAULT 0;
        UPDATE crowd_joins SET quota = (SELECT COUNT(*) FROM assignments a
            WHERE a.batch_id = crowd_joins.batch_id AND a.annotator_id = crowd_joins.annotator_id);
        """
    )


def _m0012_returned_studies(db: sqlite_utils.Database) -> None:
    # A participant who returns a crowd study (Prolific's word) gives back their open units at
    # once and takes no more.
    db.executescript("ALTER TABLE crowd_joins ADD COLUMN returned_at TEXT;")


def _m0013_shown_at(db: sqlite_utils.Database) -> None:
    # When the annotator's browser reported the whole item on screen (every caption and image):
    # the reading clock starts there, not when the server drew the item.
    db.executescript("ALTER TABLE assignments ADD COLUMN shown_at TEXT;")


_POSTGRES_ANSWERED_TRIGGERS = """
    CREATE FUNCTION labels_mark_assignment() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            UPDATE assignments SET answered = 1 WHERE batch_id = NEW.batch_id AND item_id = NEW.item_id
                AND part = NEW.part AND annotator_id = NEW.annotator_id;
        ELSE
            UPDATE assignments SET answered = 0 WHERE batch_id = OLD.batch_id AND item_id = OLD.item_id
                AND part = OLD.part AND annotator_id = OLD.annotator_id;
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER labels_answer_assignment AFTER INSERT ON labels FOR EACH ROW EXECUTE FUNCTION labels_mark_assignment();
    CREATE TRIGGER labels_unanswer_assignment AFTER DELETE ON labels FOR EACH ROW EXECUTE FUNCTION labels_mark_assignment();
"""


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
    ("0010_answered_assignments", _m0010_answered_assignments),
    ("0011_crowd_quota", _m0011_crowd_quota),
    ("0012_returned_studies", _m0012_returned_studies),
    ("0013_shown_at", _m0013_shown_at),
]
SCHEMA_VERSION = len(MIGRATIONS)


# --- connection and transactions -------------------------------------------------------------


class StoreBehindError(StoreError):
    """A store opened without migrating is at an older schema than this code."""


def open_db(path: str | Path | None = None, *, upto: int = SCHEMA_VERSION, migrate_now: bool = True, shared: bool = False) -> sqlite_utils.Database:
    """Open (creating if needed) the store at `path`, or in memory when `path` is None; a
    ``postgresql://`` URL opens that PostgreSQL database (which must exist) instead of a file.

    The CLI and tests migrate on opening. The app migrates once at start-up and then opens with
    ``migrate_now=False``: a store that is not at the current schema is refused
    (``StoreBehindError``) rather than migrated mid-session. A connection belongs to the calling
    thread unless ``shared``: the app keeps one per browser session, whose reruns and fragments
    run one at a time on changing threads.
    """
    if is_store_url(path):
        db = _connect_postgres(str(path))
    else:
        db = sqlite_utils.Database(memory=True) if path is None else _connect_checked(Path(path), shared=shared)
        db.conn.execute("PRAGMA foreign_keys = ON")
        db.conn.execute("PRAGMA busy_timeout = 10000")
    if migrate_now:
        migrate(db, upto=upto)
    elif schema_version(db) != upto:
        raise StoreBehindError(f"{path} is at schema version {schema_version(db)}, this Foil Studio needs {upto}: restart the app, which migrates it at start-up")
    return db


def open_existing_db(path: str | Path) -> sqlite_utils.Database:
    """Open a store that must already exist (the source of a copy), migrated to this version.

    Refused with StoreError, creating nothing, when the file is absent or empty, or the file or
    PostgreSQL database holds no Foil Studio store (no migrations applied).
    """
    if is_store_url(path):
        db = _connect_postgres(str(path))
        if schema_version(db) == 0:
            db.conn.close()
            raise StoreError(f"{redacted(path)} holds no Foil Studio store (no migrations applied); nothing was read or written")
        migrate(db)
        return db
    file = Path(path)
    if not file.is_file() or file.stat().st_size == 0:
        raise StoreError(f"no store at {file}: {'it is empty' if file.is_file() else 'no such file'}; nothing was created or copied")
    check_store_file(file)
    if _stored_schema_version(file) == 0:
        raise StoreError(f"{file} holds no Foil Studio store (no migrations applied); nothing was created or copied")
    return open_db(file)


def _connect_postgres(url: str) -> PostgresDatabase:
    """A connection to a PostgreSQL store, refused (StoreError) when the server cannot be reached
    or the database was written by a newer Foil Studio."""
    try:
        db = PostgresDatabase(url)
    except psycopg.OperationalError as error:
        raise StoreError(f"cannot open the PostgreSQL store {redacted(url)}: {str(error).strip()}") from None
    version = schema_version(db)
    if version > SCHEMA_VERSION:
        db.conn.close()
        raise StoreError(f"{redacted(url)} was written by a newer Foil Studio (schema version {version}; this one knows up to "
                         f"{SCHEMA_VERSION}); upgrade Foil Studio to open it. Nothing was written to it.")
    return db


def redacted(location: str | Path) -> str:
    """A store location fit to print: a URL's password replaced by ***.

    >>> redacted("postgresql://foil:s3cret@db:5432/foil")
    'postgresql://foil:***@db:5432/foil'
    """
    return re.sub(r"^(\w+://[^:/@]+):[^@]*@", r"\1:***@", str(location))


# Store files with a live connection in this process, by (device, inode). Closing any file
# descriptor of a file drops every POSIX lock this process holds on it (sqlite.org/howtocorrupt.html,
# 2.2), so the raw header check must not run while a connection here may hold locks: another
# process could then checkpoint and reset the WAL under that connection and this process would
# go on reading an old snapshot (seen: links issued by the CLI refused by the running app).
_live_connections: dict[tuple[int, int], weakref.WeakSet] = {}
_opening = threading.Lock()
# One writer at a time per store file within this process (`base.transaction` takes it): threads
# queue here, in order, instead of in SQLite's busy handler, which sleeps in steps of up to 100 ms
# and let 50 concurrent annotators wait seconds for a write of a millisecond. Other processes
# (the CLI, another server) still meet SQLite's own lock and busy timeout.
_write_locks: dict[tuple[int, int] | None, threading.RLock] = {}


def _connect_checked(path: Path, *, shared: bool = False) -> sqlite_utils.Database:
    """A WAL connection to `path`, checked first (check_store_file) unless this process already
    holds a live connection to the same file, which was checked when it was opened."""
    with _opening:
        key = _file_key(path)
        if key is None or not _live_connections.get(key):
            check_store_file(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(path, factory=_TrackedConnection, check_same_thread=not shared)
        db = sqlite_utils.Database(connection)
        db.enable_wal()
        connection.write_lock = _write_locks.setdefault(_file_key(path), threading.RLock())
        _live_connections.setdefault(_file_key(path), weakref.WeakSet()).add(connection)
        for gone in [file for file, alive in _live_connections.items() if not alive]:
            del _live_connections[gone]  # files no connection holds any more
    return db


class _TrackedConnection(sqlite3.Connection):
    """An sqlite3 connection that can be weakly referenced (the base class cannot) and carries
    its file's write lock."""

    write_lock: threading.RLock | None = None


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
    """The file behind a store, or None for an in-memory or PostgreSQL one."""
    if is_postgres(db):
        return None
    path = db.execute("PRAGMA database_list").fetchone()[2]
    return Path(path) if path else None


def location(db: sqlite_utils.Database) -> str | Path | None:
    """Where a store lives, as --db takes it: its file, its PostgreSQL URL, or None in memory."""
    return db.url if is_postgres(db) else db_file(db)


def schema_version(db: sqlite_utils.Database) -> int:
    """How many migrations have been applied to `db`."""
    if "schema_migrations" not in db.table_names():
        return 0
    return int(db.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0])


def migrate(db: sqlite_utils.Database, *, upto: int = SCHEMA_VERSION) -> list[str]:
    """Apply the pending migrations up to version `upto`; return the names applied.

    A store already at `upto` is only read (no write lock). Each migration re-reads the version
    inside its own write transaction, so two processes opening an old store at once apply each
    migration once.
    """
    if schema_version(db) >= upto:
        return []
    with transaction(db):
        db.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
    applied = []
    for version in range(1, upto + 1):
        name, step = MIGRATIONS[version - 1]
        with transaction(db):
            if schema_version(db) >= version:
                continue
            step(db)
            db.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                [version, name, _now()],
            )
        applied.append(name)
    return applied
