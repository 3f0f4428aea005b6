"""The schema: the forward-only, named migrations and the version a store is at."""

from __future__ import annotations

import json

import sqlite_utils

from foil_studio.data.store.base import Migration, _now, _token_hash, transaction
from foil_studio.data.store.dialect import is_postgres


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


def _m0014_health_items(db: sqlite_utils.Database) -> None:
    # A health sample's drawn items (category, inclusion probability) move from the batch's config
    # to rows: the config is read on every annotator's key press, and grew by 60 bytes an item.
    db.executescript(
        """
        CREATE TABLE health_items (
            batch_id INTEGER NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
            item_id INTEGER NOT NULL REFERENCES items(id),
            category TEXT NOT NULL,
            inclusion REAL NOT NULL,
            PRIMARY KEY (batch_id, item_id));
        """
    )
    for batch_id, text in db.execute("SELECT id, config FROM batches").fetchall():
        config = json.loads(text)
        design = config.get("health")
        if not design or "items" not in design:
            continue
        rows = [(batch_id, int(item), e["category"], e["inclusion"]) for item, e in design.pop("items").items()]
        db.conn.executemany("INSERT INTO health_items VALUES (?, ?, ?, ?)", rows)
        db.execute("UPDATE batches SET config = ? WHERE id = ?", [json.dumps(config), batch_id])


def _m0015_simulated_labels(db: sqlite_utils.Database) -> None:
    # A simulated answer (`annotate.simulation`) was a flag every reader had to filter out of the
    # annotators' flags; it is a column, and the flag leaves the flags it was stored among.
    db.executescript("ALTER TABLE labels ADD COLUMN simulated INTEGER NOT NULL DEFAULT 0;")
    rows = db.execute("SELECT id, flags FROM labels WHERE flags LIKE ?", ['%"simulated"%']).fetchall()
    for label_id, text in rows:
        flags = [flag for flag in json.loads(text) if flag != "simulated"]
        db.execute("UPDATE labels SET simulated = 1, flags = ? WHERE id = ?", [json.dumps(flags), label_id])


def _m0016_source_format_and_run_type(db: sqlite_utils.Database) -> None:
    # `kind` meant the item kind, the import format and the run's type at once: the import
    # format of a dataset and of an import is its `source_format`, a run's type its `run_type`
    # (`items.kind` alone keeps the word).
    db.executescript(
        """
        ALTER TABLE datasets RENAME COLUMN source_kind TO source_format;
        ALTER TABLE imports RENAME COLUMN kind TO source_format;
        ALTER TABLE runs RENAME COLUMN kind TO run_type;
        """
    )


def _m0017_predictions(db: sqlite_utils.Database) -> None:
    # A predictor's prediction on every item of a dataset (a VLM judge, one cheap crowd pass), for
    # prediction-powered health estimates: not a run, whose scores answer the benchmark's own task.
    db.executescript(
        """
        CREATE TABLE prediction_sets (
            id INTEGER PRIMARY KEY, name TEXT NOT NULL,
            dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
            source TEXT NOT NULL, meta TEXT NOT NULL DEFAULT '{}', created_at TEXT NOT NULL,
            UNIQUE (dataset_id, name));
        CREATE TABLE predictions (
            prediction_set_id INTEGER NOT NULL REFERENCES prediction_sets(id) ON DELETE CASCADE,
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            invalid REAL NOT NULL CHECK (invalid >= 0 AND invalid <= 1),
            PRIMARY KEY (prediction_set_id, item_id));
        """
    )


def _m0018_items_by_kind(db: sqlite_utils.Database) -> None:
    # the sampling frame of benchmark health (item ids and categories of the kinds it asks about)
    # read from the index alone: at a million items, looking up each row for its item kind took 3 s
    db.execute("CREATE INDEX items_by_kind ON items (dataset_id, kind, category)")


def _m0019_item_counts(db: sqlite_utils.Database) -> None:
    # items per dataset, item kind and category, kept by the one writer of items (`ItemWriter`; a
    # dataset's delete cascades): counting a million rows took 0.1 to 0.3 s on every page render
    db.executescript(
        """
        CREATE TABLE item_counts (
            dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
            kind TEXT NOT NULL, category TEXT NOT NULL, n INTEGER NOT NULL,
            PRIMARY KEY (dataset_id, kind, category));
        INSERT INTO item_counts (dataset_id, kind, category, n)
            SELECT dataset_id, kind, category, COUNT(*) FROM items GROUP BY dataset_id, kind, category;
        """
    )


def _m0020_items_by_kind_covers_ids(db: sqlite_utils.Database) -> None:
    # PostgreSQL's index entries point at the row, not its id: reading a million ids of the sampling
    # frame visited every row (2.5 s); with the ids in the index it is an index-only scan (0.75 s once
    # the import's VACUUM has marked the rows visible, `datasets.settle_items`). SQLite's index already
    # holds the id (the rowid), so the migration changes nothing there.
    if is_postgres(db):
        db.executescript(
            """
            DROP INDEX items_by_kind;
            CREATE INDEX items_by_kind ON items (dataset_id, kind, category) INCLUDE (id);
            """
        )


def _m0021_run_copies(db: sqlite_utils.Database) -> None:
    # a run's columns as one blob per run version (`runs.keep_run_copies`): pages read a million
    # scores in 0.1 s instead of 6 s of rows and JSON
    db.executescript(
        """
        CREATE TABLE run_copies (
            run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
            version INTEGER NOT NULL, columns BLOB NOT NULL, created_at TEXT NOT NULL);
        """
    )


def _m0022_task_type(db: sqlite_utils.Database) -> None:
    # `task` meant one laid-out question (`Task`) and a task type's name at once: the name a batch
    # and each of its labels are asked under is their `task_type`
    db.executescript(
        """
        ALTER TABLE batches RENAME COLUMN task TO task_type;
        ALTER TABLE labels RENAME COLUMN task TO task_type;
        """
    )


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
"""  # noqa: E501


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
    ("0014_health_items", _m0014_health_items),
    ("0015_simulated_labels", _m0015_simulated_labels),
    ("0016_source_format_and_run_type", _m0016_source_format_and_run_type),
    ("0017_predictions", _m0017_predictions),
    ("0018_items_by_kind", _m0018_items_by_kind),
    ("0019_item_counts", _m0019_item_counts),
    ("0020_items_by_kind_covers_ids", _m0020_items_by_kind_covers_ids),
    ("0021_run_copies", _m0021_run_copies),
    ("0022_task_type", _m0022_task_type),
]
SCHEMA_VERSION = len(MIGRATIONS)


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
