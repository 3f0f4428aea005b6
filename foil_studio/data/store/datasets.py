"""Datasets, their items and images, and the import log."""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import sqlite_utils

from foil_studio.data.images import ImageInfo
from foil_studio.data.items import Item, texts_json
from foil_studio.data.store import dialect
from foil_studio.data.store.base import NotFoundError, StoreError, _decode, _now, check_name, transaction
from foil_studio.data.store.rows import DatasetRow, DatasetSummary, ItemRow

# --- datasets --------------------------------------------------------------------------------


def ensure_dataset(db: sqlite_utils.Database, name: str, source_format: str, image_root: Path | None = None) -> int:
    """The id of dataset `name`, created if absent; a newly given image root is recorded."""
    check_name("dataset", name)
    row = db.execute("SELECT id, image_root FROM datasets WHERE name = ?", [name]).fetchone()
    root = str(image_root.resolve()) if image_root is not None else None
    if row is None:
        return int(
            db.execute(
                "INSERT INTO datasets (name, source_format, image_root, created_at) VALUES (?, ?, ?, ?) RETURNING id",
                [name, source_format, root, _now()],
            ).fetchone()[0]
        )
    if root is not None and row[1] != root:
        db.execute("UPDATE datasets SET image_root = ? WHERE id = ?", [root, row[0]])
    return int(row[0])


def get_dataset(db: sqlite_utils.Database, name: str) -> DatasetRow:
    """The dataset row named `name`, or NotFoundError listing the names that exist."""
    rows = list(db.query("SELECT * FROM datasets WHERE name = ?", [name]))
    if not rows:
        known = ", ".join(r["name"] for r in db.query("SELECT name FROM datasets ORDER BY name")) or "none"
        raise NotFoundError(f"no dataset named {name!r} (datasets: {known})")
    return cast(DatasetRow, rows[0])


def delete_dataset(db: sqlite_utils.Database, name: str) -> None:
    """Remove a dataset with its items, images, runs and scores."""
    dataset_id = get_dataset(db, name)["id"]
    with transaction(db):
        db.execute("DELETE FROM datasets WHERE id = ?", [dataset_id])


def list_datasets(db: sqlite_utils.Database) -> list[DatasetSummary]:
    """Every dataset with `n_items`, `by_category` counts and image status counts."""
    datasets = list(db.query("SELECT id, name, source_format AS format, image_root FROM datasets"))
    for dataset in datasets:
        counts = kind_category_counts(db, dataset["id"])
        dataset["by_category"] = _summed(counts, by=1)
        dataset["n_items"] = sum(counts.values())
        dataset["item_kinds"] = _summed(counts, by=0)
        dataset["images"] = image_status_counts(db, dataset["id"])
    return cast(list[DatasetSummary], datasets)


def dataset_names(db: sqlite_utils.Database, *, with_runs: bool = False) -> list[str]:
    """Names of every dataset (or of those with at least one run), oldest first, without counting items."""
    where = " WHERE EXISTS (SELECT 1 FROM runs WHERE runs.dataset_id = datasets.id)" if with_runs else ""
    return [row[0] for row in db.execute(f"SELECT name FROM datasets{where} ORDER BY id").fetchall()]


def kind_category_counts(db: sqlite_utils.Database, dataset_id: int) -> dict[tuple[str, str], int]:
    """Items per (item kind, category) of one dataset, sorted (`item_counts`, kept as items are
    written: no item row read)."""
    sql = "SELECT kind, category, n FROM item_counts WHERE dataset_id = ? ORDER BY kind, category"
    return {(kind, category): int(n) for kind, category, n in db.execute(sql, [dataset_id]).fetchall()}


def category_counts(db: sqlite_utils.Database, dataset_id: int) -> dict[str, int]:
    """Items per category of one dataset, categories in sorted order."""
    return _summed(kind_category_counts(db, dataset_id), by=1)


def item_kind_counts(db: sqlite_utils.Database, dataset_id: int) -> dict[str, int]:
    """Items per item kind (pair, triple, group...) of one dataset."""
    return _summed(kind_category_counts(db, dataset_id), by=0)


def _summed(counts: dict[tuple[str, str], int], *, by: int) -> dict[str, int]:
    """(item kind, category) counts summed over one of the two (`by` is the place of the one kept)."""
    summed: Counter[str] = Counter()
    for key, n in counts.items():
        summed[key[by]] += n
    return dict(sorted(summed.items()))


def found_image_totals(db: sqlite_utils.Database, dataset_id: int) -> tuple[int, int]:
    """How many of a dataset's image files were found at import (or attached since), and their bytes."""
    sql = "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM images WHERE dataset_id = ? AND status = 'ok'"
    files, size = db.execute(sql, [dataset_id]).fetchone()
    return int(files), int(size)


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


def upsert_items(db: sqlite_utils.Database, dataset_id: int, items: Iterable[Item]) -> list[tuple[int, bool]]:
    """Insert the items not yet stored; return (item id, newly inserted) in input order (one chunk
    of an `ItemWriter`)."""
    return ItemWriter(db, dataset_id).write(list(items))


class ItemWriter:
    """Stores one input's items chunk by chunk, in the caller's transaction, in memory bounded by
    the chunk (and a number per distinct item), so a million-item file is never held whole.

    Identical items within one input are told apart by their occurrence number, so the same
    file imported twice maps onto the same rows. An item without images matches a stored item
    with the same text; an item with images fills in a stored text-only item.

    A fixed number of statements per chunk whatever its size (the stored keys read once, new rows
    written with one `executemany`, or COPY on PostgreSQL): on PostgreSQL a query per item was a
    network round trip each, 330 items a second.
    """

    def __init__(self, db: sqlite_utils.Database, dataset_id: int) -> None:
        self.db, self.dataset_id = db, dataset_id
        # the rows stored before this input: keys numbered by occurrence never repeat within the
        # input, so a row this input adds can never be matched by a later item of it
        self.by_item_key, self.by_text_key = _stored_keys(db, dataset_id)
        # occurrences so far, by the keys' numeric value (36 bytes where the text took 71)
        self.content_seen: Counter[int] = Counter()
        self.text_seen: Counter[int] = Counter()

    def write(self, items: Sequence[Item], keys: Sequence[tuple[str, str]] | None = None) -> list[tuple[int, bool]]:
        """Store one chunk; return (item id, newly inserted) for each of its items, in order. `keys`
        are the items' `Item.keys()` where the reader worked them out already."""
        result: list[tuple[int | str, bool]] = []
        fills, inserts = [], []
        for item, item_keys in zip(items, keys if keys is not None else map(Item.keys, items), strict=True):
            item_key, text_key = self._numbered(item_keys)
            if item_key in self.by_item_key:
                result.append((self.by_item_key[item_key], False))
            elif text_key in self.by_text_key and not item.images:
                result.append((self.by_text_key[text_key][0], False))
            elif text_key in self.by_text_key and self.by_text_key[text_key][1] == "[]":
                row_id = self.by_text_key[text_key][0]
                fills.append((texts_json(item.images), item_key, row_id))
                result.append((row_id, False))
            else:
                inserts.append(_item_row(self.dataset_id, item, item_key, text_key))
                result.append((item_key, True))  # its id once inserted
        self.db.conn.executemany("UPDATE items SET images = ?, item_key = ? WHERE id = ?", fills)
        new_ids = self._insert(inserts)
        return [(new_ids[key] if isinstance(key, str) else key, fresh) for key, fresh in result]

    def _numbered(self, keys: tuple[str, str]) -> tuple[str, str]:
        content, text = keys
        content_number, text_number = int(content, 16), int(text, 16)
        numbered = f"{content}#{self.content_seen[content_number]}", f"{text}#{self.text_seen[text_number]}"
        self.content_seen[content_number] += 1
        self.text_seen[text_number] += 1
        return numbered

    def _insert(self, rows: list[tuple[Any, ...]]) -> dict[str, int]:
        """Insert new item rows; return their ids by item key. Ids only grow (SQLite's rowid past
        the largest, PostgreSQL's sequence), so the rows past the largest id seen before are
        these, or a concurrent writer's, which the keys tell apart."""
        if not rows:
            return {}
        (largest,) = self.db.execute("SELECT COALESCE(MAX(id), 0) FROM items").fetchone()
        copy_rows(self.db, "items", ITEM_COLUMNS, rows)
        added_counts = Counter((row[1], row[2]) for row in rows)  # (kind, category)
        self.db.conn.executemany(
            "INSERT INTO item_counts (dataset_id, kind, category, n) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (dataset_id, kind, category) DO UPDATE SET n = item_counts.n + excluded.n",
            [(self.dataset_id, kind, category, n) for (kind, category), n in added_counts.items()],
        )
        added = self.db.execute(
            "SELECT id, item_key FROM items WHERE id > ? AND dataset_id = ?", [largest, self.dataset_id]
        )
        return {item_key: int(row_id) for row_id, item_key in added.fetchall()}


ITEM_COLUMNS = (
    "dataset_id", "kind", "category", "source_id", "item_key", "text_key", "captions", "images", "truth", "meta"
)  # fmt: skip


@contextlib.contextmanager
def bulk_write_cache(db: sqlite_utils.Database) -> Iterator[None]:
    """A page cache for a large write on SQLite (100 MB at most, given back after): random keys go
    into the items' four indexes, and with SQLite's 2 MB default a write of a million items slowed
    chunk after chunk. PostgreSQL sizes its own buffers."""
    if dialect.is_postgres(db):
        yield
        return
    (before,) = db.execute("PRAGMA cache_size").fetchone()
    db.execute(f"PRAGMA cache_size = {-BULK_CACHE_KIB}")
    try:
        yield
    finally:
        db.execute(f"PRAGMA cache_size = {int(before)}")


BULK_CACHE_KIB = 100_000
SETTLED_AFTER = 10_000  # items an import writes before `settle_items` vacuums the table


def settle_items(db: sqlite_utils.Database, written: int) -> None:
    """After an import wrote `written` items, on PostgreSQL: VACUUM (ANALYZE) the items, outside any
    transaction, so that the sampling frame's ids are read off `items_by_kind` alone (rows a bulk
    write left unmarked are visited one by one until autovacuum comes: 1.7 s instead of 0.75 s at a
    million items) and the planner knows the new rows. Nothing on SQLite, or for a small import."""
    if dialect.is_postgres(db) and written >= SETTLED_AFTER and not cast(Any, db.conn).in_transaction:
        db.execute("VACUUM (ANALYZE) items")


def copy_rows(db: sqlite_utils.Database, table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
    """Insert many rows at once: PostgreSQL's COPY (several times a batched INSERT's speed), SQLite's
    `executemany`."""
    if dialect.is_postgres(db):
        cast(Any, db.conn).copy_rows(table, columns, rows)  # `postgres.PostgresConnection`
        return
    marks = ", ".join("?" for _ in columns)
    db.conn.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)


def _stored_keys(db: sqlite_utils.Database, dataset_id: int) -> tuple[dict[str, int], dict[str, tuple[int, str]]]:
    """The dataset's items by item key (-> id) and by text key (-> the first such item's id and images)."""
    by_item_key: dict[str, int] = {}
    by_text_key: dict[str, tuple[int, str]] = {}
    rows = db.execute("SELECT id, item_key, text_key, images FROM items WHERE dataset_id = ? ORDER BY id", [dataset_id])
    for row_id, item_key, text_key, images in rows.fetchall():
        by_item_key[item_key] = int(row_id)
        by_text_key.setdefault(text_key, (int(row_id), images))
    return by_item_key, by_text_key


def _item_row(dataset_id: int, item: Item, item_key: str, text_key: str) -> tuple[Any, ...]:
    return (
        dataset_id,
        item.kind,
        item.category,
        item.source_id,
        item_key,
        text_key,
        texts_json(item.captions),
        texts_json(item.images),
        json.dumps(item.truth) if item.truth else "{}",
        json.dumps(item.meta) if item.meta else "{}",
    )


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


def item_ids_by_category(db: sqlite_utils.Database, dataset_id: int, categories: Iterable[str]) -> dict[int, str]:
    """Item id -> source id of the dataset's items in the given categories."""
    wanted = list(categories)
    if not wanted:  # `IN ()` is an error on PostgreSQL
        return {}
    marks = ",".join("?" * len(wanted))
    sql = f"SELECT id, source_id FROM items WHERE dataset_id = ? AND category IN ({marks})"
    return dict(db.execute(sql, [dataset_id, *wanted]).fetchall())


def item_strata(db: sqlite_utils.Database, dataset_id: int, kinds: Iterable[str]) -> dict[str, list[int]]:
    """Category -> the ids of the dataset's items of the given kinds, by id, categories in the order
    their first items were stored: the sampling frame of a stratified sample, read without decoding
    any item (one query per item kind and category, each off the index `items_by_kind` alone, in id
    order: 2.5 s to 0.8 s at a million items)."""
    wanted = set(kinds)
    frame: dict[str, list[int]] = {}
    for item_kind, category in kind_category_counts(db, dataset_id):
        if item_kind in wanted:
            ids = dialect.ordered_ids(
                db, "dataset_id = ? AND kind = ? AND category = ?", [dataset_id, item_kind, category]
            )
            frame[category] = sorted(frame[category] + ids) if category in frame else ids
    return dict(sorted(frame.items(), key=lambda pair: pair[1][0]))  # categories as the ids first meet them


def item_sources(db: sqlite_utils.Database, dataset_id: int, kinds: Iterable[str]) -> list[tuple[int, str, str]]:
    """(item id, source id, category) of the dataset's items of the given kinds, by id: how a file
    that names items by the benchmark's own ids finds them."""
    wanted = list(kinds)
    if not wanted:
        return []
    marks = ",".join("?" * len(wanted))
    sql = f"SELECT id, source_id, category FROM items WHERE dataset_id = ? AND kind IN ({marks}) ORDER BY id"
    return [(int(i), str(s), str(c)) for i, s, c in db.execute(sql, [dataset_id, *wanted]).fetchall()]


def item_index(
    db: sqlite_utils.Database, dataset_id: int, *, category: str | None = None, limit: int | None = None
) -> list[tuple[int, str, str, str]]:
    """(item id, item kind, category, source id) of the dataset's items (of one category), by id, the
    first `limit` of them (None: all): which item is which, read without decoding any item."""
    where, params = "dataset_id = ?", list[Any]([dataset_id])
    if category is not None:
        where, params = where + " AND category = ?", [*params, category]
    sql = f"SELECT id, kind, category, source_id FROM items WHERE {where} ORDER BY id"
    if limit is not None:
        sql, params = sql + " LIMIT ?", [*params, limit]
    return [(int(i), str(k), str(c), str(s)) for i, k, c, s in db.execute(sql, params).fetchall()]


def item_truths(
    db: sqlite_utils.Database, dataset_id: int, kinds: Iterable[str]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(category, truth) of the dataset's items of the given kinds, in no set order (what is counted
    needs none): their ground truth without decoding captions, images or meta, each decoded as it is
    reached, so a caller that stops at the first item without a verdict reads no other (sorting a
    million rows first took a second; decoding them, ten)."""
    wanted = list(kinds)
    if not wanted:
        return
    marks = ",".join("?" * len(wanted))
    sql = f"SELECT id, category, truth FROM items WHERE dataset_id = ? AND kind IN ({marks})"
    for _, category, truth in _rows_as_read(db, sql, [dataset_id, *wanted], dataset_id):
        yield str(category), json.loads(truth)


TRUTH_PAGE = 10_000  # rows a PostgreSQL page of `_rows_as_read` holds


def _rows_as_read(db: sqlite_utils.Database, sql: str, params: list[Any], dataset_id: int) -> Iterator[tuple[Any, ...]]:
    """The rows of `sql` (a query of one dataset's items whose first column is the id), fetched as
    they are read: SQLite steps its cursor as it goes, but PostgreSQL sends a query's whole result at
    once (a million truths, 0.3 s, for a caller that stops at the first), so there it is read a page
    of `TRUTH_PAGE` rows at a time, by id, from the dataset's first."""
    if not dialect.is_postgres(db):
        yield from db.execute(sql, params)
        return
    (last,) = db.execute("SELECT COALESCE(MIN(id), 0) - 1 FROM items WHERE dataset_id = ?", [dataset_id]).fetchone()
    while True:
        rows = db.execute(f"{sql} AND id > ? ORDER BY id LIMIT ?", [*params, last, TRUTH_PAGE]).fetchall()
        yield from rows
        if len(rows) < TRUTH_PAGE:
            return
        last = rows[-1][0]


def list_items(
    db: sqlite_utils.Database,
    dataset_id: int,
    *,
    category: str | None = None,
    limit: int = 50,
    offset: int = 0,
    truth_flag: str | None = None,
) -> list[ItemRow]:
    """One page of a dataset's items (JSON columns decoded), in import order; with `truth_flag`,
    only the items whose truth sets that flag to true (a named subset, `data.subsets`)."""
    where, params = "dataset_id = ?", list[Any]([dataset_id])
    if category:
        where, params = where + " AND category = ?", [*params, category]
    if truth_flag:
        where += f" AND {truth_flag_condition(db, truth_flag, 'items')}"
    rows = db.query(
        f"SELECT id, kind, category, source_id, captions, images, truth, meta FROM items"
        f" WHERE {where} ORDER BY id LIMIT ? OFFSET ?",
        [*params, limit, offset],
    )
    return [cast(ItemRow, _decode(row, "captions", "images", "truth", "meta")) for row in rows]


def items_by_id(
    db: sqlite_utils.Database, item_ids: Iterable[int], *, dataset_id: int | None = None
) -> dict[int, ItemRow]:
    """Decoded item rows by id (with `dataset_id`, only those of that dataset)."""
    wanted = sorted(set(item_ids))
    found: dict[int, ItemRow] = {}
    within = "" if dataset_id is None else " AND dataset_id = ?"
    for start in range(0, len(wanted), IDS_PER_QUERY):
        chunk = wanted[start : start + IDS_PER_QUERY]
        rows = db.query(
            "SELECT id, kind, category, source_id, captions, images, truth, meta FROM items WHERE id IN "
            f"({','.join('?' * len(chunk))}){within}",
            [*chunk, *([] if dataset_id is None else [dataset_id])],
        )
        found.update({row["id"]: _decode(row, "captions", "images", "truth", "meta") for row in rows})
    return found


IDS_PER_QUERY = 500  # item ids `items_by_id` names in one query


def truth_flag_condition(db: sqlite_utils.Database, flag: str, table: str) -> str:
    """SQL condition: the item row of `table` has `truth[flag]` true (flag checked as a plain name)."""
    return dialect.json_is_true(db, f"{table}.truth", _plain_flag(flag))


def truth_flags(db: sqlite_utils.Database, dataset_id: int, flags: list[str]) -> list[str]:
    """Which of `flags` some item of the dataset carries in its truth (the subsets it offers)."""
    # one pass over the items for every flag (a pass each took 0.3 s at a million items), and the text
    # match first: only a truth that names the flag is parsed as JSON (parsing every item's truth of a
    # million-item dataset that carries none took 1.4 s)
    if not flags:
        return []
    found = ", ".join(
        f"MAX(CASE WHEN truth LIKE ? AND {dialect.json_has(db, 'truth', _plain_flag(flag))} THEN 1 ELSE 0 END)"
        for flag in flags
    )
    row = db.execute(
        f"SELECT {found} FROM items WHERE dataset_id = ?", [*(f'%"{flag}"%' for flag in flags), dataset_id]
    ).fetchone()
    return [flag for flag, held in zip(flags, row, strict=True) if held]


def _plain_flag(flag: str) -> str:
    # flags are written into SQL text (JSON paths cannot be parameters on both engines)
    if not flag.isidentifier():
        raise StoreError(f"truth flag {flag!r} is not a plain name")
    return flag


def scorable_count(db: sqlite_utils.Database, dataset_id: int, *, limit: int | None = None) -> int:
    """How many of the dataset's (first `limit`, by id) items name at least one image and have every
    image they name readable (status ok), counted without decoding an item: none where no image is
    readable; where all are, the items naming one; else one query over the items' lists (a million
    items decoded in Python took 30 s on every render of Model scores)."""
    statuses = image_status_counts(db, dataset_id)
    if not statuses.get("ok"):
        return 0
    sql, params = "SELECT COUNT(*) FROM items WHERE dataset_id = ? AND images != '[]'", list[Any]([dataset_id])
    if limit is not None:
        sql += " AND id IN (SELECT id FROM items WHERE dataset_id = ? ORDER BY id LIMIT ?)"
        params += [dataset_id, limit]
    if set(statuses) != {"ok"}:
        sql += (
            f" AND NOT EXISTS (SELECT 1 FROM {dialect.json_list_texts(db, 'items.images')} WHERE NOT EXISTS ("
            "SELECT 1 FROM images WHERE images.dataset_id = items.dataset_id AND images.path = listed.value"
            " AND images.status = 'ok'))"
        )
    return int(db.execute(sql, params).fetchone()[0])


def count_items(db: sqlite_utils.Database, dataset_id: int, category: str | None = None) -> int:
    """Number of items in a dataset, optionally in one category."""
    if category:
        sql, params = "SELECT SUM(n) FROM item_counts WHERE dataset_id = ? AND category = ?", [dataset_id, category]
    else:
        sql, params = "SELECT SUM(n) FROM item_counts WHERE dataset_id = ?", [dataset_id]
    return int(db.execute(sql, params).fetchone()[0] or 0)


# --- import log ------------------------------------------------------------------------------


def last_import(db: sqlite_utils.Database, dataset_id: int) -> dict[str, Any] | None:
    """The latest import of items (not of a results run) into a dataset: source format, path, when."""
    rows = list(
        db.query(
            "SELECT source_format, path, imported_at FROM imports WHERE dataset_id = ? AND run IS NULL"
            " ORDER BY id DESC LIMIT 1",
            [dataset_id],
        )
    )
    return rows[0] if rows else None


def log_import(
    db: sqlite_utils.Database,
    dataset_id: int,
    *,
    source_format: str,
    path: str,
    n_items: int,
    n_new_items: int,
    run: str | None,
) -> None:
    """Record one finished import."""
    db.execute(
        "INSERT INTO imports (dataset_id, source_format, path, n_items, n_new_items, run, imported_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [dataset_id, source_format, path, n_items, n_new_items, run, _now()],
    )
