"""A predictor's predictions on every item of a dataset, for prediction-powered benchmark health."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import sqlite_utils

from foil_studio.data.store.base import NotFoundError, _now, check_name, transaction
from foil_studio.data.store.datasets import get_dataset


def put_predictions(
    db: sqlite_utils.Database,
    dataset: str,
    name: str,
    source: str,
    invalid: Mapping[int, float],
    meta: Mapping[str, Any] | None = None,
) -> int:
    """Store prediction set `name` on a dataset (item id -> predicted invalid probability),
    replacing a set of that name whole: a re-import never mixes two files' predictions."""
    check_name("prediction set", name)
    dataset_id = get_dataset(db, dataset)["id"]
    with transaction(db):
        db.execute("DELETE FROM prediction_sets WHERE dataset_id = ? AND name = ?", [dataset_id, name])
        set_id = int(
            db.execute(
                "INSERT INTO prediction_sets (name, dataset_id, source, meta, created_at) VALUES (?, ?, ?, ?, ?)"
                " RETURNING id",
                [name, dataset_id, source, json.dumps(dict(meta or {})), _now()],
            ).fetchone()[0]
        )
        db.conn.executemany(
            "INSERT INTO predictions (prediction_set_id, item_id, invalid) VALUES (?, ?, ?)",
            [(set_id, item, float(value)) for item, value in invalid.items()],
        )
    return set_id


def list_prediction_sets(db: sqlite_utils.Database, dataset: str) -> list[dict[str, Any]]:
    """The dataset's prediction sets: name, source, items covered, created_at, meta."""
    dataset_id = get_dataset(db, dataset)["id"]
    rows = db.execute(
        "SELECT s.name, s.source, s.meta, s.created_at, COUNT(v.item_id) FROM prediction_sets s"
        " LEFT JOIN predictions v ON v.prediction_set_id = s.id WHERE s.dataset_id = ?"
        " GROUP BY s.id, s.name, s.source, s.meta, s.created_at ORDER BY s.name",
        [dataset_id],
    ).fetchall()
    return [
        {"name": name, "source": source, "items": int(items), "created_at": created, "meta": json.loads(meta)}
        for name, source, meta, created, items in rows
    ]


def get_predictions(db: sqlite_utils.Database, dataset: str, name: str) -> dict[int, float]:
    """Item id -> predicted invalid probability of prediction set `name`, or NotFoundError listing the sets."""
    dataset_id = get_dataset(db, dataset)["id"]
    row = db.execute("SELECT id FROM prediction_sets WHERE dataset_id = ? AND name = ?", [dataset_id, name]).fetchone()
    if row is None:
        known = ", ".join(s["name"] for s in list_prediction_sets(db, dataset)) or "none"
        raise NotFoundError(
            f"no predictions named {name!r} on dataset {dataset!r} (predictions: {known}; "
            "import some with `./foil health predictions`)"
        )
    rows = db.execute("SELECT item_id, invalid FROM predictions WHERE prediction_set_id = ?", [row[0]]).fetchall()
    return {int(item): float(value) for item, value in rows}
