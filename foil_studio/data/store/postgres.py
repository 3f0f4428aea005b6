"""The store on PostgreSQL: a psycopg 3 connection that answers the calls the store makes.

The store's functions are written once, against the few methods of ``sqlite_utils.Database``
they use (``execute``, ``query``, ``executescript``, ``table_names`` and ``conn``), in SQL both
engines read. ``PostgresDatabase`` offers the same methods over psycopg, turning SQLite's
``?`` and ``:name`` parameters into psycopg's; where the dialects differ, the store asks
``dialect.py`` for the fragment. This keeps one SQL text per query and one module per engine
(SQLAlchemy Core would have replaced every query for the sake of the five that differ).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from foil_studio.data.store.dialect import postgres_ddl

_QUOTED = re.compile(r"('(?:[^']|'')*')")
_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


@lru_cache(maxsize=2048)  # the store's statements are a few hundred texts, turned on every call
def to_psycopg(sql: str) -> str:
    """SQLite's parameter marks (``?``, ``:name``) as psycopg's (``%s``, ``%(name)s``), outside
    quoted literals; a literal ``%`` doubled.

    >>> to_psycopg("SELECT a || ':' FROM t WHERE x = ? AND y::text = :y AND z LIKE '%?'")
    "SELECT a || ':' FROM t WHERE x = %s AND y::text = %(y)s AND z LIKE '%%?'"
    """
    parts = _QUOTED.split(sql)
    for number, part in enumerate(parts):
        if number % 2:  # a quoted literal
            parts[number] = part.replace("%", "%%")
        else:
            part = part.replace("%", "%%").replace("?", "%s")
            parts[number] = _NAMED.sub(r"%(\1)s", part)
    return "".join(parts)


class PostgresConnection:
    """The part of an sqlite3 connection the store uses, over one psycopg connection in
    autocommit mode: a statement outside ``store.transaction`` commits alone, as in SQLite."""

    write_lock = None  # PostgreSQL takes its own locks (`base.transaction`)

    def __init__(self, url: str) -> None:
        self.raw = psycopg.connect(url, autocommit=True)
        # One browser session's connection can be used by two threads at once (a rerun the
        # browser asks for while the last one is ending): a transaction and every statement hold
        # this, so no statement of one thread lands inside, or ends, the other's transaction.
        self.session_lock = threading.RLock()

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    def execute(
        self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None, *, binary: bool = False
    ) -> psycopg.Cursor:
        # without parameters psycopg sends the text as it is (no marks to turn, no % to double);
        # `binary` results skip bytea's hex text (a 32 MB blob: 0.48 s as text, 0.2 s binary)
        with self.session_lock:
            return (
                self.raw.execute(to_psycopg(sql), params, binary=binary)
                if params
                else self.raw.execute(sql, binary=binary)
            )

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = list(rows)
        if rows:
            with self.session_lock, self.raw.cursor() as cursor:
                cursor.executemany(to_psycopg(sql), rows)

    def copy_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Write rows with COPY: one stream instead of a statement per row."""
        statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
            sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns))
        )
        with self.session_lock, self.raw.cursor() as cursor, cursor.copy(statement) as copy:
            for row in rows:
                copy.write_row(row)

    def commit(self) -> None:
        if self.in_transaction:
            self.raw.execute("COMMIT")

    def rollback(self) -> None:
        if self.in_transaction:
            self.raw.execute("ROLLBACK")

    def close(self) -> None:
        self.raw.close()


class PostgresDatabase:
    """A PostgreSQL store with the methods of ``sqlite_utils.Database`` that the store calls."""

    engine = "postgresql"

    def __init__(self, url: str) -> None:
        self.url = url
        self.conn = PostgresConnection(url)

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> psycopg.Cursor:
        return self.conn.execute(sql, params)

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        with self.conn.raw.cursor(row_factory=dict_row) as cursor:
            if params:
                cursor.execute(to_psycopg(sql), params)
            else:
                cursor.execute(sql)
            yield from cursor.fetchall()

    def executescript(self, sql: str) -> None:
        """Run a migration's statements (SQLite DDL, in PostgreSQL's types)."""
        self.conn.raw.execute(postgres_ddl(sql))  # several statements, no parameters: sent as one

    def table_names(self) -> list[str]:
        return [
            row[0]
            for row in self.conn.raw.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY "
                "table_name"
            )
        ]


def connect(url: str) -> PostgresDatabase:
    """A connection to the PostgreSQL store at `url` (nothing is created or migrated here)."""
    return PostgresDatabase(url)
