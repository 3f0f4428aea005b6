"""What the Datasets page shows, computed without Streamlit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import sqlite_utils

from foil_studio.annotate.task_types import is_correct, task_type
from foil_studio.data import store
from foil_studio.data.images import existing_image, thumbnail
from foil_studio.data.item_kinds import CAPTION_PAIR_KINDS, item_kind
from foil_studio.data.item_kinds.base import Shown


@dataclass(frozen=True)
class ItemCard:
    """One item ready to draw: labelled captions and images (None where the file is absent)."""

    id: int
    category: str
    source_id: str
    kind: str
    captions: list[tuple[str, str]]
    images: list[tuple[str, Path | None]]
    truth: dict[str, Any]
    votes: dict[str, int] | None = None  # crowd votes shipped with the benchmark (VALSE's mturk)


def datasets_holding(
    db: sqlite_utils.Database, item_kinds: Sequence[str] = CAPTION_PAIR_KINDS, *, with_runs: bool = False
) -> list[str]:
    """The datasets holding an item of `item_kinds` (every dataset when it is empty; by default a
    caption and its negative, what validations read), only those with a run when `with_runs`:
    the rule of a page's dataset box (`views.registry.DatasetBox`)."""
    names = store.dataset_names(db, with_runs=with_runs)
    if not item_kinds:
        return names
    holding = {d["name"] for d in store.list_datasets(db) if set(d["item_kinds"]) & set(item_kinds)}
    return [name for name in names if name in holding]


def dataset_table(db: sqlite_utils.Database) -> pd.DataFrame:
    """One row per dataset: name, import format ("source"), item kinds, item count, images found and missing."""
    rows = [
        {
            "dataset": d["name"],
            "source": d["format"],
            "items": d["n_items"],
            "item kinds": ", ".join(f"{k} {n}" for k, n in d["item_kinds"].items()),
            "categories": len(d["by_category"]),
            **_image_columns(d["images"]),
        }
        for d in store.list_datasets(db)
    ]
    return pd.DataFrame(
        rows,
        columns=["dataset", "source", "items", "item kinds", "categories", "images found", "images missing", "images"],
    )


def _image_columns(counts: dict[str, int]) -> dict[str, Any]:
    """Images found and missing, and a word on them; empty cells, not 0, where no image file was
    ever recorded (a results file)."""
    if not counts:
        return {
            "images found": None,
            "images missing": None,
            "images": "none recorded (a results file: attach a folder or import the benchmark)",
        }
    missing = counts.get("missing", 0) + counts.get("unreadable", 0)
    return {
        "images found": counts.get("ok", 0),
        "images missing": missing,
        "images": "all found" if not missing else f"{missing} missing: attach the image folder",
    }


def category_table(db: sqlite_utils.Database, dataset: str) -> pd.DataFrame:
    """Items per category of one dataset."""
    counts = store.category_counts(db, store.get_dataset(db, dataset)["id"])
    return pd.DataFrame({"category": list(counts), "items": list(counts.values())})


def item_cards(
    db: sqlite_utils.Database, dataset: str, *, category: str | None = None, page: int = 0, page_size: int = 10
) -> tuple[list[ItemCard], int]:
    """One page of a dataset's items as cards, and the number of items matching."""
    row = store.get_dataset(db, dataset)
    root = Path(row["image_root"]) if row["image_root"] else None
    total = store.count_items(db, row["id"], category)
    items = store.list_items(db, row["id"], category=category, limit=page_size, offset=page * page_size)
    return [_card(item, root) for item in items], total


def cards_for(db: sqlite_utils.Database, dataset: str, item_ids: list[int]) -> list[ItemCard]:
    """Cards for the given items of a dataset, in the given order."""
    row = store.get_dataset(db, dataset)
    root = Path(row["image_root"]) if row["image_root"] else None
    items = store.items_by_id(db, item_ids)
    return [_card(items[i], root) for i in item_ids if i in items]


def _card(item: store.ItemRow, root: Path | None) -> ItemCard:
    kind = item_kind(item["kind"])
    captions = list(zip(kind.caption_roles(len(item["captions"])), item["captions"]))
    images = list(zip(kind.image_roles(len(item["images"])), [existing_image(root, p) for p in item["images"]]))
    source = item["meta"].get("source_image")
    if isinstance(source, str):
        images.insert(0, ("source image", existing_image(root, source)))
        captions.insert(0, ("positive", str(item["meta"].get("positive_caption", ""))))
    votes = item["meta"].get("votes")
    return ItemCard(
        item["id"],
        item["category"],
        item["source_id"],
        item["kind"],
        captions,
        images,
        item["truth"],
        votes if isinstance(votes, dict) else None,
    )


def human_label_lines(db: sqlite_utils.Database, cards: list[ItemCard]) -> dict[int, list[str]]:
    """Per item card, one plain-text line per human label: batch, task type, annotator, the answer in
    words (`TaskType.answer_words`, as the answer charts say it), right or wrong where the truth
    is known, flags and comment."""
    lines: dict[int, list[str]] = {card.id: [] for card in cards}
    labels = store.item_labels(db, lines)
    items = store.items_by_id(db, {label["item"] for label in labels})
    for label in labels:
        item = items[label["item"]]
        answer = task_type(label["task_type"]).answer_words(item, label["part"], label["answer"])
        right = is_correct(label["task_type"], item, label["part"], label["answer"])
        text = f"human · {label['batch']} ({label['task_type']}) · {label['annotator']}: {answer}"
        text += "" if right is None else (" (right)" if right else " (wrong)")
        text += " · simulated" if label["simulated"] else ""
        text += f" · flags: {', '.join(label['flags'])}" if label["flags"] else ""
        text += f" · comment: {label['comment']}" if label["comment"] else ""
        lines[label["item"]].append(text)
    return lines


def answers_in_words(db: sqlite_utils.Database, batch_name: str) -> list[dict[str, str]]:
    """Every label of a batch as (annotator, answer in words), for the answer chart: "Altered is
    wrong", not `negative_false` (`TaskType.answer_words`, as the item cards say it)."""
    batch = store.get_batch(db, batch_name)
    labels = store.batch_labels(db, batch["id"])
    items = store.items_by_id(db, {label["item"] for label in labels})
    asked = task_type(batch["task_type"])
    words = [asked.answer_words(items[label["item"]], label["part"], label["answer"]) for label in labels]
    return [{"annotator": label["annotator"], "answer": answer} for label, answer in zip(labels, words)]


def truth_in_words(card: ItemCard) -> list[str]:
    """The item's ground truth as sentences a newcomer reads, each key as its item kind says
    (`ItemKind.truth_keys`); keys the item kind does not know as `key: value`."""
    kind = item_kind(card.kind)
    shown = Shown(tuple(role for role, _ in card.captions), card.votes)
    lines = []
    for key, value in card.truth.items():
        record = kind.truth_key(key)
        line = f"{key}: {value}" if record is None else record.said(value, shown)
        if line is not None:
            lines.append(line)
    return lines


def candidate_marks(card: ItemCard) -> dict[str, str]:
    """Image label -> what the truth says of that candidate ("valid, best", "not valid")."""
    valid, best = card.truth.get("valid"), card.truth.get("best")
    if not isinstance(valid, list):
        return {}
    marks = {}
    for index, ok in enumerate(valid):
        marks[f"candidate {chr(ord('A') + index)}"] = ("valid" if ok else "not valid") + (
            ", best" if best == index else ""
        )
    return marks


def card_thumbnails(card: ItemCard, cache_dir: Path) -> list[tuple[str, Path | None, Path | None]]:
    """(label, file, thumbnail) per image of a card; the file is None when missing, the
    thumbnail None when missing or unreadable (pages say which instead of failing)."""
    return [(label, path, thumbnail(path, cache_dir) if path is not None else None) for label, path in card.images]
