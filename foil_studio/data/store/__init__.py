"""The Foil Studio store: the only package that speaks SQL, and the ground floor of the code.

One SQLite file (WAL mode, foreign keys on) opened through sqlite-utils, or a PostgreSQL database
(``--db postgresql://...``, psycopg 3, `postgres.py`), both opened and checked in `connection.py`,
with the same schema, migrations (`schema.py`) and transactions; the few fragments that differ
are in `dialect.py`. Nothing here imports from the layers above (analysis, annotate, the pages);
callers use ``from foil_studio.data import store`` and ``store.<function>``, whichever module below defines
it. The schema only changes through the named, forward-only migrations in ``MIGRATIONS``; the
table ``schema_migrations`` records which ones ran. Never edit a committed migration: add one.

Schema (version 17)
------------------
``datasets``      one imported benchmark (or demo set): unique ``name``, ``source_format``
                  (the import format that made it; named so since 16), ``image_root``
                  (absolute folder image paths are relative to).
``items``         one benchmark item (see ``foil_studio/data/items.py``): ``kind``, ``category``,
                  ``source_id``, JSON ``captions``/``images``/``truth``/``meta``.
                  ``item_key`` (content key plus occurrence number) is unique per dataset, which
                  makes imports idempotent; ``text_key`` matches sources that name no images.
``images``        one referenced image file per dataset and relative ``path``: ``status``
                  (ok / missing / unreadable), ``sha256``, ``size`` in bytes, ``width``, ``height``.
``annotators``    ``name``; ``external_id`` for crowd workers (``token`` is a placeholder since 9).
``annotator_tokens`` (since 9) the SHA-256 hash of every link token an annotator holds (several:
                  each batch and each crowd visit issues one); the token itself is never stored.
``batches``       an annotation batch over a dataset: ``task_type`` (``task`` until 22) and JSON ``config`` (overlap,
                  gold share, seed, instructions, completion code...); ``closed_at`` (since 8): a
                  closed crowd study takes no new participants.
``health_items``  (since 14) a health sample batch's drawn items: ``category`` (its stratum) and
                  ``inclusion`` probability (of the sample as it stood after that draw).
``crowd_joins``   (since version 8) every participant who joined a crowd study through its link.
``assignments``   (batch, item, part, annotator) with a ``position`` in the annotator's queue,
                  ``is_gold``, ``assigned_at`` (since 8: when it was handed to this annotator) and
                  ``opened_at`` (the lease and the item timer: when the item was first drawn for them).
                  ``part`` tells apart the independent questions one item yields.
``labels``        one answer per (batch, item, part, annotator), unique, so a resubmission
                  cannot add a second: ``task_type`` (``task`` until 22), JSON ``answer``, ``displayed_order`` and
                  ``flags``, ``comment``, ``started_at``, ``submitted_at``, ``seconds``,
                  ``simulated`` (since 15: written by ``annotate.simulation``, no person's);
                  ``LABEL_COLUMNS`` lists them, for migrate-store's checksum and the label export.
``label_revisions`` (since version 4) the admin's revisions of a label, with the old answer.
``decisions``     (since version 5) the admin's adjudication of a disagreement: one answer per
                  (batch, item, part), which wins over any vote.
``runs``          a model's (or imported) results on a dataset: ``model``, ``pretrained``,
                  ``run_type`` (named so since 16: ``scores`` for similarities,
                  ``correct``/``groups``/``choices`` for imported decisions), JSON ``meta``;
                  ``version`` (since 7) counts writes of its scores.
``run_summaries`` (since version 7) a run's metrics JSON per ``settings`` (bootstrap size, seed),
                  valid while the run's ``version`` is the one it was computed at.
``run_copies``    (since 21) a run's columns (`run_columns`) as one ``.npz`` blob, valid while
                  the run's ``version`` is the one it was copied at.
``scores``        per (run, item): JSON ``scores`` (similarities) and/or JSON ``outcome``.
``audits``        (since version 6) the latest hackability audit of a dataset per ``settings``
                  (scorers, folds, seed), with the ``items_fingerprint`` it was computed on.
``imports``       (since version 2) a log of every import: ``source_format`` (named so
                  since 16), file, counts, time.
``embeddings``    (since version 3) cached embeddings: ``model`` identity, ``modality`` (image or
                  text), content ``key`` (image sha256 plus crop, or caption sha256), float32
                  ``vector`` bytes.
``prediction_sets`` (since 17) a predictor's output on a dataset's items, for benchmark health:
                  ``name``, ``source`` (the file or batch they came from), JSON ``meta``.
``predictions``   per (prediction set, item): ``invalid``, the predicted probability (or 0/1 label)
                  that the item's negative is invalid.
"""

# ruff: noqa: F401  (the package re-exports the functions of its modules)
from foil_studio.data.store.annotators import (
    annotator_by_name,
    annotator_by_token,
    ensure_annotator,
    issue_token,
    list_annotators,
    revoke_tokens,
)
from foil_studio.data.store.base import (
    INTEGRITY_ERRORS,
    MAX_NAME_CHARS,
    InvalidNameError,
    LabelRefused,
    Migration,
    NotFoundError,
    StoreError,
    check_name,
    timestamp,
    transaction,
)
from foil_studio.data.store.batches import (
    add_assignments,
    add_health_items,
    annotator_batches,
    assigned_per_annotator,
    batch_assignments,
    batch_by_crowd_token,
    batches_with_setting,
    create_batch,
    delete_assignment,
    first_assigned_item,
    get_batch,
    health_items,
    list_batches,
    lock_batch,
    move_assignment,
    open_assignment,
    set_batch_closed,
    stale_assignments,
    unanswered_assignments,
)
from foil_studio.data.store.connection import (
    StoreBehindError,
    check_store_file,
    db_file,
    location,
    open_db,
    open_existing_db,
    redacted,
)
from foil_studio.data.store.copying import COPY_ORDER, copy_store, labels_checksum, row_counts
from foil_studio.data.store.crowd import (
    crowd_joins,
    crowd_quota,
    has_returned,
    joined_studies,
    open_units,
    participants_holding_work,
    participants_started_since,
    place_holders,
    record_join,
    return_study,
)
from foil_studio.data.store.datasets import (
    ItemWriter,
    StoredItem,
    bulk_write_cache,
    category_counts,
    count_items,
    dataset_names,
    delete_dataset,
    ensure_dataset,
    found_image_totals,
    get_dataset,
    image_status_counts,
    item_ids_by_category,
    item_index,
    item_kind_counts,
    item_sources,
    item_strata,
    item_truths,
    items_by_id,
    kind_category_counts,
    known_image_paths,
    last_import,
    list_datasets,
    list_items,
    log_import,
    record_images,
    scorable_count,
    settle_items,
    truth_flag_condition,
    truth_flags,
    upsert_items,
)
from foil_studio.data.store.labels import (
    LABEL_COLUMNS,
    LABEL_KEY_NAMES,
    LABEL_ROW_COLUMNS,
    LabelWrite,
    batch_decisions,
    batch_labels,
    decide,
    item_labels,
    mark_shown,
    revise_label,
    save_label,
)
from foil_studio.data.store.predictions import get_predictions, list_prediction_sets, put_predictions
from foil_studio.data.store.rows import (
    AnnotatorRow,
    BatchRow,
    BatchSummary,
    DatasetRow,
    DatasetSummary,
    ItemLabel,
    ItemRow,
    LabelRow,
    RunRow,
    RunSummary,
)
from foil_studio.data.store.runs import (
    RunColumns,
    dataset_fingerprint,
    delete_run,
    ensure_run,
    get_audit,
    get_embeddings,
    get_run,
    get_run_summary,
    image_hashes,
    items_fingerprint,
    keep_run_copies,
    list_runs,
    put_audit,
    put_embeddings,
    put_outcomes,
    put_run_summary,
    put_scores,
    run_columns,
    run_names,
    run_outcomes,
    update_run_meta,
)
from foil_studio.data.store.schema import MIGRATIONS, SCHEMA_VERSION, migrate, schema_version
