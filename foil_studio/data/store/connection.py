"""Opening a store: a checked SQLite file (WAL, one writer at a time per file in this process)
or a PostgreSQL URL, migrated on opening or refused when behind; where an open store lives."""

from __future__ import annotations

import re
import sqlite3
import threading
import weakref
from pathlib import Path
from typing import cast

import psycopg
import sqlite_utils

from foil_studio.data.paths import is_store_url
from foil_studio.data.store.base import StoreError
from foil_studio.data.store.dialect import is_postgres
from foil_studio.data.store.postgres import PostgresDatabase
from foil_studio.data.store.schema import SCHEMA_VERSION, migrate, schema_version


class StoreBehindError(StoreError):
    """A store opened without migrating is at an older schema than this code."""


def open_db(
    path: str | Path | None = None, *, upto: int = SCHEMA_VERSION, migrate_now: bool = True, shared: bool = False
) -> sqlite_utils.Database:
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
        raise StoreBehindError(
            f"{path} is at schema version {schema_version(db)}, this Foil Studio needs {upto}: restart the app, which "
            "migrates it at start-up"
        )
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
            raise StoreError(
                f"{redacted(path)} holds no Foil Studio store (no migrations applied); nothing was read or written"
            )
        migrate(db)
        return db
    file = Path(path)
    if not file.is_file() or file.stat().st_size == 0:
        raise StoreError(
            f"no store at {file}: {'it is empty' if file.is_file() else 'no such file'}; nothing was created or copied"
        )
    check_store_file(file)
    if _stored_schema_version(file) == 0:
        raise StoreError(f"{file} holds no Foil Studio store (no migrations applied); nothing was created or copied")
    return open_db(file)


def _connect_postgres(url: str) -> sqlite_utils.Database:
    """A connection to a PostgreSQL store, refused (StoreError) when the server cannot be reached
    or the database was written by a newer Foil Studio. Typed as the sqlite-utils Database whose
    few methods the store calls, which PostgresDatabase provides."""
    try:
        db = cast(sqlite_utils.Database, PostgresDatabase(url))
    except psycopg.OperationalError as error:
        raise StoreError(f"cannot open the PostgreSQL store {redacted(url)}: {str(error).strip()}") from None
    version = schema_version(db)
    if version > SCHEMA_VERSION:
        db.conn.close()
        raise StoreError(
            f"{redacted(url)} was written by a newer Foil Studio (schema version {version}; this one knows up to "
            f"{SCHEMA_VERSION}); upgrade Foil Studio to open it. Nothing was written to it."
        )
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
        opened = _file_key(path)
        assert opened is not None  # the file exists now: sqlite3.connect created it
        connection.write_lock = _write_locks.setdefault(opened, threading.RLock())
        _live_connections.setdefault(opened, weakref.WeakSet()).add(connection)
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
        raise StoreError(
            f"{path} is not a Foil Studio store (not an SQLite database); nothing was written to it. "
            "Give another --db path."
        )
    _check_whole(path, header)
    version = _stored_schema_version(path)
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} was written by a newer Foil Studio (schema version {version}; this one knows up to "
            f"{SCHEMA_VERSION}); upgrade Foil Studio to open it. Nothing was written to it."
        )


def _check_whole(path: Path, header: bytes) -> None:
    """A file shorter than the pages its header counts was truncated (header fields per sqlite.org/fileformat)."""
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages, counter, valid_for = (int.from_bytes(header[i : i + 4], "big") for i in (28, 24, 92))
    if counter == valid_for and path.stat().st_size < pages * page_size:
        raise StoreError(
            f"{path} is damaged: {path.stat().st_size:,} bytes where its header counts {pages * page_size:,} "
            "(a truncated copy?); restore it from a backup. Nothing was written to it."
        )


def _stored_schema_version(path: Path) -> int:
    """The migrations a store file records, read through a read-only connection."""
    connection = None
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and "schema_migrations" not in tables:
            raise StoreError(
                f"{path} is an SQLite database but not a Foil Studio store (it has no schema_migrations "
                "table); nothing was written to it. Give another --db path."
            )
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
    return cast(PostgresDatabase, db).url if is_postgres(db) else db_file(db)
