"""Model runs, their scores and cached summaries, embeddings, and hackability audits."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import sqlite_utils

from foil_studio.data.store import dialect
from foil_studio.data.store.base import NotFoundError, StoreError, _decode, _now, check_name, transaction
from foil_studio.data.store.datasets import copy_rows, get_dataset, truth_flag_condition
from foil_studio.data.store.rows import RunRow, RunSummary

# --- runs and scores -------------------------------------------------------------------------


def ensure_run(
    db: sqlite_utils.Database,
    dataset_id: int,
    name: str,
    *,
    run_type: str,
    model: str | None = None,
    pretrained: str | None = None,
    meta: dict[str, Any] | None = None,
) -> int:
    """The id of run `name` on a dataset, created if absent."""
    check_name("run", name)
    row = db.execute("SELECT id FROM runs WHERE dataset_id = ? AND name = ?", [dataset_id, name]).fetchone()
    if row:
        return int(row[0])
    return int(
        db.execute(
            "INSERT INTO runs (name, dataset_id, model, pretrained, run_type, meta, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
            [name, dataset_id, model, pretrained, run_type, json.dumps(meta or {}), _now()],
        ).fetchone()[0]
    )


def put_outcomes(db: sqlite_utils.Database, run_id: int, rows: Iterable[tuple[int, dict[str, Any]]]) -> None:
    """Store (item id, outcome) rows of a run; a re-import merges into the same rows."""
    db.conn.executemany(
        "INSERT INTO scores (run_id, item_id, outcome) VALUES (?, ?, ?)"
        " ON CONFLICT (run_id, item_id) DO UPDATE SET outcome = "
        + dialect.json_merge(db, "COALESCE(scores.outcome, '{}')", "excluded.outcome"),
        [(run_id, item_id, json.dumps(outcome)) for item_id, outcome in rows],
    )
    _new_run_version(db, run_id)


def put_scores(db: sqlite_utils.Database, run_id: int, rows: Iterable[tuple[int, Any]]) -> None:
    """Store (item id, similarity scores) rows of a run; scoring again replaces them (an item given
    twice keeps the scores given last)."""
    latest = {item_id: json.dumps(scores) for item_id, scores in rows}
    if dialect.is_postgres(db) and latest:
        # COPY into a staging table, then one upsert: a statement per row took 75 s a million scores
        db.execute("CREATE TEMP TABLE IF NOT EXISTS staged_scores (item_id INTEGER PRIMARY KEY, scores TEXT)")
        copy_rows(db, "staged_scores", ("item_id", "scores"), list(latest.items()))
        db.execute(
            "INSERT INTO scores (run_id, item_id, scores) SELECT ?, item_id, scores FROM staged_scores"
            " ON CONFLICT (run_id, item_id) DO UPDATE SET scores = excluded.scores",
            [run_id],
        )
        db.execute("TRUNCATE staged_scores")
    else:
        db.conn.executemany(
            "INSERT INTO scores (run_id, item_id, scores) VALUES (?, ?, ?)"
            " ON CONFLICT (run_id, item_id) DO UPDATE SET scores = excluded.scores",
            [(run_id, item_id, scores) for item_id, scores in latest.items()],
        )
    _new_run_version(db, run_id)


def _new_run_version(db: sqlite_utils.Database, run_id: int) -> None:
    """A run's scores changed: its stored summaries and the pages' caches no longer hold."""
    db.execute("UPDATE runs SET version = version + 1 WHERE id = ?", [run_id])


def get_run_summary(db: sqlite_utils.Database, run_id: int, settings: str) -> dict[str, Any] | None:
    """A run's stored metrics under these settings, if computed on its current scores."""
    row = db.execute(
        "SELECT s.summary FROM run_summaries s JOIN runs ON runs.id = s.run_id"
        " WHERE s.run_id = ? AND s.settings = ? AND s.version = runs.version",
        [run_id, settings],
    ).fetchone()
    return None if row is None else json.loads(row[0])


def put_run_summary(db: sqlite_utils.Database, run_id: int, settings: str, summary: dict[str, Any]) -> None:
    """Store a run's metrics under these settings, for its current scores."""
    with transaction(db):
        db.execute(
            "INSERT INTO run_summaries (run_id, settings, version, summary, created_at)"
            " SELECT id, ?, version, ?, ? FROM runs WHERE id = ?"  # (SQLite needs a WHERE before ON CONFLICT here)
            " ON CONFLICT (run_id, settings) DO UPDATE SET version = excluded.version, summary = excluded.summary,"
            " created_at = excluded.created_at",
            [settings, json.dumps(summary), _now(), run_id],
        )


def update_run_meta(db: sqlite_utils.Database, run_id: int, meta: dict[str, Any]) -> None:
    """Replace a run's metadata (model stamp, timings)."""
    db.execute("UPDATE runs SET meta = ? WHERE id = ?", [json.dumps(meta), run_id])


def get_embeddings(db: sqlite_utils.Database, model: str, modality: str, keys: list[str]) -> dict[str, bytes]:
    """Cached vectors of `model` for the given content keys (those present)."""
    found: dict[str, bytes] = {}
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        marks = ",".join("?" * len(chunk))
        sql = f"SELECT key, vector FROM embeddings WHERE model = ? AND modality = ? AND key IN ({marks})"
        found.update(db.execute(sql, [model, modality, *chunk]).fetchall())
    return found


def put_embeddings(db: sqlite_utils.Database, model: str, modality: str, vectors: Iterable[tuple[str, bytes]]) -> None:
    """Cache vectors of `model` in one transaction (a batch survives an interrupted run)."""
    with transaction(db):
        db.conn.executemany(
            "INSERT INTO embeddings (model, modality, key, vector) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (model, modality, key) DO UPDATE SET vector = excluded.vector",
            [(model, modality, key, vector) for key, vector in vectors],
        )


def image_hashes(db: sqlite_utils.Database, dataset_id: int) -> dict[str, str]:
    """Relative path -> sha256 of every readable image of a dataset."""
    sql = "SELECT path, sha256 FROM images WHERE dataset_id = ? AND status = 'ok'"
    return dict(db.execute(sql, [dataset_id]).fetchall())


_RUNS_AND_DATASETS = " FROM runs JOIN datasets ON datasets.id = runs.dataset_id"


def list_runs(db: sqlite_utils.Database, dataset: str | None = None) -> list[RunSummary]:
    """Runs with their dataset name, the precision they were scored in (None for imported
    results) and number of scored items, optionally of one dataset."""
    sql = (
        "SELECT runs.name AS run, datasets.name AS dataset, model, pretrained, runs.run_type AS run_type,"
        " runs.meta AS meta,"
        " (SELECT COUNT(*) FROM scores WHERE scores.run_id = runs.id) AS n_items" + _RUNS_AND_DATASETS
    )
    rows = (
        db.query(sql + " ORDER BY runs.id")
        if dataset is None
        else db.query(sql + " WHERE datasets.name = ? ORDER BY runs.id", [dataset])
    )
    return [cast(RunSummary, _with_precision(row)) for row in rows]


def run_names(db: sqlite_utils.Database, dataset: str) -> list[str]:
    """The names of a dataset's runs, in creation order (without `list_runs`' count of each run's
    scores: 0.14 s a run at a million scores on PostgreSQL)."""
    sql = "SELECT runs.name" + _RUNS_AND_DATASETS + " WHERE datasets.name = ? ORDER BY runs.id"
    return [row[0] for row in db.execute(sql, [dataset]).fetchall()]


def _with_precision(row: dict[str, Any]) -> dict[str, Any]:
    meta = json.loads(row.pop("meta") or "{}")
    return {
        **{k: v for k, v in row.items() if k != "n_items"},
        "precision": meta.get("precision"),
        "n_items": row["n_items"],
    }


def get_run(db: sqlite_utils.Database, dataset: str, name: str) -> RunRow:
    """The run `name` of a dataset (meta decoded), or NotFoundError listing the dataset's runs."""
    dataset_id = get_dataset(db, dataset)["id"]
    rows = list(db.query("SELECT * FROM runs WHERE dataset_id = ? AND name = ?", [dataset_id, name]))
    if not rows:
        known = ", ".join(run_names(db, dataset)) or "none"
        raise NotFoundError(f"no run named {name!r} on dataset {dataset!r} (runs: {known})")
    return cast(RunRow, _decode(rows[0], "meta"))


def delete_run(db: sqlite_utils.Database, dataset: str, name: str) -> dict[str, int]:
    """Delete a run with its scores and stored summaries (cached embeddings stay: they belong to
    the model, not the run); return how many of each were deleted."""
    run_id = get_run(db, dataset, name)["id"]
    with transaction(db):
        counts = {
            table: int(db.execute(f"SELECT COUNT(*) FROM {table} WHERE run_id = ?", [run_id]).fetchone()[0])
            for table in ("scores", "run_summaries", "run_copies")
        }
        for table in counts:  # explicit, not left to ON DELETE CASCADE: a store opened without foreign keys keeps none
            db.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
        db.execute("DELETE FROM runs WHERE id = ?", [run_id])
    return counts


@dataclass(frozen=True)
class RunColumns:
    """A run as columns (one entry per scored item, by item id): what metrics and pages read.

    ``run_type`` is the run's type (``scores``, or ``correct``/``groups``/``choices`` for imported
    decisions); ``scores`` is one float array (items first) when every item has similarities,
    else None; ``outcomes`` lists the imported decisions (None where an item has none);
    ``groups`` the item groups a benchmark scores together (``meta["groups"]``, What'sUp's pairs
    and sets; None for most items).
    """

    run_type: str
    item_ids: np.ndarray
    kinds: np.ndarray
    categories: np.ndarray
    scores: np.ndarray | None
    outcomes: list[dict[str, Any] | None]
    groups: list[dict[str, str] | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.item_ids)


def run_columns(db: sqlite_utils.Database, run_id: int, *, truth_flag: str | None = None) -> RunColumns:
    """Every scored item of a run as columns; with `truth_flag`, only the items of that subset.

    The whole run is read from its stored copy (0.1 s at 1,000,000 items against 6 s of rows and
    JSON), made from the rows when the run's scores have changed since (`keep_run_copies`)."""
    if truth_flag:
        return _read_run_columns(db, run_id, truth_flag)
    sql = (
        "SELECT runs.version, c.columns FROM runs LEFT JOIN run_copies c ON c.run_id = runs.id"
        " AND c.version = runs.version WHERE runs.id = ?"
    )
    version, copy = dialect.binary_rows(db, sql, [run_id]).fetchone()
    if copy is not None:
        return _columns_from_bytes(bytes(copy))
    columns = _read_run_columns(db, run_id)
    # stored under the version read before the rows: a write between them leaves a copy never served
    with transaction(db):
        db.execute(
            "INSERT INTO run_copies (run_id, version, columns, created_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (run_id) DO UPDATE SET version = excluded.version, columns = excluded.columns,"
            " created_at = excluded.created_at",
            [run_id, version, _columns_as_bytes(columns), _now()],
        )
    return columns


def keep_run_copies(db: sqlite_utils.Database, dataset_id: int) -> int:
    """Store a column copy of every run of a dataset whose copy is not of its current scores (the
    commands that write scores call this once they are written, so no page's first render reads a
    million score rows); return how many were stored."""
    stale = db.execute(
        "SELECT runs.id FROM runs LEFT JOIN run_copies c ON c.run_id = runs.id"
        " WHERE runs.dataset_id = ? AND (c.version IS NULL OR c.version <> runs.version) ORDER BY runs.id",
        [dataset_id],
    ).fetchall()
    if stale and dialect.is_postgres(db):
        # the planner's figures of the rows just written: without them it took a million new scores
        # for a hundred, and joined and sorted every row past each page's start (25 s, not 1 s)
        db.execute("ANALYZE scores")
    for (run_id,) in stale:
        run_columns(db, run_id)
    return len(stale)


# Rows of a run read at a time: a million rows fetched at once held 0.5 GB on top of the columns.
RUN_PAGE = 100_000


def _read_run_columns(db: sqlite_utils.Database, run_id: int, truth_flag: str | None = None) -> RunColumns:
    """A run's columns read from its score rows, a page of `RUN_PAGE` rows at a time by item id,
    each page decoded in bulk."""
    subset = f" AND {truth_flag_condition(db, truth_flag, 'items')}" if truth_flag else ""
    sql = (
        "SELECT scores.item_id, items.kind, items.category, scores.scores, scores.outcome, "
        + dialect.json_text(db, "items.meta", "groups")
        + " FROM scores JOIN items ON items.id = scores.item_id WHERE scores.run_id = ? AND scores.item_id > ?"
        + f"{subset} ORDER BY scores.item_id LIMIT ?"
    )
    pages, last = [], -1
    while True:
        rows = db.execute(sql, [run_id, last, RUN_PAGE]).fetchall()
        if rows:
            pages.append(_page_columns(rows))
        if len(rows) < RUN_PAGE:
            break
        last = rows[-1][0]
    run_type = db.execute("SELECT run_type FROM runs WHERE id = ?", [run_id]).fetchone()[0]
    if not pages:
        return RunColumns(
            run_type, np.array([], dtype=np.int64), np.array([], dtype=str), np.array([], dtype=str), None, [], []
        )
    return RunColumns(
        run_type=run_type,
        item_ids=np.concatenate([page.item_ids for page in pages]),
        kinds=np.concatenate([page.kinds for page in pages]),
        categories=np.concatenate([page.categories for page in pages]),
        scores=_joined_scores([page.scores for page in pages]),
        outcomes=[outcome for page in pages for outcome in page.outcomes],
        groups=[group for page in pages for group in page.groups],
    )


def _page_columns(rows: list[tuple[Any, ...]]) -> RunColumns:
    """One page of a run's rows as columns (its run type left blank)."""
    ids, kinds, categories, scores, outcomes, groups = zip(*rows)
    return RunColumns(
        run_type="",
        item_ids=np.array(ids, dtype=np.int64),
        kinds=np.array(kinds, dtype=str),
        categories=np.array(categories, dtype=str),
        scores=None if None in scores else _score_array(scores),
        outcomes=[None if o is None else json.loads(o) for o in outcomes],
        groups=[None if g is None else json.loads(g) for g in groups],
    )


def _joined_scores(pages: list[np.ndarray | None]) -> np.ndarray | None:
    """The pages' score arrays as one (None if an item of any page has no scores); retrieval rows
    of different lengths padded with NaN, as `_score_array` pads within a page."""
    if any(page is None for page in pages):
        return None
    arrays = cast(list[np.ndarray], pages)
    if len({array.shape[1:] for array in arrays}) == 1:
        return np.concatenate(arrays)
    if any(array.ndim != 2 for array in arrays):
        shapes = sorted({array.shape[1:] for array in arrays})
        raise StoreError(
            f"scores of one run have different shapes ({shapes[0]} and others); score one item kind per run"
        )
    width = max(array.shape[1] for array in arrays)
    return np.concatenate(
        [np.pad(array, ((0, 0), (0, width - array.shape[1])), constant_values=np.nan) for array in arrays]
    )


def _columns_as_bytes(columns: RunColumns) -> bytes:
    """A run's columns as one `.npz` (no pickles): the strings as codes into their distinct values,
    outcomes and groups as JSON of the items that have one."""
    arrays: dict[str, np.ndarray] = {"run_type": np.array(columns.run_type), "item_ids": columns.item_ids}
    for name in ("kinds", "categories"):
        values = getattr(columns, name).tolist()
        names = sorted(set(values))
        number = {value: index for index, value in enumerate(names)}
        arrays[f"{name}_names"] = np.array(names, dtype=str)
        arrays[f"{name}_codes"] = np.fromiter(map(number.__getitem__, values), dtype=np.int32, count=len(values))
    if columns.scores is not None:
        arrays["scores"] = columns.scores
    for name in ("outcomes", "groups"):
        values = getattr(columns, name)
        held = [number for number, value in enumerate(values) if value is not None]
        arrays[f"{name}_at"] = np.array(held, dtype=np.int64)
        arrays[f"{name}_json"] = np.array(json.dumps([values[number] for number in held]))
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=False, **arrays)
    return buffer.getvalue()


def _columns_from_bytes(data: bytes) -> RunColumns:
    """The columns `_columns_as_bytes` stored."""
    arrays = np.load(io.BytesIO(data), allow_pickle=False)
    n = len(arrays["item_ids"])
    sparse = {}
    for name in ("outcomes", "groups"):
        values: list[Any] = [None] * n
        for number, value in zip(arrays[f"{name}_at"].tolist(), json.loads(str(arrays[f"{name}_json"]))):
            values[number] = value
        sparse[name] = values
    return RunColumns(
        run_type=str(arrays["run_type"]),
        item_ids=arrays["item_ids"],
        kinds=arrays["kinds_names"][arrays["kinds_codes"]],
        categories=arrays["categories_names"][arrays["categories_codes"]],
        scores=arrays["scores"] if "scores" in arrays.files else None,
        outcomes=sparse["outcomes"],
        groups=sparse["groups"],
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
        padded[number, : len(row)] = row
    return padded


def dataset_fingerprint(db: sqlite_utils.Database, dataset: str) -> str:
    """Changes whenever a dataset's items, runs, scores, labels, decisions, batches or prediction sets
    do (a cache key for pages)."""
    dataset_id = get_dataset(db, dataset)["id"]
    row = db.execute(
        "SELECT :d, (SELECT COALESCE(SUM(n), 0) FROM item_counts WHERE dataset_id = :d),"
        # every write of a run's scores bumps its version: no need to count 100,000s of score rows
        " (SELECT COALESCE(MAX(id), 0) || ':' || COUNT(*) || ':' || COALESCE(SUM(version), 0)"
        " FROM runs WHERE dataset_id = :d),"
        " (SELECT COUNT(*) FROM labels JOIN batches ON batches.id = labels.batch_id WHERE batches.dataset_id = :d),"
        # revisions and adjudications change answers without adding labels
        " (SELECT COUNT(*) FROM label_revisions r JOIN labels ON labels.id = r.label_id"
        " JOIN batches ON batches.id = labels.batch_id"
        "  WHERE batches.dataset_id = :d),"
        " (SELECT COUNT(*) || ':' || COALESCE(MAX(decisions.decided_at), '')"
        " FROM decisions JOIN batches ON batches.id = decisions.batch_id"
        "  WHERE batches.dataset_id = :d),"
        # a new batch (a health sample's next draw) changes what is drawn before any label arrives
        " (SELECT COUNT(*) || ':' || COALESCE(MAX(id), 0) FROM batches WHERE dataset_id = :d),"
        # predictions imported again under their name replace the set: a new id
        " (SELECT COUNT(*) || ':' || COALESCE(MAX(id), 0) FROM prediction_sets WHERE dataset_id = :d)",
        {"d": dataset_id},
    ).fetchone()
    return ":".join(map(str, row))


def items_fingerprint(db: sqlite_utils.Database, dataset_id: int) -> str:
    """Changes whenever items are added to a dataset (imports never edit or remove items; a deleted
    dataset's name comes back with a new id)."""
    (n,) = db.execute("SELECT COALESCE(SUM(n), 0) FROM item_counts WHERE dataset_id = ?", [dataset_id]).fetchone()
    return f"{dataset_id}:{n}"


def put_audit(db: sqlite_utils.Database, dataset: str, settings: str, result: dict[str, Any]) -> None:
    """Store a dataset's audit result under its settings, replacing an older one."""
    dataset_id = get_dataset(db, dataset)["id"]
    with transaction(db):
        db.execute(
            "INSERT INTO audits (dataset_id, settings, items_fingerprint, result, created_at) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (dataset_id, settings) DO UPDATE SET items_fingerprint = excluded.items_fingerprint,"
            " result = excluded.result, created_at = excluded.created_at",
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
