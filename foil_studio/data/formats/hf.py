"""Hugging Face `datasets` copies of benchmarks, in the layouts the library and the Hub write: a
folder written by ``save_to_disk`` (a ``DatasetDict`` with one folder per split, or one
``Dataset``; or a folder holding one such folder per config), the parquet files of a Hub
repository (``push_to_hub``'s ``data/{split}-00000-of-00001[-fingerprint].parquet`` or
``{config}/{split}-00000-of-00001.parquet``, a split's shards read as one), the Hub's own parquet
conversion (``{config}/{split}/0000.parquet``), or, where the `datasets` library is installed, a Hub
id (``Aman-J/SugarCrepe_pp``), whose configs are enumerated and read together. A Hub that cannot be
reached is refused at once, not after the library's retries; ``HF_HUB_OFFLINE=1`` reads the cache.

A folder whose README.md declares ``configs:`` (``config_name`` and ``data_files`` of ``split`` and
``path`` patterns) is read as ``datasets`` reads it: each config's files as its pattern finds them. A
config whose rows are exactly every other config's rows together (an ``all`` config, or ``default``
over ``*/...``) is an aggregate: it is skipped, and the report says so (import its folder alone to
read it alone).

Categories are what the benchmark means: a split's name, or, where the split is only a part
(``train``, ``validation``, ``test``), its config's name (a folder's name where the copy records
none), never a file's or shard's name; a copy whose rows name their own (Winoground's
``collapsed_tag``, BiVLC's ``type`` and ``subtype``) is read by them. A copy that names no category
takes it from ``--category`` (HuggingFaceM4's one repository per SugarCrepe category), and is refused
without it; two splits that would be one category (``swap_atribute`` and ``swap_attribute``) are
refused. The benchmark is recognized by its columns (the layout with the most columns first) and its
rows become items exactly as that benchmark's own format reads its files (`Format.hub_layouts`);
a ``ClassLabel`` column is read as its names. Images embedded in the table (``{bytes, path}``) are
written to the store's files folder as in any parquet import, and an ``Image()`` cell holding only a
path (``to_parquet`` writes no bytes) is that path, relative to the image root (``--images``) like any
image path; an absolute one inside the image root is taken relative to it. The files are read with
pyarrow: reading a local copy needs no `datasets` install.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from foil_studio.data.formats.base import Format, HubLayout, Parsed
from foil_studio.data.hub import OFFLINE, cache_only, error_line, hub_endpoint, hub_reachable, offline_requested
from foil_studio.data.reading import BadInputError, check_binary_file, check_text, read_json

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
# push_to_hub's shard names; releases of `datasets` before 2.15 appended the shard's fingerprint
SHARD = re.compile(r"^(?P<split>.+?)-(?P<index>\d{5})-of-(?P<total>\d{5})(?:-[0-9a-f]+)?$")
CONVERTED = re.compile(r"^\d{4}$")  # the Hub's parquet conversion: {config}/{split}/0000.parquet
PART_SPLITS = frozenset({"train", "validation", "test"})  # `datasets.Split`'s names: a part, not a category
UNNAMED_CONFIGS = frozenset({"default", "data"})  # the Hub's name for a dataset without configs, push_to_hub's folder
EXPECTED = (
    "expected splits named by category ({split}-00000-of-00001.parquet as push_to_hub writes them, or a "
    "save_to_disk folder with one folder per split) or one config per category ({config}/train-00000-of-00001"
    ".parquet, the Hub's {config}/train/0000.parquet, or a save_to_disk folder per config)"
)


@dataclass(frozen=True)
class Split:
    """One split of the copy: its config (None: the unnamed one), its name (None: unnamed), the
    file it was read from, its rows."""

    config: str | None
    name: str | None
    file: Path
    rows: list[dict[str, Any]]

    @property
    def category(self) -> str | None:
        """What the benchmark means by it: the split's name, or its config's where the split is only a part."""
        return self.name if self.name and self.name not in PART_SPLITS else self.config

    def describe(self) -> str:
        """The split in words, for messages."""
        return _describe(self.config, self.name)


def _describe(config: str | None, split: str | None) -> str:
    return f"split {split!r} of " + (f"config {config!r}" if config else "no named config")


@dataclass(frozen=True)
class Place:
    """Where a parquet file's name puts it: config, split, and its shard number and count (None: unnumbered)."""

    config: str | None
    split: str
    index: int
    total: int | None


def hub_layouts() -> list[tuple[Format, HubLayout]]:
    """Every Hugging Face layout of the formats' registry (`Format.hub_layouts`), the layout with
    the most columns first (SugarCrepe++'s before SugarCrepe's, whose columns it holds too); read
    when called: this module is one of the registry's own."""
    from foil_studio.data.formats import REGISTRY

    layouts = [(fmt, layout) for fmt in REGISTRY.values() for layout in fmt.hub_layouts]
    return sorted(layouts, key=lambda pair: -len(pair[1].columns))


def parse_hf(path: Path, category: str | None = None) -> Parsed:
    """Every split of a Hugging Face copy as the items of the benchmark its columns name;
    `category` names the category of a copy that names none."""
    splits = read_splits(path)
    splits, skipped = without_aggregates(splits)
    benchmark, layout = layout_of(splits, path)
    parsed = Parsed(benchmark.name, benchmark.name)
    for config in skipped:
        parsed.warn(
            path,
            None,
            f"config {config!r} holds every other config's rows together: skipped (its folder alone imports it)",
        )
    if layout.rows_name_category:
        if category is not None:
            raise BadInputError(path, None, f"--category {category!r}: this copy's rows name their own categories")
        for split in splits:
            layout.add_split(parsed, None, [_stored_paths(row) for row in split.rows], split.file)
    else:
        for name, split in categories(splits, path, layout, category):
            layout.add_split(parsed, name, [_stored_paths(row) for row in split.rows], split.file)
    _check_unique_ids(parsed, path)
    return parsed


def categories(splits: list[Split], path: Path, layout: HubLayout, given: str | None = None) -> list[tuple[str, Split]]:
    """(category, split) of every split, by category (`given` for a copy that names none); refused
    where a split names none or two name one."""
    named: dict[str, Split] = {}
    for split in splits:
        category = split.category
        if given is not None:
            if category is not None and category not in PART_SPLITS:
                raise BadInputError(
                    path, None, f"--category {given!r}: {split.describe()} names its own category {category!r}"
                )
            category = given
        if category is None or category in PART_SPLITS:
            raise BadInputError(
                path,
                None,
                f"{split.describe()} names no category; {EXPECTED}; or pass --category NAME where only the "
                "repository's name says it (HuggingFaceM4/SugarCrepe_swap_att: --category swap_att)",
            )
        category = layout.category_name(category)
        if category in named:
            raise BadInputError(
                path,
                None,
                f"{named[category].describe()} and {split.describe()} would both be category {category!r}; {EXPECTED}",
            )
        named[category] = split
    return [(name, named[name]) for name in sorted(named)]


def layout_of(splits: list[Split], path: Path) -> tuple[Format, HubLayout]:
    """The benchmark whose columns every split holds; refused, naming the columns found, when none does."""
    columns = set.intersection(*(set().union(*(row.keys() for row in s.rows)) for s in splits))
    known_layouts = hub_layouts()
    for fmt, layout in known_layouts:
        if layout.columns <= columns:
            return fmt, layout
    known = "; ".join(f"{fmt.name}: {sorted(layout.columns)}" for fmt, layout in known_layouts)
    raise BadInputError(path, None, f"columns {sorted(columns)} match no known benchmark (expected {known})")


def without_aggregates(splits: list[Split]) -> tuple[list[Split], list[str]]:
    """The splits less those of a config whose rows are exactly all the other configs' rows
    together (an `all` config beside the others), and the names of the configs left out."""
    configs = sorted({s.config for s in splits if s.config is not None})
    if len(configs) < 3:  # an aggregate needs at least two configs beside it
        return splits, []
    rows = {
        config: Counter(_row_key(row) for s in splits if s.config == config for row in s.rows) for config in configs
    }
    skipped = []
    for config in configs:
        others = sum((rows[c] for c in configs if c != config and c not in skipped), Counter())
        if rows[config] == others:
            skipped.append(config)
    return [s for s in splits if s.config not in skipped], skipped


def _row_key(row: dict[str, Any]) -> str:
    """A row's content as a digest (images by their bytes), to find one row in two configs."""
    text = json.dumps(
        row, sort_keys=True, default=lambda v: hashlib.sha256(v).hexdigest() if isinstance(v, bytes) else str(v)
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _check_unique_ids(parsed: Parsed, path: Path) -> None:
    """No two items of a copy share a category and source id (two splits of one category would)."""
    seen: dict[tuple[str, str], tuple[str, int | str]] = {}
    for item, origin in zip(parsed.items, parsed.origins, strict=True):
        key = (item.category, item.source_id)
        if key in seen:
            raise BadInputError(
                path,
                None,
                f"{origin[0]} row {origin[1]} and {seen[key][0]} row {seen[key][1]} are both item {item.source_id!r} "
                f"of category {item.category!r}; expected one split per category",
            )
        seen[key] = origin


def place_images(parsed: Parsed, root: Path) -> Parsed:
    """Absolute image paths inside `root` as paths relative to it (`Dataset.cast_column("image",
    Image())` stores the paths it was given); one outside `root` is refused, naming both."""
    resolved = root.resolve()

    def relative(image: str, origin: tuple[str, int | str]) -> str:
        if not Path(image).is_absolute():
            return image
        target = Path(image).resolve()
        if not target.is_relative_to(resolved):
            raise BadInputError(
                Path(origin[0]),
                origin[1],
                f"image path {image!r} is outside the image root {resolved} (--images); expected paths inside it",
            )
        return target.relative_to(resolved).as_posix()

    items = [
        dataclasses.replace(item, images=tuple(relative(image, origin) for image in item.images))
        for item, origin in zip(parsed.items, parsed.origins, strict=True)
    ]
    return dataclasses.replace(parsed, items=items)


def _stored_paths(row: dict[str, Any]) -> dict[str, Any]:
    """The row with each `Image()` cell that holds no bytes (`to_parquet` of image files) as its path."""
    return {key: _image_path(value) for key, value in row.items()}


def _image_path(value: Any) -> Any:
    if isinstance(value, dict) and value.keys() == {"bytes", "path"} and value["bytes"] is None:
        return value["path"]
    return value


def read_splits(path: Path) -> list[Split]:
    """The non-empty splits of a local copy (or of a Hub id, through `datasets`)."""
    if not path.exists():
        if HUB_ID.match(str(path)) and not _looks_local(path):
            return _hub_splits(str(path))
        raise BadInputError(path, None, f"no such file or folder{_where_local(path)}")
    if path.is_file() and path.name in ("dataset_dict.json", "state.json"):
        path = path.parent  # the folder save_to_disk wrote, named by its index file
    if path.is_file():
        splits = _parquet_splits([path], path)
    elif declared := _card_configs(path):
        splits = _declared_splits(path, declared)
    elif _is_saved(path):
        splits = _saved_splits(path)
    elif configs := [folder for folder in sorted(path.iterdir()) if folder.is_dir() and _is_saved(folder)]:
        splits = [split for folder in configs for split in _saved_splits(folder)]
    else:
        files = sorted(path.rglob("*.parquet"))
        if not files:
            raise BadInputError(
                path,
                None,
                "holds no dataset_dict.json, state.json or .parquet file; expected a folder written by "
                "save_to_disk (or one per config) or the dataset's parquet files",
            )
        splits = _parquet_splits(files, path)
    splits = [s for s in splits if s.rows]
    if not splits:
        raise BadInputError(path, None, "holds no rows; expected at least one item")
    return splits


def _looks_local(path: Path) -> bool:
    """Whether a path that does not exist was meant as a local one: its first folder is here (a
    mistyped `data/scpp` beside `data/`, or `/` of an absolute path), or it starts as no Hub id does."""
    return str(path).startswith((".", "~")) or Path(path.parts[0]).is_dir()


def _where_local(path: Path) -> str:
    """Where the nearest existing folder above a missing path is, for its message."""
    for parent in path.parents:
        if parent != Path(".") and parent.is_dir():
            return f" (in {parent}, which exists: a typing error? A Hub id is ORG/NAME with no such local folder)"
    return " (nor a Hub id such as ORG/NAME)"


def _config(name: str | None) -> str | None:
    """A config's name, None for the unnamed one."""
    return None if name is None or name in UNNAMED_CONFIGS else name


# --- a README's configs ----------------------------------------------------------------------------


def _card_configs(folder: Path) -> list[dict[str, Any]]:
    """The `configs:` a repository's README.md declares in its YAML header ([] where none)."""
    card = folder / "README.md"
    if not card.is_file():
        return []
    text = card.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("---") or text.count("---") < 2:
        return []
    import yaml

    _, header_text, _ = text.split("---", 2)
    try:
        header = yaml.safe_load(header_text)
    except yaml.YAMLError as error:
        raise BadInputError(card, None, f"its YAML header cannot be read: {str(error).splitlines()[0]}") from None
    configs = header.get("configs") if isinstance(header, dict) else None
    if configs is None:
        return []
    if not isinstance(configs, list) or not all(isinstance(c, dict) and "config_name" in c for c in configs):
        raise BadInputError(card, None, "configs: expected a list of {config_name, data_files}")
    return configs


def _declared_splits(folder: Path, configs: list[dict[str, Any]]) -> list[Split]:
    """Each declared config's splits, its files found by their patterns as `datasets` finds them."""
    card = folder / "README.md"
    splits = []
    for config in configs:
        name = check_text(str(config["config_name"]), card, None, "config_name")
        for split, patterns in _data_files(config.get("data_files"), card, name).items():
            files = sorted({file for pattern in patterns for file in _matches(folder, pattern, card) if file.is_file()})
            if not files:
                raise BadInputError(
                    card, None, f"config {name!r} split {split!r}: no file matches {patterns} in {folder}"
                )
            outside = [f for f in files if not f.resolve().is_relative_to(folder.resolve())]
            if outside:
                raise BadInputError(card, None, f"config {name!r}: {outside[0]} is outside {folder}")
            rows = [row for file in files for row in _parquet_rows(file)]
            splits.append(Split(_config(name), split, files[0], rows))
    return splits


def _matches(folder: Path, pattern: str, card: Path) -> list[Path]:
    """The files a `data_files` pattern finds in the repository folder; one that is absolute (or
    that `Path.glob` cannot take) is refused, as `datasets` reads patterns inside the repository."""
    try:
        return list(folder.glob(pattern))
    except (NotImplementedError, ValueError) as error:
        raise BadInputError(
            card, None, f"data_files pattern {pattern!r}: {error}; expected a path inside the repository"
        ) from None


def _data_files(value: Any, card: Path, config: str) -> dict[str, list[str]]:
    """A config's `data_files` as split -> patterns: a pattern or list of them (the `train` split),
    or a list of {split, path} with a pattern or a list of them each."""
    if isinstance(value, str):
        return {"train": [value]}
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return {"train": list(value)}
    if isinstance(value, list) and all(isinstance(v, dict) and {"split", "path"} <= v.keys() for v in value):
        found: dict[str, list[str]] = defaultdict(list)
        for entry in value:
            found[str(entry["split"])] += [entry["path"]] if isinstance(entry["path"], str) else list(entry["path"])
        return dict(found)
    raise BadInputError(
        card, None, f"config {config!r}: data_files expected a pattern, a list of them, or [{{split, path}}]"
    )


# --- save_to_disk folders --------------------------------------------------------------------------


def _is_saved(folder: Path) -> bool:
    return (folder / "dataset_dict.json").is_file() or (folder / "state.json").is_file()


def _saved_splits(folder: Path) -> list[Split]:
    """A `DatasetDict` (one folder per split) or one `Dataset`, saved by save_to_disk in `folder`."""
    if (folder / "dataset_dict.json").is_file():
        return [_arrow_split(folder / name, folder.name, name) for name in _dict_splits(folder)]
    return [_arrow_split(folder, folder.name, None)]


def _dict_splits(folder: Path) -> list[str]:
    """The split names `dataset_dict.json` lists, each a folder inside `folder` (never `..`)."""
    file = folder / "dataset_dict.json"
    document = read_json(file)
    names = document.get("splits") if isinstance(document, dict) else None
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        raise BadInputError(file, None, "expected {'splits': [names of split folders]}")
    for name in names:
        if name == ".." or Path(name).name != name or "\\" in name:  # `.` has no name
            raise BadInputError(
                file,
                None,
                f"split {name!r} is not a plain folder name; expected {{'splits': [names of split folders]}}, "
                f"each a folder inside {folder}",
            )
    return names


def _arrow_split(folder: Path, saved_as: str, name: str | None) -> Split:
    """One saved `Dataset` folder: its state names the Arrow files (IPC streams) and the split; its
    config is the one its info records, else the name of the folder it was saved as."""
    state_file = folder / "state.json"
    if not state_file.is_file():
        raise BadInputError(folder, None, "no state.json; expected a split folder written by save_to_disk")
    state = read_json(state_file)
    files = state.get("_data_files") if isinstance(state, dict) else None
    if not isinstance(files, list) or not all(isinstance(f, dict) and "filename" in f for f in files):
        raise BadInputError(state_file, None, "expected '_data_files': [{'filename': ...}]")
    split = name or _state_text(state, state_file, "_split")
    rows: list[dict[str, Any]] = []
    for entry in files:
        file = folder / Path(str(entry["filename"])).name  # never a path out of the folder
        rows += _arrow_rows(file)
    return Split(_config(_recorded_config(folder)) or _config(saved_as), split, folder, rows)


def _recorded_config(folder: Path) -> str | None:
    """The config a saved split's `dataset_info.json` records (`load_dataset` records it; `from_dict` does not)."""
    file = folder / "dataset_info.json"
    return _state_text(read_json(file), file, "config_name") if file.is_file() else None


def _state_text(document: Any, file: Path, key: str) -> str | None:
    """A text field of a saved dataset's JSON (null or absent: None)."""
    value = document.get(key) if isinstance(document, dict) else None
    return None if value is None else check_text(value, file, None, key)


def _arrow_rows(file: Path) -> list[dict[str, Any]]:
    check_binary_file(file)
    try:
        with pa.memory_map(str(file)) as source:
            return _rows_with_names(pa.ipc.open_stream(source).read_all())
    except (pa.ArrowInvalid, OSError) as error:
        raise BadInputError(file, None, f"cannot read as an Arrow stream written by save_to_disk: {error}") from None


# --- parquet files ---------------------------------------------------------------------------------


def _parquet_splits(files: list[Path], root: Path) -> list[Split]:
    """The splits of parquet `files` under `root` (a folder, or the one file), a split's shards as one."""
    tables = [(file, _parquet_rows(file)) for file in files]  # read first: a broken file is named as such
    places = {file: _place(file, root) for file in files}
    _check_shards(places, root)
    merged: dict[tuple[str | None, str], Split] = {}
    for file, rows in tables:
        place = places[file]
        before = merged.get((place.config, place.split))
        merged[(place.config, place.split)] = Split(
            place.config, place.split, before.file if before else file, [*before.rows, *rows] if before else rows
        )
    return list(merged.values())


def _parquet_rows(file: Path) -> list[dict[str, Any]]:
    if file.suffix.lower() != ".parquet":
        raise BadInputError(file, None, "expected a .parquet file or a folder")
    check_binary_file(file)
    try:
        return _rows_with_names(pq.read_table(file))
    except (pa.ArrowInvalid, OSError) as error:
        raise BadInputError(file, None, f"cannot read as a parquet table: {error}") from None


def _rows_with_names(table: pa.Table) -> list[dict[str, Any]]:
    """A table's rows, each `ClassLabel` column's numbers as its names (the features `datasets`
    records in the schema's metadata)."""
    rows = table.to_pylist()
    labels = _class_names(table.schema.metadata or {})
    for column, names in labels.items():
        for row in rows:
            if isinstance(row.get(column), int) and 0 <= row[column] < len(names):
                row[column] = names[row[column]]
    return rows


def _class_names(metadata: dict[bytes, bytes]) -> dict[str, list[str]]:
    """{column: names} of the `ClassLabel` columns the `huggingface` schema metadata records."""
    recorded = metadata.get(b"huggingface")
    if recorded is None:
        return {}
    try:
        features = json.loads(recorded)["info"]["features"]
    except (ValueError, KeyError, TypeError):
        return {}
    return {
        column: [str(name) for name in feature["names"]]
        for column, feature in (features.items() if isinstance(features, dict) else [])
        if isinstance(feature, dict) and feature.get("_type") == "ClassLabel" and isinstance(feature.get("names"), list)
    }


def _place(file: Path, root: Path) -> Place:
    """A file's config and split, from its name and the folders at or below `root` (never above it)."""
    folders = [root.name, *file.relative_to(root).parts[:-1]] if root.is_dir() else []
    shard = SHARD.match(file.stem)
    if shard:
        config = _config(folders[-1]) if folders else None
        return Place(config, shard["split"], int(shard["index"]), int(shard["total"]))
    if CONVERTED.match(file.stem) and len(folders) >= 2:
        return Place(_config(folders[-2]), folders[-1], int(file.stem), None)
    raise BadInputError(file, None, f"the name {file.name!r} names no split; {EXPECTED}")


def _check_shards(places: dict[Path, Place], root: Path) -> None:
    """Every split in numbered shards has them all (`train-00000-of-00002` and `train-00001-of-00002`)."""
    shards: dict[tuple[str | None, str], set[tuple[int, int]]] = defaultdict(set)
    for place in places.values():
        if place.total is not None:
            shards[(place.config, place.split)].add((place.index, place.total))
    for (config, split), found in shards.items():
        totals = {total for _, total in found}
        if len(totals) > 1 or {index for index, _ in found} != set(range(max(totals))):
            names = sorted(f"{index:05d}-of-{total:05d}" for index, total in found)
            raise BadInputError(
                root,
                None,
                f"{_describe(config, split)} has shards {names}; expected every shard 00000 to "
                f"{max(totals) - 1:05d} of {max(totals):05d}",
            )


# --- a Hub id --------------------------------------------------------------------------------------


def _hub_splits(hub_id: str) -> list[Split]:
    """Every split of every config of a Hub dataset, through the `datasets` library (images left as stored bytes)."""
    datasets = _datasets_library(hub_id)
    if not offline_requested() and not hub_reachable():
        raise BadInputError(
            Path(hub_id),
            None,
            f"cannot reach the Hub at {hub_endpoint()}. Without network access, save the dataset with save_to_disk "
            "on a connected machine and pass that folder, or set HF_HUB_OFFLINE=1 to read a copy already in the "
            "Hugging Face cache (HF_HOME)",
        )
    try:
        with cache_only(offline_requested()):
            configs = datasets.get_dataset_config_names(hub_id)
            loaded = {config: datasets.load_dataset(hub_id, config) for config in configs}
    except Exception as error:  # the library raises many errors (network, missing repo, auth)
        if offline_requested():
            raise BadInputError(
                Path(hub_id),
                None,
                f"the Hub is switched off ({' or '.join(n for n in OFFLINE if os.environ.get(n))}) and the "
                f"Hugging Face cache ({_cache_home()}) has no copy of {hub_id}: import it once with the Hub "
                "switched on (unset HF_HUB_OFFLINE), or on a connected machine save it with save_to_disk and "
                "pass that folder",
            ) from None
        raise BadInputError(Path(hub_id), None, f"could not load from the Hub: {error_line(error)}") from None
    return [
        Split(_config(config), name, Path(hub_id), _rows_with_names(part.with_format("arrow")[:]))
        for config, parts in loaded.items()
        for name, part in parts.items()
    ]


def _cache_home() -> str:
    """Where the Hugging Face libraries keep their cache."""
    from huggingface_hub import constants

    return str(constants.HF_HOME)


def _datasets_library(hub_id: str) -> Any:
    try:
        import datasets  # type: ignore[import-not-found]
    except ImportError:
        raise BadInputError(
            Path(hub_id),
            None,
            "reading a Hub id needs the datasets library: pip install datasets (or pass a local copy)",
        ) from None
    return datasets


HF = Format(
    "hf",
    "a Hugging Face `datasets` copy: a `save_to_disk` folder, its parquet files (as `push_to_hub` or the Hub's "
    "conversion name them, or as its README's `configs:` declare them) or a Hub id (every config); categories are "
    "split names, config names where the splits are `train`/`test`, the rows' own where they name them, or "
    "`--category`; recognized by its columns (the Hub ids of docs/formats.md), read as that benchmark's own files are",
    "./foil import hf scpp_hf/ --images coco/val2017",
    parse_hf,
    place_images=place_images,
    reads_category=True,
)
