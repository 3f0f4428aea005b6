"""What the Datasets page shows, computed without Streamlit."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import sqlite_utils

from annotate.task_types import is_correct, task_type
from data import store
from data.images import existing_image, thumbnail
from data.item_kinds import item_kind


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


def dataset_table(db: sqlite_utils.Database) -> pd.DataFrame:
    """One row per dataset: name, importer, item kinds, item count, images found and missing."""
    rows = [
        {
            "dataset": d["name"], "source": d["kind"], "items": d["n_items"],
            "item kinds": ", ".join(f"{k} {n}" for k, n in d["item_kinds"].items()),
            "categories": len(d["by_category"]),
            **_image_columns(d["images"]),
        }
        for d in store.list_datasets(db)
    ]
    return pd.DataFrame(rows, columns=["dataset", "source", "items", "item kinds", "categories", "images found", "images missing", "images"])


def _image_columns(counts: dict[str, int]) -> dict[str, Any]:
    """Images found and missing, and a word on them; empty cells, not 0, where no image file was
    ever recorded (a results file)."""
    if not counts:
        return {"images found": None, "images missing": None, "images": "none recorded (a results file: attach a folder or import the benchmark)"}
    missing = counts.get("missing", 0) + counts.get("unreadable", 0)
    return {"images found": counts.get("ok", 0), "images missing": missing,
            "images": "all found" if not missing else f"{missing} missing: attach the image folder"}


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
    return ItemCard(item["id"], item["category"], item["source_id"], item["kind"], captions, images, item["truth"],
                    votes if isinstance(votes, dict) else None)


def human_label_lines(db: sqlite_utils.Database, cards: list[ItemCard]) -> dict[int, list[str]]:
    """Per item card, one plain-text line per human label: batch, task, annotator, answer with
    its verdict where the truth is known, flags and comment."""
    lines: dict[int, list[str]] = {card.id: [] for card in cards}
    cards_by_id = {card.id: card for card in cards}
    for label in store.item_labels(db, lines):
        card = cards_by_id[label["item"]]
        answer = answer_text(label["task"], label["answer"], card)
        verdict = is_correct(label["task"], {"truth": card.truth}, label["part"], label["answer"])
        text = f"human · {label['batch']} ({label['task']}) · {label['annotator']}: {answer}"
        text += "" if verdict is None else (" (right)" if verdict else " (wrong)")
        text += f" · flags: {', '.join(label['flags'])}" if label["flags"] else ""
        text += f" · comment: {label['comment']}" if label["comment"] else ""
        lines[label["item"]].append(text)
    return lines


def answers_in_words(db: sqlite_utils.Database, batch_name: str) -> list[dict[str, str]]:
    """Every label of a batch as (annotator, answer in the words of its options), for the answer
    chart: "Altered is wrong", not `negative_false`."""
    batch = store.get_batch(db, batch_name)
    labels = store.batch_labels(db, batch["id"])
    items = store.items_by_id(db, {label["item"] for label in labels})
    kind = task_type(batch["task"])
    return [{"annotator": label["annotator"], "answer": kind.answer_words(items[label["item"]], label["part"], label["answer"])} for label in labels]


def answer_text(task: str, answer: dict[str, Any], card: ItemCard) -> str:
    """An answer in the item's terms: which caption or image was chosen, else `question=value`.

    >>> card = ItemCard(1, "swap_att", "x/1", "pair", [("positive", "a"), ("negative", "b")], [("image", None)], {})
    >>> answer_text("baseline_i2t", {"answer": "1"}, card), answer_text("validate_negative", {"answer": "unsure"}, card)
    ('chose the negative', 'answer=unsure')
    """
    value = str(answer.get("answer", ""))
    chooses = task_type(task).chooses
    chosen = {"captions": card.captions, "images": card.images}.get(chooses or "")
    if chosen is not None and value.isdigit() and int(value) < len(chosen):
        return f"chose the {chosen[int(value)][0]}"
    if chooses == "candidate" and value.isdigit():  # by candidate letter: the card lists the source image first
        return f"chose candidate {chr(ord('A') + int(value))}"
    return ", ".join(f"{k}={v}" for k, v in answer.items())


def truth_in_words(card: ItemCard) -> list[str]:
    """The item's ground truth as sentences a newcomer reads (unknown keys as `key: value`)."""
    lines = []
    for key, value in card.truth.items():
        true = str(value).lower() == "true"  # stored as "true"/"false" or as booleans
        if key == "negative":
            lines.append("The altered caption is " + ("also true of the image: not a valid negative." if true else "false for the image: a valid negative."))
        elif key == "positive_variant":
            lines.append("The hard positive is " + ("true of the image." if true else "false for the image."))
        elif key == "ambiguous":
            lines.append("The generated image " + ("also fits the positive caption: ambiguous." if value else "fits only its own caption."))
        elif key == "correct" and isinstance(value, int) and 0 <= value < len(card.captions):
            lines.append(f"The true caption is the {card.captions[value][0]} one.")
        elif key == "best":
            lines.append("Best candidate: " + ("none." if value is None else f"{chr(ord('A') + int(value))}."))
        elif key == "valid_foil":
            lines.append(_crowd_votes_sentence(bool(value), card.votes))
        elif key in ("valid", "ambiguous_candidates"):
            continue  # marked on the candidate images (candidate_marks)
        else:
            lines.append(f"{key}: {value}")
    return lines


def _crowd_votes_sentence(valid: bool, votes: dict[str, int] | None) -> str:
    """VALSE's crowd validation of a foil in words, with its three votes.

    >>> _crowd_votes_sentence(True, {"caption": 3, "foil": 0, "other": 0})
    'Crowd validation: 3 of 3 workers chose the caption, 0 the foil, 0 neither: a valid foil (the authors keep it when 2 or more choose the caption).'
    """
    verdict = "a valid foil" if valid else "not a valid foil"
    if not votes:
        return f"Crowd validation: {verdict}."
    total = sum(votes.values())
    return (f"Crowd validation: {votes.get('caption', 0)} of {total} workers chose the caption, {votes.get('foil', 0)} the foil, "
            f"{votes.get('other', 0)} neither: {verdict} (the authors keep it when 2 or more choose the caption).")


def candidate_marks(card: ItemCard) -> dict[str, str]:
    """Image label -> what the truth says of that candidate ("valid, best", "not valid")."""
    valid, best = card.truth.get("valid"), card.truth.get("best")
    if not isinstance(valid, list):
        return {}
    marks = {}
    for index, ok in enumerate(valid):
        marks[f"candidate {chr(ord('A') + index)}"] = ("valid" if ok else "not valid") + (", best" if best == index else "")
    return marks


def card_thumbnails(card: ItemCard, cache_dir: Path) -> list[tuple[str, Path | None, Path | None]]:
    """(label, file, thumbnail) per image of a card; the file is None when missing, the
    thumbnail None when missing or unreadable (pages say which instead of failing)."""
    return [(label, path, thumbnail(path, cache_dir) if path is not None else None) for label, path in card.images]
