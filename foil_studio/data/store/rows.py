"""The rows the store returns, typed.

Rows are ``TypedDict`` s: a type checker knows every column and its type, and a row is still the
plain mapping sqlite-utils reads, so it prints, compares and serializes as one (the CLI's JSON
output, the tests' expected rows). JSON columns arrive decoded.
"""

from __future__ import annotations

from typing import Any, TypedDict


class DatasetRow(TypedDict):
    """`get_dataset`: one dataset."""

    id: int
    name: str
    source_format: str  # the import format that created it (sugarcrepe, bivlc, demo...)
    image_root: str | None
    created_at: str
    meta: str


class DatasetSummary(TypedDict):
    """`list_datasets`: one dataset with its counts."""

    id: int
    name: str
    format: str  # the import format that created it (the column `source_format`)
    image_root: str | None
    by_category: dict[str, int]
    n_items: int
    item_kinds: dict[str, int]
    images: dict[str, int]  # image status (ok, missing, unreadable...) -> count


class ItemRow(TypedDict):
    """`list_items`, `items_by_id`: one item; the lists' meaning depends on its item kind (data.item_kinds)."""

    id: int
    kind: str
    category: str
    source_id: str
    captions: list[str]
    images: list[str]
    truth: dict[str, Any]
    meta: dict[str, Any]


class RunRow(TypedDict):
    """`get_run`: one run of a dataset."""

    id: int
    name: str
    dataset_id: int
    model: str | None
    pretrained: str | None
    run_type: str  # scores, correct, groups or choices
    meta: dict[str, Any]
    created_at: str
    version: int


class RunSummary(TypedDict):
    """`list_runs`: one run with its dataset name, precision (None: imported) and scored items."""

    run: str
    dataset: str
    model: str | None
    pretrained: str | None
    run_type: str
    precision: str | None
    n_items: int


class AnnotatorRow(TypedDict):
    """`annotator_by_name`, `annotator_by_token`: one annotator (tokens are never listed)."""

    id: int
    name: str
    external_id: str | None


class BatchRow(TypedDict):
    """`get_batch`: one batch, its dataset's name and its decoded config."""

    id: int
    name: str
    dataset_id: int
    dataset: str
    task_type: str
    config: dict[str, Any]
    created_at: str
    closed_at: str | None


class BatchSummary(TypedDict):
    """`list_batches`: one batch with its counts."""

    id: int
    name: str
    dataset: str
    task_type: str
    created_at: str
    n_assignments: int
    n_labels: int


class LabelRow(TypedDict):
    """`batch_labels`: one stored answer with who gave it, where and when."""

    id: int
    annotator: str
    item: int
    source_id: str
    category: str
    part: int
    task_type: str
    answer: dict[str, Any]
    displayed_order: list[int]
    flags: list[str]
    comment: str | None
    started_at: str | None
    submitted_at: str
    seconds: float | None
    simulated: bool
    is_gold: int


class ItemLabel(TypedDict):
    """`item_labels`: one answer given to an item, in any batch."""

    item: int
    part: int
    batch: str
    task_type: str
    annotator: str
    answer: dict[str, Any]
    flags: list[str]
    comment: str | None
    simulated: bool
