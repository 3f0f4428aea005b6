"""Write what a parser read into the store: one transaction per import, nothing half-written."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_utils

from foil_studio.data import formats, store
from foil_studio.data.formats import BadInputError, ImportWarning, Parsed
from foil_studio.data.images import UnsafeImagePathError, clean_relative_path, max_image_pixels, probe_image

log = logging.getLogger(__name__)

MAX_LISTED_DIFFERENCES = 20

Progress = Callable[[int, int], None]


@dataclass
class ImportReport:
    """The JSON document `./foil import --json` prints."""

    dataset: str
    run: str | None
    n_items: int
    n_new_items: int
    by_category: dict[str, int]
    missing_images: int
    warnings: list[dict[str, Any]] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)  # the format's own figures (VALSE: valid foils per piece)
    runs: dict[str, int] = field(default_factory=dict)  # the runs the file carried with scores -> items scored

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output (`notes` only for formats that report figures of their own,
        `runs` only for files that carry runs with their scores, as a JSONL export)."""
        data = asdict(self)
        for optional in ("notes", "runs"):
            if not data[optional]:
                del data[optional]
        return data


def import_path(
    db: sqlite_utils.Database,
    source_format: str,
    path: Path,
    *,
    images: Path | None = None,
    name: str | None = None,
    run: str | None = None,
    embedded_root: Path | None = None,
    progress: Progress | None = None,
    category: str | None = None,
) -> ImportReport:
    """Parse `path` as import format `source_format` and store it; raise BadInputError on bad input.

    `images` is the image root the file's paths are relative to; images embedded in the file
    (parquet bytes) are written under `embedded_root` instead, which then becomes the root.
    `category` names the category of a copy that names none (formats that `reads_category`).
    """
    if source_format not in formats.IMPORT_FORMATS:
        raise BadInputError(
            path, None, f"unknown import format {source_format!r}; expected one of {list(formats.IMPORT_FORMATS)}"
        )
    fmt = formats.REGISTRY[source_format]
    assert fmt.read is not None  # IMPORT_FORMATS holds only formats with a reader
    if category is not None and not fmt.reads_category:
        readers = [f.name for f in formats.REGISTRY.values() if f.reads_category]
        raise BadInputError(
            path, None, f"--category is for {', '.join(readers)}: {source_format} files name their categories"
        )
    parsed = fmt.read(Path(path), category=category) if fmt.reads_category else fmt.read(Path(path))
    if fmt.place_images is not None and images is not None:
        parsed = fmt.place_images(parsed, images)
    if not parsed.items:
        raise BadInputError(
            path, None, f"holds no items; expected at least one {source_format} item (an empty file or folder?)"
        )
    report = store_parsed(
        db,
        parsed,
        source_format=source_format,
        path=str(path),
        images=images,
        name=name,
        run=run,
        embedded_root=embedded_root,
        progress=progress,
    )
    if fmt.report is not None:
        report.notes = fmt.report(parsed)
    return report


def attach_images(
    db: sqlite_utils.Database, dataset: str, images: Path, *, progress: Progress | None = None
) -> ImportReport:
    """Give a dataset its image folder after the fact: its last import read again with `images`
    as the root (idempotent: no item is added twice; the image statuses are checked anew)."""
    last = store.last_import(db, store.get_dataset(db, dataset)["id"])
    if last is None:
        raise BadInputError(
            Path(dataset),
            None,
            "has no import of items to attach images to (a results file, or the demo); import the benchmark with its "
            "images",
        )
    if not Path(images).is_dir():
        raise BadInputError(
            Path(images),
            None,
            "is not a folder on this machine; expected the folder the dataset's image paths are relative to",
        )
    return import_path(
        db, last["source_format"], Path(last["path"]), images=Path(images), name=dataset, progress=progress
    )


def store_parsed(
    db: sqlite_utils.Database,
    parsed: Parsed,
    *,
    source_format: str,
    path: str,
    images: Path | None = None,
    name: str | None = None,
    run: str | None = None,
    embedded_root: Path | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Write parsed items (and outcomes) in one transaction; the one write path for datasets.

    `source_format` is the import format `path` was read as (the import log's); the dataset
    records `parsed.source_format`, the format its items follow (``hf`` reads SugarCrepe++)."""
    _check_image_paths(parsed)
    root = _image_root(parsed, images, embedded_root)
    dataset_name = name or parsed.default_name
    with store.transaction(db):
        dataset_id = store.ensure_dataset(db, dataset_name, parsed.source_format, root)
        before = store.category_counts(db, dataset_id)
        stored = store.upsert_items(db, dataset_id, parsed.items)
        missing = _record_images(db, dataset_id, parsed, root, progress)
        run_name = _store_run(db, dataset_id, parsed, stored, run)
        scored_runs = _store_scored_runs(db, dataset_name, dataset_id, parsed, stored, run)
        report = ImportReport(
            dataset=dataset_name,
            run=run_name,
            n_items=len(stored),
            n_new_items=sum(new for _, new in stored),
            by_category=dict(sorted(Counter(i.category for i in parsed.items).items())),
            missing_images=missing,
            warnings=[asdict(w) for w in parsed.warnings + _differences(db, dataset_id, parsed, stored, before)],
            runs=scored_runs,
        )
        store.log_import(
            db,
            dataset_id,
            source_format=source_format,
            path=path,
            n_items=report.n_items,
            n_new_items=report.n_new_items,
            run=run_name,
        )
    return report


def _check_image_paths(parsed: Parsed) -> None:
    for item, (file, row) in zip(parsed.items, parsed.origins):
        for reference in _image_references(item.images, item.meta):
            try:
                clean_relative_path(reference)
            except UnsafeImagePathError as error:
                raise BadInputError(file, row, str(error)) from None


def _image_references(images: tuple[str, ...], meta: dict[str, Any]) -> list[str]:
    extra = meta.get("source_image")
    return [*images, extra] if isinstance(extra, str) and extra else list(images)


def _image_root(parsed: Parsed, images: Path | None, embedded_root: Path | None) -> Path | None:
    if not parsed.embedded_images:
        return images
    if embedded_root is None:
        raise BadInputError(parsed.origins[0][0], None, "the file embeds images; give a folder to write them to")
    for relative, payload in parsed.embedded_images.items():
        target = embedded_root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.write_bytes(payload)
    return embedded_root


def _record_images(
    db: sqlite_utils.Database, dataset_id: int, parsed: Parsed, root: Path | None, progress: Progress | None
) -> int:
    """Probe every distinct image once; return how many referenced files are not usable."""
    references = sorted({ref for item in parsed.items for ref in _image_references(item.images, item.meta)})
    known = store.known_image_paths(db, dataset_id)
    infos = []
    for done, reference in enumerate(references, start=1):
        if known.get(reference) != "ok" or root is None:
            try:
                infos.append(probe_image(root, reference))
            except UnsafeImagePathError as error:
                file, row = _origin_of(parsed, reference)
                raise BadInputError(file, row, str(error)) from None
        if progress and (done % 500 == 0 or done == len(references)):
            progress(done, len(references))
    store.record_images(db, dataset_id, infos)
    for info in infos:
        if info.status == "too_large":
            size = f"{info.pixels:,} pixels" if info.pixels else "more pixels than allowed"
            parsed.warn(
                info.path,
                None,
                f"image not used: {size}, over the limit of {max_image_pixels():,} pixels; "
                "raise it with FOIL_MAX_IMAGE_PIXELS",
            )
    statuses = store.known_image_paths(db, dataset_id)
    return sum(statuses.get(ref) != "ok" for ref in references)


def _origin_of(parsed: Parsed, reference: str) -> tuple[str, int | str | None]:
    """The file and row of the first item naming an image."""
    for item, origin in zip(parsed.items, parsed.origins):
        if reference in _image_references(item.images, item.meta):
            return origin
    return (parsed.origins[0][0] if parsed.origins else "?", None)


def _store_run(
    db: sqlite_utils.Database, dataset_id: int, parsed: Parsed, stored: list[tuple[int, bool]], run: str | None
) -> str | None:
    if parsed.run is None or parsed.outcomes is None:
        return None
    name = run or parsed.run.name
    run_id = store.ensure_run(
        db, dataset_id, name, run_type=parsed.run.run_type, model=parsed.run.model, meta={"imported": True}
    )
    store.put_outcomes(db, run_id, [(item_id, outcome) for (item_id, _), outcome in zip(stored, parsed.outcomes)])
    return name


def _store_scored_runs(
    db: sqlite_utils.Database,
    dataset: str,
    dataset_id: int,
    parsed: Parsed,
    stored: list[tuple[int, bool]],
    run: str | None,
) -> dict[str, int]:
    """Store each run the file carries with its scores (`Parsed.scored_runs`: a JSONL export's) as a
    run of the dataset again (`run`, where given, names the file's one run). A run of that name
    already on the dataset keeps what it has: the file's scores of it are left, with a warning,
    unless they are the ones it holds. Returns run -> items scored."""
    runs = parsed.scored_runs
    if run is not None and len(runs) > 1:
        raise BadInputError(
            parsed.origins[0][0],
            None,
            f"carries the scores of {len(runs)} runs ({', '.join(runs)}); a run name (--run) names one: import it "
            "without one to keep theirs",
        )
    kept: dict[str, int] = {}
    for carried, by_index in runs.items():
        name, (file, row) = run or carried, parsed.origins[min(by_index)]
        try:
            store.check_name("run", name)
        except store.InvalidNameError as error:
            raise BadInputError(file, row, f"'results': {error}") from None
        scores = {stored[index][0]: value for index, value in by_index.items()}
        try:
            there = store.get_run(db, dataset, name)
        except store.NotFoundError:
            run_id = store.ensure_run(db, dataset_id, name, run_type="scores", meta={"imported": True})
            store.put_scores(db, run_id, scores.items())
            kept[name] = len(scores)
            continue
        if there["run_type"] == "scores" and _holds(store.run_columns(db, int(there["id"])), scores):
            kept[name] = len(scores)  # the same import again (attach_images reads the file anew)
            continue
        parsed.warn(
            file,
            None,
            f"the scores of run {name!r} on {len(scores)} item(s) left out: {dataset} has a run of that name already, "
            "with other scores; delete it first (runs delete), or import into another dataset (--name)",
        )
    return kept


def _holds(columns: store.RunColumns, scores: dict[int, Any]) -> bool:
    """Whether a stored run holds exactly `scores` (item id -> scores) on those items."""
    if columns.scores is None:
        return False
    rows = dict(zip(columns.item_ids.tolist(), columns.scores))
    for item, value in scores.items():
        given, kept = np.asarray(value, dtype=float), rows.get(item)
        if kept is None:
            return False
        if kept.ndim == 1 and given.ndim == 1:  # a row padded with NaN past its own scores (`store.run_columns`)
            if len(given) > len(kept) or not np.isnan(kept[len(given) :]).all():
                return False
            kept = kept[: len(given)]
        if not np.array_equal(kept, given):
            return False
    return True


def _differences(
    db: sqlite_utils.Database, dataset_id: int, parsed: Parsed, stored: list[tuple[int, bool]], before: dict[str, int]
) -> list[ImportWarning]:
    """Name the items this file adds to, or lacks from, a dataset that already had them."""
    categories = sorted({i.category for i in parsed.items} & set(before))
    if not categories:
        return []
    warnings = []
    for (_, new), item, (file, row) in zip(stored, parsed.items, parsed.origins):
        if new and item.category in categories:
            warnings.append(
                ImportWarning(
                    file,
                    row,
                    f"item not in the dataset before this import, added: {item.category} {list(item.captions)}",
                )
            )
    in_file = {item_id for item_id, _ in stored}
    absent = {i: s for i, s in store.item_ids_by_category(db, dataset_id, categories).items() if i not in in_file}
    for item_id, source_id in sorted(absent.items()):
        warnings.append(
            ImportWarning(
                str(parsed.origins[0][0]), None, f"dataset item {source_id} (id {item_id}) is not in this file"
            )
        )
    if len(warnings) > MAX_LISTED_DIFFERENCES:
        extra = len(warnings) - MAX_LISTED_DIFFERENCES
        warnings = warnings[:MAX_LISTED_DIFFERENCES] + [
            ImportWarning(str(parsed.origins[0][0]), None, f"... and {extra} more differences")
        ]
    return warnings
