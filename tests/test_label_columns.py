"""The labels table's columns are listed once, in the store (`store.LABEL_COLUMNS`), and both
readers of every label carry every column: migrate-store's checksum and a batch's label export."""

from __future__ import annotations

import csv
import io
import json

from foil_studio.annotate import batch_reports, batches, simulation
from foil_studio.data import store


def _labelled_batch(db) -> str:
    spec = batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("ada", "ben"), 2, 4, seed=3)
    batch = batches.create_batch(db, spec)["batch"]
    simulation.simulate(db, batch, accuracies=0.8, seed=3)
    return batch


def test_the_list_is_the_tables_columns_in_order():
    db = store.open_db(None)
    assert tuple(column.name for column in db["labels"].columns) == store.LABEL_COLUMNS


def test_the_copys_checksum_reads_every_column(demo_db):
    """Changing any one column of one label changes the checksum migrate-store compares."""
    _labelled_batch(demo_db)
    demo_db.conn.execute("PRAGMA foreign_keys = OFF")  # a changed key need not point at a row here
    label = demo_db.execute("SELECT id FROM labels ORDER BY id LIMIT 1").fetchone()[0]
    before = store.labels_checksum(demo_db)
    for column in store.LABEL_COLUMNS:
        changed = f"{column} + 1000" if column == "id" else f"'changed ' || COALESCE({column}, '')"
        demo_db.conn.execute("SAVEPOINT one_column")
        demo_db.conn.execute(f"UPDATE labels SET {column} = {changed} WHERE id = ?", [label])
        assert store.labels_checksum(demo_db) != before, column
        demo_db.conn.execute("ROLLBACK TO one_column")
        demo_db.conn.execute("RELEASE one_column")
    assert store.labels_checksum(demo_db) == before


def test_the_label_export_carries_every_column(demo_db):
    """JSONL and CSV both hold every column of the labels table (under the name `LABEL_KEY_NAMES`
    gives a key; the batch is the one exported), each with the stored value."""
    batch = _labelled_batch(demo_db)
    jsonl = [json.loads(line) for line in batch_reports.export_labels(demo_db, batch, "jsonl").splitlines()]
    table = list(csv.DictReader(io.StringIO(batch_reports.export_labels(demo_db, batch, "csv"))))
    assert len(jsonl) == len(table) == 8
    assert all(tuple(row) == store.LABEL_ROW_COLUMNS for row in jsonl)
    assert all(tuple(row) == store.LABEL_ROW_COLUMNS for row in table)
    names = dict(demo_db.execute("SELECT id, name FROM annotators").fetchall())
    batch_id = store.get_batch(demo_db, batch)["id"]
    stored = {row["id"]: row for row in demo_db.query("SELECT * FROM labels ORDER BY id")}
    for exported, written in zip(jsonl, table):
        label = stored[exported["id"]]
        assert label["batch_id"] == batch_id and int(written["id"]) == label["id"]
        for column in store.LABEL_COLUMNS:
            name = store.LABEL_KEY_NAMES.get(column, column)
            if name is None:
                continue
            value = names[label[column]] if column == "annotator_id" else label[column]
            if column in ("answer", "displayed_order", "flags"):
                assert exported[name] == json.loads(value) == json.loads(written[name]), column
            elif column == "simulated":
                assert exported[name] is bool(value) and written[name] == str(bool(value)), column
            else:
                assert exported[name] == value and written[name] == ("" if value is None else str(value)), column
