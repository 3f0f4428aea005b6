"""Hugging Face `datasets` copies of benchmarks: a folder written by ``save_to_disk`` (a
``DatasetDict`` with one folder per split, or one ``Dataset``), the parquet files the Hub serves
(``{split}-00000-of-00001.parquet``, in a folder or alone), or, where the `datasets` library is
installed and the network reachable, a Hub id (``Aman-J/SugarCrepe_pp``). A Hub that cannot be
reached is refused at once, not after the library's retries; ``HF_HUB_OFFLINE=1`` reads the cache.

Each split is one category. The benchmark is recognized by its columns and its rows become
items exactly as that benchmark's own format reads its files (`LAYOUTS`); images embedded in
the table (``{bytes, path}``) are written to the store's files folder as in any parquet import.
The files are read with pyarrow: reading a local copy needs no `datasets` install.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from foil_studio.data.formats import sugarcrepe_pp
from foil_studio.data.formats.base import Format, Parsed
from foil_studio.data.hub import hub_endpoint, hub_reachable, offline_requested
from foil_studio.data.reading import BadInputError, check_binary_file, check_text, read_json

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
SHARD = re.compile(r"^(?P<split>.+?)-\d{5}-of-\d{5}$")


@dataclass(frozen=True)
class Split:
    """One split of the copy: its name (the category), the file it was read from, its rows."""

    name: str
    file: Path
    rows: list[dict[str, Any]]


@dataclass(frozen=True)
class Layout:
    """A benchmark published on the Hub: the columns that identify it, and how its rows become items."""

    benchmark: str  # the format whose rules its items follow (metrics, ties)
    columns: frozenset[str]
    add_split: Callable[[Parsed, str, list[Any], Path], None]


LAYOUTS = (Layout("sugarcrepe-pp", frozenset({"caption", "caption2", "negative_caption"}), sugarcrepe_pp.add_records),)


def parse_hf(path: Path) -> Parsed:
    """Every split of a Hugging Face copy as the items of the benchmark its columns name."""
    splits = read_splits(path)
    layout = layout_of(splits, path)
    parsed = Parsed(layout.benchmark, layout.benchmark)
    for split in splits:
        layout.add_split(parsed, split.name, split.rows, split.file)
    return parsed


def layout_of(splits: list[Split], path: Path) -> Layout:
    """The benchmark whose columns every split holds; refused, naming the columns found, when none does."""
    columns = set.intersection(*(set().union(*(row.keys() for row in s.rows)) for s in splits))
    for layout in LAYOUTS:
        if layout.columns <= columns:
            return layout
    known = "; ".join(f"{layout.benchmark}: {sorted(layout.columns)}" for layout in LAYOUTS)
    raise BadInputError(path, None, f"columns {sorted(columns)} match no known benchmark (expected {known})")


def read_splits(path: Path) -> list[Split]:
    """The non-empty splits of a local copy (or of a Hub id, through `datasets`), sorted by name."""
    if not path.exists():
        if HUB_ID.match(str(path)):
            return _hub_splits(str(path))
        raise BadInputError(path, None, "no such file or folder (nor a Hub id such as ORG/NAME)")
    if path.is_file() and path.name in ("dataset_dict.json", "state.json"):
        path = path.parent  # the folder save_to_disk wrote, named by its index file
    if path.is_file():
        splits = [_parquet_split(path)]
    elif (path / "dataset_dict.json").is_file():
        names = _dict_splits(path)
        splits = [s for name in names for s in _arrow_splits(path / name, name)]
    elif (path / "state.json").is_file():
        splits = _arrow_splits(path, None)
    else:
        files = sorted(path.rglob("*.parquet"))
        if not files:
            raise BadInputError(
                path,
                None,
                "holds no dataset_dict.json, state.json or .parquet file; expected a folder written by "
                "save_to_disk or the dataset's parquet files",
            )
        splits = _merge([_parquet_split(file) for file in files])
    splits = [s for s in splits if s.rows]
    if not splits:
        raise BadInputError(path, None, "holds no rows; expected at least one item")
    return sorted(splits, key=lambda s: s.name)


def _dict_splits(folder: Path) -> list[str]:
    """The split names `dataset_dict.json` lists, each a folder inside `folder` (never `..`)."""
    file = folder / "dataset_dict.json"
    document = read_json(file)
    names = document.get("splits") if isinstance(document, dict) else None
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        raise BadInputError(file, None, "expected {'splits': [names of split folders]}")
    for name in names:
        if name in (".", "..") or Path(name).name != name or "\\" in name:
            raise BadInputError(
                file,
                None,
                f"split {name!r} is not a plain folder name; expected {{'splits': [names of split folders]}}, "
                f"each a folder inside {folder}",
            )
    return names


def _arrow_splits(folder: Path, name: str | None) -> list[Split]:
    """One saved `Dataset` folder: its state names the Arrow files (IPC streams) and the split."""
    state_file = folder / "state.json"
    if not state_file.is_file():
        raise BadInputError(folder, None, "no state.json; expected a split folder written by save_to_disk")
    state = read_json(state_file)
    files = state.get("_data_files") if isinstance(state, dict) else None
    if not isinstance(files, list) or not all(isinstance(f, dict) and "filename" in f for f in files):
        raise BadInputError(state_file, None, "expected '_data_files': [{'filename': ...}]")
    split = name or _state_split(state, state_file) or folder.name
    rows: list[dict[str, Any]] = []
    for entry in files:
        file = folder / Path(str(entry["filename"])).name  # never a path out of the folder
        rows += _arrow_rows(file)
    return [Split(split, folder, rows)]


def _state_split(state: dict[str, Any], file: Path) -> str | None:
    """The split a saved `Dataset` names (`_split`: text, or null for none)."""
    split = state.get("_split")
    return None if split is None else check_text(split, file, None, "_split")


def _arrow_rows(file: Path) -> list[dict[str, Any]]:
    check_binary_file(file)
    try:
        with pa.memory_map(str(file)) as source:
            return pa.ipc.open_stream(source).read_all().to_pylist()
    except (pa.ArrowInvalid, OSError) as error:
        raise BadInputError(file, None, f"cannot read as an Arrow stream written by save_to_disk: {error}") from None


def _parquet_split(file: Path) -> Split:
    if file.suffix.lower() != ".parquet":
        raise BadInputError(file, None, "expected a .parquet file or a folder")
    check_binary_file(file)
    try:
        rows = pq.read_table(file).to_pylist()
    except (pa.ArrowInvalid, OSError) as error:
        raise BadInputError(file, None, f"cannot read as a parquet table: {error}") from None
    match = SHARD.match(file.stem)
    return Split(match.group("split") if match else file.stem, file, rows)


def _merge(splits: list[Split]) -> list[Split]:
    """Shards of one split (`train-00000-of-00002`, `train-00001-of-00002`) as one split."""
    merged: dict[str, Split] = {}
    for split in splits:
        before = merged.get(split.name)
        rows = [*before.rows, *split.rows] if before else split.rows
        merged[split.name] = Split(split.name, before.file if before else split.file, rows)
    return list(merged.values())


def _hub_splits(hub_id: str) -> list[Split]:
    """A Hub dataset's splits through the `datasets` library (images left as stored bytes)."""
    try:
        import datasets  # type: ignore[import-not-found]
    except ImportError:
        raise BadInputError(
            Path(hub_id),
            None,
            "reading a Hub id needs the datasets library: pip install datasets (or pass a local copy)",
        ) from None
    if not offline_requested() and not hub_reachable():
        raise BadInputError(
            Path(hub_id),
            None,
            f"cannot reach the Hub at {hub_endpoint()}. Without network access, save the dataset with save_to_disk "
            "on a connected machine and pass that folder, or set HF_HUB_OFFLINE=1 to read a copy already in the "
            "Hugging Face cache (HF_HOME)",
        )
    try:
        loaded = datasets.load_dataset(hub_id)
    except Exception as error:  # the library raises many kinds (network, missing repo, auth)
        raise BadInputError(Path(hub_id), None, f"could not load from the Hub: {error}") from None
    return [Split(name, Path(hub_id), part.with_format("arrow")[:].to_pylist()) for name, part in loaded.items()]


HF = Format(
    "hf",
    "a Hugging Face `datasets` copy: a `save_to_disk` folder, its parquet files or a Hub id; one split per category, "
    "recognized by its columns (SugarCrepe++'s), read as that benchmark's own files are",
    "./foil import hf scpp_hf/ --images coco/val2017",
    parse_hf,
)
