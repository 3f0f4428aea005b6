"""The store: migrations, WAL, foreign keys, transactions, annotator tokens."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from foil_studio.data import store
from foil_studio.data.items import Item
from foil_studio.data.store import dialect

ROOT = Path(__file__).resolve().parent.parent


def test_new_store_is_at_the_latest_schema_in_wal_mode(tmp_path):
    db = store.open_db(tmp_path / "foil.db")
    assert store.schema_version(db) == store.SCHEMA_VERSION == len(store.MIGRATIONS)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    names = [r["name"] for r in db.query("SELECT name FROM schema_migrations ORDER BY version")]
    assert names == [name for name, _ in store.MIGRATIONS]


def test_old_store_is_migrated_forward_keeping_its_data(tmp_path):
    path = tmp_path / "old.db"
    old = store.open_db(path, upto=1)
    assert store.schema_version(old) == 1 and "imports" not in old.table_names()
    with store.transaction(old):  # version 1's columns (`source_kind`, renamed by migration 16)
        dataset_id = old.execute(
            "INSERT INTO datasets (name, source_kind, created_at) VALUES ('kept', 'jsonl', 'x') RETURNING id"
        ).fetchone()[0]
        old.execute(  # a version-1 row, written as version 1 wrote it: migration 19 counts it
            "INSERT INTO items (dataset_id, kind, category, source_id, item_key, text_key, captions, images)"
            " VALUES (?, 'pair', 'add_obj', '1', 'k#0', 't#0', '[\"a cat\", \"a cat and a dog\"]', '[]')",
            [dataset_id],
        )
    old.conn.close()
    new = store.open_db(path)
    assert store.schema_version(new) == store.SCHEMA_VERSION
    assert "imports" in new.table_names()
    assert [(d["n_items"], d["format"]) for d in store.list_datasets(new)] == [(1, "jsonl")]
    assert store.migrate(new) == []  # nothing left to apply


@pytest.mark.both_engines
def test_a_failed_transaction_writes_nothing(fresh_db):
    with pytest.raises(RuntimeError), store.transaction(fresh_db):
        store.ensure_dataset(fresh_db, "half", "jsonl")
        raise RuntimeError("boom")
    assert store.list_datasets(fresh_db) == []


@pytest.mark.both_engines
def test_foreign_keys_are_enforced(fresh_db):
    with pytest.raises(store.INTEGRITY_ERRORS), store.transaction(fresh_db):
        fresh_db.execute(
            "INSERT INTO items (dataset_id, kind, category, source_id, item_key, text_key, captions, images)"
            " VALUES (999, 'pair', 'x', 'x', 'k', 't', '[]', '[]')"
        )


@pytest.mark.both_engines
def test_deleting_a_dataset_removes_its_items(fresh_db):
    with store.transaction(fresh_db):
        dataset_id = store.ensure_dataset(fresh_db, "gone", "jsonl")
        store.upsert_items(fresh_db, dataset_id, [Item("pair", "add_obj", "1", ("a cat", "a cat and a dog"))])
    store.delete_dataset(fresh_db, "gone")
    assert fresh_db.execute("SELECT COUNT(*) FROM items").fetchone()[0] == 0


@pytest.mark.both_engines
def test_run_names_are_a_datasets_runs_in_creation_order_as_list_runs_has_them(fresh_db):
    with store.transaction(fresh_db):
        for dataset in ("first", "second", "empty"):
            store.ensure_dataset(fresh_db, dataset, "jsonl")
        for dataset, run in (("second", "zeta"), ("first", "beta"), ("second", "alpha"), ("first", "gamma")):
            store.ensure_run(fresh_db, store.get_dataset(fresh_db, dataset)["id"], run, run_type="scores")
    assert store.run_names(fresh_db, "second") == ["zeta", "alpha"]  # made first, listed first: not by name
    for dataset in ("first", "second", "empty", "never-imported"):
        assert store.run_names(fresh_db, dataset) == [r["run"] for r in store.list_runs(fresh_db, dataset)]


@pytest.mark.both_engines
def test_ordered_ids_are_ascending_and_empty_where_no_item_matches(fresh_db):
    with store.transaction(fresh_db):
        dataset_id = store.ensure_dataset(fresh_db, "ids", "jsonl")
        items = [Item("pair", "add_obj" if n % 2 else "swap_att", str(n), (f"cat {n}", f"dog {n}")) for n in range(6)]
        store.upsert_items(fresh_db, dataset_id, items)
    odd = dialect.ordered_ids(fresh_db, "dataset_id = ? AND category = ?", [dataset_id, "add_obj"])
    held = fresh_db.execute("SELECT id FROM items WHERE category = 'add_obj'").fetchall()
    assert odd == sorted(row_id for (row_id,) in held) and len(odd) == 3
    assert dialect.ordered_ids(fresh_db, "dataset_id = ?", [dataset_id + 1]) == []  # no rows: no array at all


@pytest.mark.both_engines
def test_identical_rows_in_one_file_are_kept_apart_and_stable(fresh_db):
    twin = Item("triple", "vl_attr", "r", ("walking elephant", "jumping elephant", "strolling elephant"), ("e.jpg",))
    with store.transaction(fresh_db):
        dataset_id = store.ensure_dataset(fresh_db, "twins", "jsonl")
        first = store.upsert_items(fresh_db, dataset_id, [twin, twin])
        again = store.upsert_items(fresh_db, dataset_id, [twin, twin])
    assert [new for _, new in first] == [True, True]
    assert [i for i, _ in again] == [i for i, _ in first] and not any(new for _, new in again)


@pytest.mark.both_engines
def test_an_import_sends_as_many_statements_for_two_thousand_items_as_for_twenty(fresh_db, monkeypatch):
    """A query per item was a network round trip each on PostgreSQL (330 items a second; a
    1M-item import had not committed after 14 minutes). Ids come back in input order, new and
    known items told apart, text-only rows filled in, as before."""
    sent = {"statements": 0}

    class Counted:
        """The store's connection, counting what is sent through it (one executemany: one)."""

        def __init__(self, conn):
            self.conn = conn

        def execute(self, *args, **kwargs):
            sent["statements"] += 1
            return self.conn.execute(*args, **kwargs)

        def executemany(self, *args, **kwargs):
            sent["statements"] += 1
            return self.conn.executemany(*args, **kwargs)

        def __getattr__(self, name):
            return getattr(self.conn, name)

    monkeypatch.setattr(fresh_db, "conn", Counted(fresh_db.conn))

    def pairs(n: int, start: int = 0) -> list[Item]:
        return [
            Item("pair", "add_obj", str(i), (f"cat {i}", f"cat {i} and a dog"), (f"{i}.jpg",)) for i in range(start, n)
        ]

    with store.transaction(fresh_db):
        counts = []
        for name, n in (("few", 20), ("many", 2000)):
            dataset_id = store.ensure_dataset(fresh_db, name, "jsonl")
            sent["statements"] = 0
            stored = store.upsert_items(fresh_db, dataset_id, pairs(n))
            counts.append(sent["statements"])
            assert all(new for _, new in stored) and len({i for i, _ in stored}) == n
        assert counts[0] == counts[1], counts
        text_only = [Item("pair", "add_obj", "t", ("a dog", "a dog and a cat"))]
        first = store.upsert_items(fresh_db, dataset_id, text_only)
        again = store.upsert_items(
            fresh_db, dataset_id, [*pairs(3), Item("pair", "add_obj", "t", ("a dog", "a dog and a cat"), ("d.jpg",))]
        )
    assert [new for _, new in again] == [False, False, False, False] and again[3][0] == first[0][0]  # filled in
    assert [i for i, _ in again[:3]] == [i for i, _ in stored[:3]]  # known items keep their ids, in input order
    assert store.items_by_id(fresh_db, [first[0][0]])[first[0][0]]["images"] == ["d.jpg"]


@pytest.mark.both_engines
def test_unknown_dataset_error_lists_known_names(fresh_db):
    with store.transaction(fresh_db):
        store.ensure_dataset(fresh_db, "sugarcrepe", "sugarcrepe")
    with pytest.raises(store.NotFoundError, match="no dataset named 'sugar'.*sugarcrepe"):
        store.get_dataset(fresh_db, "sugar")


@pytest.mark.both_engines
def test_annotator_tokens_are_unguessable_stored_hashed_and_stay_valid(fresh_db):
    first = store.ensure_annotator(fresh_db, "ada")
    again = store.ensure_annotator(fresh_db, "ada")
    assert again["id"] == first["id"] and again["token"] is None  # shown once, when issued
    other = store.ensure_annotator(fresh_db, "ben")
    assert other["token"] != first["token"] and len(first["token"]) >= 20
    second = store.issue_token(fresh_db, first["id"])
    assert {store.annotator_by_token(fresh_db, t)["name"] for t in (first["token"], second)} == {"ada"}  # both valid
    assert store.annotator_by_token(fresh_db, "guess") is None
    dump = every_row(fresh_db)
    assert first["token"] not in dump and second not in dump  # only hashes are stored


def every_row(db) -> str:
    """Every row of every table of a store, as text."""
    return "\n".join(str(row) for table in store.COPY_ORDER for row in db.execute(f"SELECT * FROM {table}").fetchall())


@pytest.fixture
def new_store(engine, tmp_path, request):
    """Where a new store goes: a file, or a new PostgreSQL database."""
    if engine == "postgresql":
        return request.getfixturevalue("postgres").create_database()
    return tmp_path / "old.db"


@pytest.mark.both_engines
def test_every_table_is_copied_between_engines(fresh_db):
    assert set(fresh_db.table_names()) == {*store.COPY_ORDER, "schema_migrations"}


@pytest.mark.both_engines
def test_migration_9_hashes_the_tokens_of_an_older_store(new_store):
    old = store.open_db(new_store, upto=8)
    with store.transaction(old):
        old.execute("INSERT INTO annotators (name, token, created_at) VALUES ('ada', 'plain-token-of-ada-123', 'x')")
    old.conn.close()
    db = store.open_db(new_store)
    assert store.schema_version(db) == store.SCHEMA_VERSION
    assert store.annotator_by_token(db, "plain-token-of-ada-123")["name"] == "ada"
    assert "plain-token-of-ada-123" not in every_row(db)


UNDO_MIGRATIONS_22_TO_16 = (
    "ALTER TABLE batches RENAME COLUMN task_type TO task; ALTER TABLE labels RENAME COLUMN task_type TO task;"
    "DELETE FROM schema_migrations WHERE version = 22;"
    "DROP TABLE run_copies; DELETE FROM schema_migrations WHERE version = 21;"
    "DELETE FROM schema_migrations WHERE version = 20;"
    "DROP TABLE item_counts; DELETE FROM schema_migrations WHERE version = 19;"
    "DROP INDEX items_by_kind; DELETE FROM schema_migrations WHERE version = 18;"
    "DROP TABLE predictions; DROP TABLE prediction_sets; DELETE FROM schema_migrations WHERE version = 17;"
    "ALTER TABLE datasets RENAME COLUMN source_format TO source_kind;"
    "ALTER TABLE imports RENAME COLUMN source_format TO kind;"
    "ALTER TABLE runs RENAME COLUMN run_type TO kind;"
    "DELETE FROM schema_migrations WHERE version = 16;"
)
UNDO_MIGRATION_10 = {
    "sqlite": "DROP TRIGGER labels_answer_assignment; DROP TRIGGER labels_unanswer_assignment;",
    "postgresql": "DROP TRIGGER labels_answer_assignment ON labels; DROP TRIGGER labels_unanswer_assignment ON labels;"
    " DROP FUNCTION labels_mark_assignment;",
}


@pytest.mark.both_engines
def test_migration_10_marks_the_answered_assignments_of_an_older_store(demo_store, new_store, engine):
    from foil_studio.annotate import batches, queues

    old = store.open_db(new_store)
    store.copy_store(store.open_db(demo_store), old)
    created = batches.create_batch(
        old, batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("ada",), 1, 6, seed=1, min_seconds=0)
    )
    ada = store.annotator_by_name(old, "ada")["id"]
    for _ in range(4):
        queues.submit_answer(
            old, ada, created["batch"], queues.draw(old, ada, created["batch"]).task, {"answer": "unsure"}
        )
    # back to version 9 (22 to 11 undone first): labels stored, and assignments that know nothing of them
    with store.transaction(old):
        for statement in (
            UNDO_MIGRATIONS_22_TO_16
            + "ALTER TABLE labels DROP COLUMN simulated; DELETE FROM schema_migrations WHERE version = 15;"
            "DROP TABLE health_items; DELETE FROM schema_migrations WHERE version = 14;"
            "ALTER TABLE assignments DROP COLUMN shown_at; DELETE FROM schema_migrations WHERE version = 13;"
            "ALTER TABLE crowd_joins DROP COLUMN returned_at; DELETE FROM schema_migrations WHERE version = 12;"
            "ALTER TABLE crowd_joins DROP COLUMN quota; DELETE FROM schema_migrations WHERE version = 11;"
            + UNDO_MIGRATION_10[engine]
            + " DROP INDEX assignments_open; ALTER TABLE assignments DROP COLUMN answered;"
            " DELETE FROM schema_migrations WHERE version = 10"
        ).split(";"):
            if statement.strip():
                old.conn.execute(statement)
    old.conn.close()
    db = store.open_db(new_store)
    assert [(b["assigned"], b["done"]) for b in store.annotator_batches(db, ada)] == [(6, 4)]
    assert queues.queue_state(db, ada, created["batch"]).done == 4  # the queue resumes at the fifth item
    batch_id = store.get_batch(db, created["batch"])["id"]
    first = store.batch_labels(db, batch_id)[0]
    db.execute("DELETE FROM labels WHERE id = ?", [first["id"]])  # a label removed: its item is open again
    assert [(b["assigned"], b["done"]) for b in store.annotator_batches(db, ada)] == [(6, 3)]


@pytest.mark.both_engines
def test_page_cache_key_follows_rescoring_revisions_and_decisions(demo_db):
    from foil_studio.annotate import batches, simulation

    dataset = "demo-sugarcrepe"
    created = batches.create_batch(demo_db, batches.BatchSpec(dataset, "validate_negative", ("ada",), 1, 4, seed=1))
    simulation.simulate(demo_db, created["batch"], accuracies=1.0)
    batch_id = store.get_batch(demo_db, created["batch"])["id"]
    label = store.batch_labels(demo_db, batch_id)[0]
    keys = [store.dataset_fingerprint(demo_db, dataset)]
    store.revise_label(demo_db, label["id"], {"answer": "unsure"}, by="admin")
    keys.append(store.dataset_fingerprint(demo_db, dataset))
    store.decide(demo_db, batch_id, label["item"], label["part"], {"answer": "negative_true"}, by="admin")
    keys.append(store.dataset_fingerprint(demo_db, dataset))
    run_id = store.ensure_run(demo_db, store.get_dataset(demo_db, dataset)["id"], "m", run_type="scores", model="m")
    store.put_scores(demo_db, run_id, [(label["item"], [0.2, 0.1])])
    keys.append(store.dataset_fingerprint(demo_db, dataset))
    store.put_scores(demo_db, run_id, [(label["item"], [0.1, 0.2])])  # the same row, new scores
    keys.append(store.dataset_fingerprint(demo_db, dataset))
    assert len(set(keys)) == len(keys)  # every change gives the pages a new key


APP_PROCESS = """
import sys
from foil_studio.data import store
kept = store.open_db(sys.argv[1])  # a session that stays open, as in the running app
with store.transaction(kept):
    kept.execute("INSERT INTO seen VALUES (0)")
for line in sys.stdin:
    fresh = store.open_db(sys.argv[1])  # each rerun opens its own connection
    count = fresh.execute("SELECT COUNT(*) FROM written").fetchone()[0]
    with store.transaction(fresh):
        fresh.execute("INSERT INTO seen VALUES (?)", [count])
    print(count, flush=True)
"""


def test_a_running_app_sees_every_write_another_process_commits(tmp_path):
    """The app keeps connections open while the CLI writes and exits. Opening the store must not
    drop this process's file locks (closing any descriptor of the file does), or the other process
    resets the WAL under the app, which then reads old data or fails with 'disk I/O error'."""
    path = tmp_path / "foil.db"
    setup = store.open_db(path)
    setup.executescript("CREATE TABLE written (x); CREATE TABLE seen (x)")
    setup.conn.close()
    app = subprocess.Popen(
        [sys.executable, "-c", APP_PROCESS, str(path)],
        cwd=ROOT,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        for round_ in range(1, 7):
            cli = store.open_db(path)
            with store.transaction(cli):
                cli.execute("INSERT INTO written VALUES (?)", [round_])
            cli.conn.close()  # the CLI exits
            app.stdin.write("next\n")
            app.stdin.flush()
            assert app.stdout.readline().strip() == str(round_), app.stderr.read() if app.poll() else ""
    finally:
        app.stdin.close()
        app.wait(timeout=30)
    assert app.returncode == 0


def test_opening_a_current_store_needs_no_write_lock(tmp_path):
    """Pages open the store on every rerun: that must not wait for a long write elsewhere
    (an import, a scoring run) nor take the write lock itself."""
    path = tmp_path / "foil.db"
    store.open_db(path).conn.close()
    writer = sqlite3.connect(path)
    writer.execute("BEGIN IMMEDIATE")  # another process is writing
    try:
        reader = store.open_db(path)
        assert store.schema_version(reader) == store.SCHEMA_VERSION
        assert not reader.conn.in_transaction
    finally:
        writer.rollback()


def test_two_processes_upgrading_one_old_store_apply_each_migration_once(tmp_path):
    path = tmp_path / "old.db"
    store.open_db(path, upto=1).conn.close()
    upgrade = "import sys; from foil_studio.data import store; store.open_db(sys.argv[1])"
    runs = [
        subprocess.Popen([sys.executable, "-c", upgrade, str(path)], cwd=ROOT, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    errors = [run.communicate(timeout=120)[1] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], errors
    versions = [r[0] for r in sqlite3.connect(path).execute("SELECT version FROM schema_migrations ORDER BY version")]
    assert versions == list(range(1, store.SCHEMA_VERSION + 1))


@pytest.mark.both_engines
def test_migration_16_names_the_import_format_and_the_run_type_keeping_their_values(new_store):
    """`kind` meant the item kind, the import format and the run's type: an older store's datasets,
    imports and runs read back under `source_format` and `run_type` with the values they held."""
    old = store.open_db(new_store, upto=15)
    with store.transaction(old):  # version 15's columns
        dataset_id = old.execute(
            "INSERT INTO datasets (name, source_kind, created_at) VALUES ('kept', 'sugarcrepe', 'x') RETURNING id"
        ).fetchone()[0]
        for kind, path, run in (("sugarcrepe", "data", None), ("sugarcrepe-correct", "results.csv", "CLIP")):
            old.execute(
                "INSERT INTO imports (dataset_id, kind, path, n_items, n_new_items, run, imported_at)"
                " VALUES (?, ?, ?, 0, 0, ?, 'x')",
                [dataset_id, kind, path, run],
            )
        old.execute(
            "INSERT INTO runs (name, dataset_id, model, kind, created_at) VALUES ('CLIP', ?, 'CLIP', 'correct', 'x')",
            [dataset_id],
        )
    old.conn.close()
    db = store.open_db(new_store)
    assert store.schema_version(db) == store.SCHEMA_VERSION
    assert store.get_dataset(db, "kept")["source_format"] == "sugarcrepe"
    assert [(d["name"], d["format"]) for d in store.list_datasets(db)] == [("kept", "sugarcrepe")]
    assert {k: v for k, v in store.last_import(db, dataset_id).items() if k != "imported_at"} == {
        "source_format": "sugarcrepe",
        "path": "data",
    }
    logged = db.execute("SELECT source_format, run FROM imports ORDER BY id").fetchall()
    assert [tuple(row) for row in logged] == [("sugarcrepe", None), ("sugarcrepe-correct", "CLIP")]
    assert store.get_run(db, "kept", "CLIP")["run_type"] == "correct"
    assert [(r["run"], r["run_type"]) for r in store.list_runs(db)] == [("CLIP", "correct")]
    columns = {table: set(next(iter(db.query(f"SELECT * FROM {table}")))) for table in ("datasets", "imports", "runs")}
    assert "source_kind" not in columns["datasets"] and "kind" not in columns["imports"] | columns["runs"]


def test_migration_15_moves_the_simulated_flag_to_its_column_and_keeps_the_people_s_flags(demo_store, new_store):
    """Simulated answers were a flag among the annotators' own; an older store's labels keep their
    other flags, and only the simulated ones are marked."""
    from foil_studio.annotate import batches, queues, simulation

    old = store.open_db(new_store)
    store.copy_store(store.open_db(demo_store), old)
    spec = batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("ada", "ben"), 1, 6, seed=1, min_seconds=0)
    created = batches.create_batch(old, spec)
    ada = store.annotator_by_name(old, "ada")["id"]
    for _ in range(2):
        task = queues.draw(old, ada, created["batch"]).task
        queues.submit_answer(old, ada, created["batch"], task, {"answer": "unsure"}, flags=["ungrammatical"])
    simulation.simulate(old, created["batch"], accuracies=1.0, seed=0)
    with store.transaction(old):  # back to version 14 (22 to 16 undone first): the flag among the flags, no column
        for statement in UNDO_MIGRATIONS_22_TO_16.split(";"):
            if statement.strip():
                old.conn.execute(statement)
        old.conn.execute("UPDATE labels SET flags = '[\"simulated\"]' WHERE simulated = 1")
        old.conn.execute("ALTER TABLE labels DROP COLUMN simulated")
        old.conn.execute("DELETE FROM schema_migrations WHERE version = 15")
    old.conn.close()
    db = store.open_db(new_store)
    labels = store.batch_labels(db, store.get_batch(db, created["batch"])["id"])
    mine = [label for label in labels if label["annotator"] == "ada" and label["flags"] == ["ungrammatical"]]
    assert len(labels) == 6 and len(mine) == 2 and not any(label["simulated"] for label in mine)
    assert all(label["simulated"] and label["flags"] == [] for label in labels if label not in mine)
    # migration 22: the task type a batch and its labels were asked under keeps its value under its new name
    assert store.get_batch(db, created["batch"])["task_type"] == "validate_negative"
    assert {label["task_type"] for label in labels} == {"validate_negative"}
    assert {row["task_type"] for row in store.item_labels(db, [labels[0]["item"]])} == {"validate_negative"}


def test_the_item_index_lists_ids_kinds_categories_and_source_ids_by_id_filtered_and_cut(demo_db):
    """`store.item_index` (what `foil items` prints), against the items as `list_items` decodes them."""
    dataset_id = store.get_dataset(demo_db, "demo-sugarcrepe")["id"]
    items = sorted(store.list_items(demo_db, dataset_id, limit=100_000), key=lambda item: item["id"])
    every = store.item_index(demo_db, dataset_id)
    assert every == [(i["id"], i["kind"], i["category"], i["source_id"]) for i in items]
    assert all(isinstance(field, int if n == 0 else str) for row in every for n, field in enumerate(row))
    category = items[-1]["category"]
    chosen = store.item_index(demo_db, dataset_id, category=category)
    assert chosen == [row for row in every if row[2] == category] and 0 < len(chosen) < len(every)
    assert store.item_index(demo_db, dataset_id, category=category, limit=3) == chosen[:3]
    assert store.item_index(demo_db, dataset_id, limit=1) == every[:1]
    assert store.item_index(demo_db, dataset_id, category="no-such-category") == []
