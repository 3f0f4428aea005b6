"""What every benchmark format module is made of: the ``Format`` record, what a reader returns
(``Parsed``), and the reading helpers all readers share.

A reader takes a path and returns a ``Parsed``: the items in file order, the file and row each
came from, per-item outcomes when the file holds a model's results, and warnings. Readers never
touch the store; ``data.loading.import_path`` writes what they return in one transaction. A
writer takes stored items (``store.list_items`` rows), a folder and an ``ExportContext``, writes
the benchmark's own layout there and returns the names it wrote.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from foil_studio.data.item_kinds import REGISTRY as ITEM_KIND_RECORDS
from foil_studio.data.item_kinds.truth import BEST, CORRECT
from foil_studio.data.items import Item, ItemShapeError
from foil_studio.data.reading import (
    BadInputError,
    check_binary_file,
    check_count,
    check_text,
    parse_json,
    pinned_limits,
    read_csv_rows,
    read_json,
    read_lines,
)


@dataclass(frozen=True)
class ImportWarning:
    """Something imported with a caveat, or skipped."""

    file: str
    row: int | str | None
    message: str


@dataclass(frozen=True)
class RunSpec:
    """The run that imported per-item results belong to."""

    name: str
    run_type: str  # "correct", "groups" or "choices"
    model: str | None = None


@dataclass
class Parsed:
    """What a parser read: items in file order, their origins and optional outcomes.

    `scored_runs` holds the runs a file carries with their similarities (JSONL's `results`, as
    `export --format jsonl` writes them): run name -> {index of the item in `items`: its scores as
    the store keeps them}; the import stores each as a run again. `keys` holds each item's
    `Item.keys()` where the reader worked them out (a reading process: `loading.read_in_process`)."""

    source_format: str
    default_name: str
    items: list[Item] = field(default_factory=list)
    origins: list[tuple[str, int | str]] = field(default_factory=list)
    outcomes: list[dict[str, Any]] | None = None
    run: RunSpec | None = None
    warnings: list[ImportWarning] = field(default_factory=list)
    embedded_images: dict[str, bytes] = field(default_factory=dict)
    scored_runs: dict[str, dict[int, Any]] = field(default_factory=dict)
    keys: list[tuple[str, str]] | None = None

    def add(self, item: Item, file: Path | str, row: int | str, outcome: dict[str, Any] | None = None) -> None:
        """Append one item with where it came from (and its outcome for results files)."""
        self.items.append(item)
        self.origins.append((str(file), row))
        if outcome is not None:
            if self.outcomes is None:
                self.outcomes = []
            self.outcomes.append(outcome)

    def warn(self, file: Path | str, row: int | str | None, message: str) -> None:
        """Record a warning that the import report will show."""
        self.warnings.append(ImportWarning(str(file), row, message))


Reader = Callable[..., Parsed]  # (path), and category= where the format `reads_category`
StoredItem = Mapping[str, Any]
Results = Mapping[int, Mapping[str, Mapping[str, Any]]]
Writer = Callable[[list[StoredItem], Path, "ExportContext"], list[str]]


@dataclass(frozen=True)
class ExportContext:
    """What a writer may need besides the items: the dataset's name, where its images are, and
    its runs' per-item results (item id -> run -> {correct, scores}) for layouts that hold them."""

    dataset: str
    image_root: Path | None = None
    results: Results = field(default_factory=dict)


@dataclass(frozen=True)
class HubLayout:
    """How a copy of a benchmark sits on the Hugging Face Hub (`import hf` reads it): the columns
    every split of the copy holds, and how one split's rows become items, `add_split(parsed,
    category, rows, file)`. The category is the split's (or its config's) name as the benchmark
    names it (`category_name`: the copy's spelling to the benchmark's), or, where `rows_name_category`,
    each row's own (a column such as Winoground's `collapsed_tag`: the split is then only a part,
    and `add_split` gets None). `hub_ids` are the Hub's copies in this layout (docs/formats.md)."""

    columns: frozenset[str]
    add_split: Callable[[Parsed, str | None, list[Any], Path], None]
    hub_ids: tuple[str, ...] = ()
    rows_name_category: bool = False
    category_name: Callable[[str], str] = str


@dataclass(frozen=True)
class Format:
    """One benchmark layout: how to read it (`./foil import NAME PATH`) and write it
    (`./foil export DATASET --format NAME`), with what the README's tables say of it.

    `writes` lists the item kinds the writer's layout holds (empty: any item kind); `carries_results`
    says the layout holds each run's per-item results too. `place_images(parsed, root)` adjusts
    image paths to where they are under the image root (sources with several layouts), and
    `report(parsed)` adds the format's own figures to the import report. Its metrics follow
    the benchmark: `metric_names` renames our metric keys to the benchmark's own (None drops one
    that means nothing there), `ties` is how its code counts a tie (`analysis.metrics.TIE_RULES`)
    and `ties_because` says why, and `groups` names item groups (`meta["groups"]`) scored all
    right or not at all (What'sUp's pairs and sets: `{group}_accuracy`). `category_types`, for a
    benchmark whose categories are subtypes, gives each one's type (BiVLC: `replace_obj` ->
    `replace`): the summaries then add `by_type` beside `by_category`. A format that reads and
    writes names a source for the read -> write -> read test: `source_fixture`, a file or folder
    of the benchmark's own release under the shared fixtures folder (`$FOIL_FIXTURES`), or
    `write_source(folder)`, which writes a small source there and returns the path to import.
    `hub_layouts`, for a benchmark copied to the Hugging Face Hub, say how `import hf` maps each
    copy's columns (`HubLayout`). `renames_images` says the writer copies the images beside its
    files under new names: what is
    read back is the written folder with itself as the image root, and the same images by content.
    `reads_category` says its reader takes `category=` (`import --category`), the category of a copy
    that names none. `read_chunks(path)`, for a layout read a line at a time, gives what `read` does as
    consecutive chunks (`data.loading.import_path` stores each before reading the next: a million-item
    file is never held whole). `categories_are_seeds` says each category is one seed's draw of the same
    items (ARO's order sets): the metrics then add each figure's mean and standard error over them (`over_seeds`).
    """

    name: str
    layout: str  # the files it reads or writes, in words
    example: str = ""  # a README command line importing it
    read: Reader | None = None
    write: Writer | None = None
    writes: tuple[str, ...] = ()
    carries_results: bool = False
    metric_names: Mapping[str, str | None] = field(default_factory=dict)
    ties: str = "wrong"
    ties_because: str = "a strict >, as the benchmark's code compares scores"
    groups: tuple[str, ...] = ()
    category_types: Callable[[str], str] | None = None
    place_images: Callable[[Parsed, Path], Parsed] | None = None
    report: Callable[[Parsed], dict[str, Any]] | None = None
    source_fixture: str = ""
    write_source: Callable[[Path], Path] | None = None
    renames_images: bool = False
    categories_are_seeds: bool = False
    hub_layouts: tuple[HubLayout, ...] = ()
    reads_category: bool = False
    read_chunks: Callable[[Path], Iterator[Parsed]] | None = None

    def write_items(self, items: Sequence[StoredItem], out: Path, context: ExportContext) -> list[str]:
        """Write stored items in this layout (`write`); refused for a format that only reads."""
        if self.write is None:
            raise ValueError(f"the {self.name} format is read only: it has no writer")
        return self.write(list[StoredItem](items), out, context)


def write_json_files(out: Path, files: Mapping[str, Any]) -> list[str]:
    """Write each `{name: document}` as `out/{name}.json` (folders created); return the names
    written, sorted. The one way format writers lay out JSON files."""
    for name, document in files.items():
        target = out / f"{name}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(document, indent=2, ensure_ascii=False))
    return sorted(f"{name}.json" for name in files)


# --- reading helpers -------------------------------------------------------------------------


def require_keys(record: Any, keys: tuple[str, ...], file: Path, row: int | str) -> dict[str, Any]:
    """Return `record` if it is an object with non-empty string values at `keys`."""
    if not isinstance(record, dict):
        raise BadInputError(file, row, f"expected an object with keys {list(keys)}, got {type(record).__name__}")
    bad = [k for k in keys if not isinstance(record.get(k), str) or not record[k].strip()]
    if bad:
        raise BadInputError(file, row, f"missing or empty field(s) {bad}; expected {list(keys)}")
    return record


def make_item(file: Path, row: int | str, **fields: Any) -> Item:
    """Build an Item from outside text, checked at the reading boundary: captions, category and
    image paths are text within the limits, free of control characters; truth and meta are
    objects. Any failure is a BadInputError naming file and row."""
    for n, caption in enumerate(fields.get("captions", ())):
        check_text(caption, file, row, f"caption {n + 1}")
    for n, image in enumerate(fields.get("images", ())):
        check_text(image, file, row, f"image {n + 1}")
    check_text(fields.get("category"), file, row, "category")
    for key in ("truth", "meta"):
        if not isinstance(fields.get(key, {}), dict):
            raise BadInputError(
                file, row, f"{key} is {fields[key]!r} ({type(fields[key]).__name__}); expected an object"
            )
    try:
        item = Item(**fields)
    except ItemShapeError as error:
        raise BadInputError(file, row, str(error)) from None
    check_truth_indexes(item, file, row)
    return item


# Truth keys that point into the item's own lists (`data.item_kinds.truth`): the list each one
# indexes, and whether null may stand for none (a candidate set none of whose images fits).
TRUTH_INDEXES = {CORRECT.name: ("captions", False), BEST.name: ("images", True)}


def check_truth_indexes(item: Item, file: Path, row: int | str) -> None:
    """Each index of the item's truth (a key its item kind lists) is a whole number into its list."""
    listed = {key.name for key in ITEM_KIND_RECORDS[item.kind].truth_keys}
    for key, (points_into, nullable) in TRUTH_INDEXES.items():
        if key not in listed or key not in item.truth or (nullable and item.truth[key] is None):
            continue
        size = len(getattr(item, points_into))
        meaning = f"the index of one of its {size} {points_into}" + (", or null for none" if nullable else "")
        check_count(item.truth[key], file, row, f"truth.{key}", below=size, meaning=meaning)


def keyed_records(path: Path, fields: tuple[str, ...]) -> Iterator[tuple[Path, str, dict[str, Any]]]:
    """(file, key, record) of every `{key: record}` JSON file at `path` (a file or a folder of
    them), each record checked to hold non-empty text at `fields`; the layout of SugarCrepe and VALSE."""
    for file in json_files(path):
        records = read_json(file)
        if not isinstance(records, dict):
            raise BadInputError(file, None, f"expected an object mapping keys to records with {list(fields)}")
        for key, record in records.items():
            yield file, str(key), require_keys(record, fields, file, key)


def json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed object) of every non-blank line of a JSON-lines file."""
    if not path.is_file():
        raise BadInputError(path, None, "is a folder; expected a .jsonl file" if path.is_dir() else "no such file")
    with pinned_limits():  # the rows' checks read them once, not at every row
        for number, line in read_lines(path):
            if line.strip():
                yield number, parse_json(line, path, number)


def json_files(path: Path, pattern: str = "*.json") -> list[Path]:
    """`path` itself if it is a file, else the matching files of the folder in sorted order."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise BadInputError(path, None, "no such file or folder")
    files = sorted(path.glob(pattern))
    if not files:
        raise BadInputError(path, None, f"no {pattern} files in this folder")
    return files


def read_bool(value: Any, file: Path, row: int, column: str) -> bool:
    """A 0/1 or True/False cell."""
    text = str(value).strip().lower()
    if text in ("true", "1", "1.0"):
        return True
    if text in ("false", "0", "0.0"):
        return False
    raise BadInputError(file, row, f"column {column!r} is {value!r}; expected True/False or 1/0")


def model_from_stem(path: Path, prefix: str) -> str:
    """The model a results file is named after (`BiVLC_ViT-B-32.csv` -> `ViT-B-32`)."""
    if not path.is_file():
        raise BadInputError(path, None, "is a folder; expected a file" if path.is_dir() else "no such file")
    return path.stem.removeprefix(prefix) or path.stem


def table_rows(path: Path, columns: tuple[str, ...]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number, row) of a CSV (through the reading boundary) or a parquet table."""
    if path.suffix.lower() != ".parquet":
        yield from read_csv_rows(path, columns)
        return
    check_binary_file(path)
    try:
        frame = pd.read_parquet(path)
    except (ValueError, OSError) as error:
        raise BadInputError(path, None, f"cannot read as a parquet table: {error}") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise BadInputError(path, 1, f"missing column(s) {missing}; expected {list(columns)}")
    if frame.empty:
        raise BadInputError(path, None, "has no rows; expected at least one item")
    yield from enumerate(frame.to_dict("records"), start=2)


def image_ref(parsed: Parsed, value: Any, file: Path, number: int) -> str:
    """A relative image path; embedded bytes are kept for writing under a content name."""
    if isinstance(value, dict) and value.get("bytes"):
        payload = bytes(value["bytes"])
        name = f"embedded/{_digest_bytes(payload)}{Path(str(value.get('path') or '')).suffix or '.png'}"
        parsed.embedded_images[name] = payload
        return name
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise BadInputError(file, number, "image column is empty; expected a path or {bytes, path}")


def _digest_bytes(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()[:24]
