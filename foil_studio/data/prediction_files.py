"""Prediction files: what a predictor says of every item of a dataset whose negatives benchmark health
validates (a VLM judge's answer, one crowd vote, a validator model's probability).

One row per item, as JSON lines (``.jsonl``) or CSV (``.csv``):

* ``id``: the item's id in the benchmark's own files (its source id, as `./foil export` writes it);
* ``invalid``: the predicted probability that the item's negative is invalid, a number from 0 to 1,
  or a label: 1/0, true/false, or the words invalid/valid;
* ``category`` (optional): the item's category, checked against the stored one.

Every item a health sample can draw must have exactly one row: the estimates need the predictor's
mean over each whole category.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from foil_studio.data.formats.base import json_lines
from foil_studio.data.reading import BadInputError, check_id, read_csv_rows

PREDICTION_FIELDS = ("id", "invalid")
LABEL_WORDS = {"invalid": 1.0, "valid": 0.0, "true": 1.0, "false": 0.0}
EXPECTED = "a probability from 0 to 1, or a label: 1/0, true/false, invalid/valid"


def read_prediction_rows(path: Path) -> Iterator[tuple[int, str, float, str | None]]:
    """(row number, source id, predicted invalid probability, category or None) of every row."""
    if path.suffix.lower() == ".csv":
        for number, row in read_csv_rows(path, PREDICTION_FIELDS):
            yield (
                number,
                check_id(row["id"], path, number, "id"),
                _invalid(row["invalid"], path, number),
                (row.get("category") or None),
            )
    elif path.suffix.lower() in (".jsonl", ".json"):
        for number, record in json_lines(path):
            if not isinstance(record, dict) or any(field not in record for field in PREDICTION_FIELDS):
                raise BadInputError(path, number, f"expected an object with {list(PREDICTION_FIELDS)}, got {record!r}")
            category = record.get("category")
            yield (
                number,
                check_id(record["id"], path, number, "id"),
                _invalid(record["invalid"], path, number),
                (None if category is None else str(category)),
            )
    else:
        raise BadInputError(path, None, "expected a .jsonl (JSON lines) or .csv prediction file")


def _invalid(value: Any, path: Path, row: int) -> float:
    """A prediction cell as a probability: numbers from 0 to 1 as they are, labels as 0 or 1."""
    if isinstance(value, bool):
        return float(value)
    number = value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in LABEL_WORDS:
            return LABEL_WORDS[text]
        try:
            number = float(text)
        except ValueError:
            number = None
    if not isinstance(number, (int, float)) or not 0 <= number <= 1:  # NaN fails both comparisons
        raise BadInputError(path, row, f"invalid is {value!r}; expected {EXPECTED}")
    return float(number)


def match_predictions(path: Path, frame: Sequence[tuple[int, str, str]]) -> dict[int, float]:
    """Item id -> predicted invalid probability, from the file's rows matched by source id against
    `frame` ((item id, source id, category) of every item a health sample can draw). Refused: an
    id the frame does not hold, or holds twice; a row repeated; a category that differs; an item
    left without a prediction."""
    by_source: dict[str, tuple[int, str]] = {}
    repeated: set[str] = set()
    for item, source, stratum in frame:
        if source in by_source:
            repeated.add(source)
        by_source[source] = (item, stratum)
    found: dict[int, float] = {}
    seen: dict[str, int] = {}
    for row, source, invalid, category in read_prediction_rows(path):
        if source not in by_source:
            example = ", ".join(repr(s) for s in list(by_source)[:3])
            raise BadInputError(
                path, row, f"id {source!r} is not an item of the dataset with a negative (ids such as {example})"
            )
        if source in repeated:
            raise BadInputError(
                path, row, f"id {source!r} names several items of the dataset; predictions need unique ids"
            )
        if source in seen:
            raise BadInputError(path, row, f"id {source!r} was given a prediction already on row {seen[source]}")
        item, kept = by_source[source]
        if category is not None and category != kept:
            raise BadInputError(path, row, f"category {category!r} for id {source!r}; the dataset has it in {kept!r}")
        seen[source] = row
        found[item] = invalid
    missing = [source for source in by_source if source not in seen]
    if missing:
        example = ", ".join(repr(s) for s in missing[:3])
        raise BadInputError(
            path,
            None,
            f"has predictions on {len(found)} of the {len(by_source)} items with a negative; every one needs a "
            f"prediction (missing: {example}{' ...' if len(missing) > 3 else ''})",
        )
    return found
