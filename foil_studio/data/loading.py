"""Write what a parser read into the store: one transaction per import, nothing half-written."""

from __future__ import annotations

import contextlib
import gc
import itertools
import logging
import multiprocessing
import pickle
import queue
import threading
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
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
    if category is not None and not fmt.reads_category:
        readers = [f.name for f in formats.REGISTRY.values() if f.reads_category]
        raise BadInputError(
            path, None, f"--category is for {', '.join(readers)}: {source_format} files name their categories"
        )
    chunks = _reading(fmt, Path(path), category, images)
    try:
        with fewer_collections:
            parsed = next(chunks)
            if not parsed.items:
                raise BadInputError(
                    path, None, f"holds no items; expected at least one {source_format} item (an empty file or folder?)"
                )
            report = store_parsed(
                db,
                itertools.chain([parsed], chunks),
                source_format=source_format,
                path=str(path),
                images=images,
                name=name,
                run=run,
                embedded_root=embedded_root,
                progress=progress,
            )
    finally:
        chunks.close()  # stops the reader (thread or process) whatever happened
    if fmt.report is not None:  # a format with figures of its own is read whole (`_read`)
        report.notes = fmt.report(parsed)
    return report


def _read(fmt: formats.Format, path: Path, category: str | None, images: Path | None) -> Iterator[Parsed]:
    """What `fmt` reads from `path`: chunk after chunk where it reads a line at a time (and needs
    the whole for nothing: no figures of its own, no category given), else whole as one chunk."""
    if fmt.read_chunks is not None and fmt.report is None and category is None:
        chunks = fmt.read_chunks(path)
    else:
        assert fmt.read is not None  # IMPORT_FORMATS holds only formats with a reader
        chunks = iter([fmt.read(path, category=category) if fmt.reads_category else fmt.read(path)])
    for chunk in chunks:
        yield fmt.place_images(chunk, images) if fmt.place_images is not None and images is not None else chunk


YOUNG_COLLECTION_AFTER = 100_000  # allocations between two collections while an import runs (Python's default: 700)


class _CollectionPause:
    """The collector's threshold raised while any import of this process runs (the app's threads may
    import at once: the first in raises it, the last out puts it back)."""

    def __init__(self) -> None:
        self.imports, self.threshold, self.lock = 0, gc.get_threshold(), threading.Lock()

    def __enter__(self) -> None:
        with self.lock:
            if self.imports == 0:
                self.threshold = gc.get_threshold()
                if self.threshold[0]:  # 0: the program has turned collecting off; left so
                    gc.set_threshold(max(YOUNG_COLLECTION_AFTER, self.threshold[0]), *self.threshold[1:])
            self.imports += 1

    def __exit__(self, *_: object) -> None:
        with self.lock:
            self.imports -= 1
            if self.imports == 0:
                gc.set_threshold(*self.threshold)


# Every chunk's items are new objects that live until it is stored; Python's collections of them,
# as a chunk grew, took a sixth of an import's time.
fewer_collections = _CollectionPause()


PROCESS_READ_BYTES = 16 * 1024**2  # a streamed file from this size is read in a process of its own


def _reading(
    fmt: formats.Format, path: Path, category: str | None, images: Path | None
) -> Generator[Parsed, None, None]:
    """`_read`'s chunks as the import gets them: from a reading process where the file is streamed
    and large enough to repay the process, and this process can be forked (it runs no other thread:
    the command line, a script), else from a reading thread. Another thread (the app's server) may
    hold a lock that a fork would copy held, and a process started afresh would run the program's
    main script again (the app's page, a script without a main guard)."""
    streamed = fmt.read_chunks is not None and fmt.report is None and category is None
    if streamed and _forkable() and path.is_file() and path.stat().st_size >= PROCESS_READ_BYTES:
        return read_in_process(fmt, path, images)
    return read_ahead(_read(fmt, path, category, images))


def _forkable() -> bool:
    """Whether this process may fork a reader: it runs no other thread, on a system that forks."""
    return threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods()


def read_in_process(fmt: formats.Format, path: Path, images: Path | None) -> Generator[Parsed, None, None]:
    """A streamed file's chunks read in a forked process, each with its items' keys worked out there
    (`Parsed.keys`), while this process stores the chunk before: the reading thread of `read_ahead`
    shares Python's lock with the writer, and reading a scored line costs about as much as storing
    it. The pipe holds one chunk at a time; a reading error comes out where the chunk would have;
    the caller stopping ends the process. Where the process cannot be started, the thread reads."""
    receiving, sending = multiprocessing.Pipe(duplex=False)
    reader = multiprocessing.get_context("fork").Process(  # type: ignore[attr-defined]
        target=_send_chunks, args=(sending, receiving, fmt, path, images), name="foil-import-reader", daemon=True
    )
    try:
        reader.start()
    except OSError as error:  # out of memory or processes: read here instead
        log.warning("reading %s in this process: no reading process (%s)", path, error)
        sending.close()
        receiving.close()
        yield from read_ahead(_read(fmt, path, None, images))
        return
    sending.close()  # the reader's end: closed here, a reader that dies ends the pipe
    try:
        yield from _chunks_of(_received(receiving, reader, path))
    finally:
        receiving.close()
        if reader.is_alive():
            reader.terminate()
        reader.join()


def _received(receiving: Connection, reader: Any, path: Path) -> Iterator[tuple[str, Any]]:
    """The reading process's messages as they come; its end without one is an error naming its exit code."""
    while True:
        try:
            yield pickle.loads(receiving.recv_bytes())
        except EOFError:
            reader.join(timeout=5)  # its exit code is known once it is waited for
            raise RuntimeError(
                f"the process reading {path} ended without a word (exit code {reader.exitcode}); nothing was stored"
            ) from None


def _chunks_of(messages: Iterable[tuple[str, Any]]) -> Iterator[Parsed]:
    """The chunks a reader (thread or process) hands on as ("chunk", chunk) messages, up to its
    ("end", None); its ("error", error) is raised here, where the chunk would have come."""
    for what, value in messages:
        if what == "end":
            return
        if what == "error":
            raise value
        yield value


def _send_chunks(
    sending: Connection, receiving: Connection, fmt: formats.Format, path: Path, images: Path | None
) -> None:
    """The reading process: `_read`'s chunks, with their keys, pickled down `sending`; then the end
    or the error that stopped the reading."""
    receiving.close()  # the importer's end, copied by the fork: held here, a killed importer would never be seen
    gc.disable()  # the process ends with the file; collecting a chunk's objects as they grow took a third of its time
    try:
        for chunk in _read(fmt, path, None, images):
            chunk.keys = [item.keys() for item in chunk.items]
            sending.send_bytes(pickle.dumps(("chunk", chunk)))
        message: tuple[str, Any] = ("end", None)
    except BaseException as error:  # handed to the importer, who raises it
        message = ("error", error)
    with contextlib.suppress(OSError):  # the importer has stopped listening
        sending.send_bytes(_as_sent(message, path))


def _as_sent(message: tuple[str, Any], path: Path) -> bytes:
    """`message` pickled, checked to come back as it went: an error that cannot be pickled or read
    back (one whose class needs other arguments) goes as its text."""
    try:
        payload = pickle.dumps(message)
        pickle.loads(payload)
    except Exception:
        payload = pickle.dumps(("error", RuntimeError(f"reading {path} failed: {message[1]!r}")))
    return payload


def read_ahead(chunks: Iterator[Parsed]) -> Generator[Parsed, None, None]:
    """The chunks, the next one read in a thread of its own while the caller stores the one before:
    SQLite and PostgreSQL do their part of a write outside Python's lock, so the reading overlaps
    it. A reading error comes out where the chunk would have; the caller stopping stops the reading."""
    handoff: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=1)
    stopped = threading.Event()

    def hand(what: str, value: Any) -> bool:
        while not stopped.is_set():
            try:
                handoff.put((what, value), timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for chunk in chunks:
                if not hand("chunk", chunk):
                    return
            hand("end", None)
        except BaseException as error:  # handed to the caller, who raises it
            hand("error", error)

    reader = threading.Thread(target=read, name="foil-import-reader", daemon=True)
    reader.start()
    try:
        yield from _chunks_of(iter(handoff.get, None))  # the reader hands on until its end or error
    finally:
        stopped.set()
        reader.join()


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
    parsed: Parsed | Iterable[Parsed],
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

    `parsed` is what a reader read, whole or as consecutive chunks of one file (a streaming
    reader's, `Format.read_chunks`): each chunk is stored before the next is read, so memory holds
    one chunk, never the file. `source_format` is the import format `path` was read as (the import
    log's); the dataset records the chunks' `source_format`, the format its items follow (``hf``
    reads SugarCrepe++)."""
    chunks = iter([parsed] if isinstance(parsed, Parsed) else parsed)
    first = next(chunks)
    dataset_name = name or first.default_name
    _check_image_paths(first)
    root = _image_root(first, images, embedded_root)
    with store.transaction(db), store.bulk_write_cache(db):
        dataset_id = store.ensure_dataset(db, dataset_name, first.source_format, root)
        tally = _Tally(store.category_counts(db, dataset_id), known=store.known_image_paths(db, dataset_id))
        writer = store.ItemWriter(db, dataset_id)
        for chunk in itertools.chain([first], chunks):
            if chunk is not first:
                _check_image_paths(chunk)
                _image_root(chunk, images, embedded_root)
            tally.warnings += chunk.warnings  # the reader's
            stored = writer.write(chunk.items, chunk.keys)
            tally.count(chunk, stored)
            _record_images(db, dataset_id, chunk, root, progress, tally)
            tally.run = _store_run(db, dataset_id, chunk, stored, run) or tally.run
            _store_scored_runs(db, dataset_name, dataset_id, chunk, stored, run, tally)
        tally.warnings += tally.image_warnings + _left_runs(dataset_name, _first_file(first, path), tally)
        differences = _differences(db, dataset_id, _first_file(first, path), tally)
        report = ImportReport(
            dataset=dataset_name,
            run=tally.run,
            n_items=tally.n_items,
            n_new_items=tally.n_new_items,
            by_category=dict(sorted(tally.by_category.items())),
            missing_images=tally.missing_images,
            warnings=[asdict(w) for w in tally.warnings + differences],
            runs=tally.runs,
        )
        store.log_import(
            db,
            dataset_id,
            source_format=source_format,
            path=path,
            n_items=report.n_items,
            n_new_items=report.n_new_items,
            run=tally.run,
        )
    store.settle_items(db, report.n_items)
    store.keep_run_copies(db, dataset_id)
    return report


@dataclass
class _Tally:
    """What an import has stored so far, chunk after chunk: the report's figures and what the end
    of the import still needs (the items that were new where the dataset had their category)."""

    before: dict[str, int]  # the dataset's items per category before this import
    run: str | None = None  # the run the chunks' outcomes were stored as
    n_items: int = 0
    n_new_items: int = 0
    by_category: Counter[str] = field(default_factory=Counter)
    missing_images: int = 0
    known: dict[str, str] = field(default_factory=dict)  # the dataset's images before: path -> status
    probed: set[str] = field(default_factory=set)  # image references seen
    warnings: list[ImportWarning] = field(default_factory=list)
    runs: dict[str, int] = field(default_factory=dict)  # run carried with scores -> items scored
    carried: set[str] = field(default_factory=set)  # the runs the chunks carried with scores
    created_runs: set[str] = field(default_factory=set)  # runs this import created
    held: dict[str, bool] = field(default_factory=dict)  # a run stored before: whether it holds the file's scores
    image_warnings: list[ImportWarning] = field(default_factory=list)
    added: list[ImportWarning] = field(default_factory=list)  # items new to a category the dataset had
    added_beyond: int = 0  # such items past those listed
    in_file: set[int] = field(default_factory=set)  # the item ids of those categories in the file

    def count(self, chunk: Parsed, stored: list[tuple[int, bool]]) -> None:
        self.n_items += len(stored)
        self.n_new_items += sum(new for _, new in stored)
        self.by_category.update(item.category for item in chunk.items)
        if not self.before:  # a new dataset: nothing to compare with (and a million items to skip)
            return
        for (item_id, new), item, (file, row) in zip(stored, chunk.items, chunk.origins):
            if item.category not in self.before:
                continue
            self.in_file.add(item_id)
            if new and len(self.added) < MAX_LISTED_DIFFERENCES:
                self.added.append(
                    ImportWarning(
                        file,
                        row,
                        f"item not in the dataset before this import, added: {item.category} {list(item.captions)}",
                    )
                )
            elif new:
                self.added_beyond += 1


def _check_image_paths(parsed: Parsed) -> None:
    """Refuse an image path that would leave its image root, naming the first row that gives it
    (each distinct path checked once: a million items name a few thousand images)."""
    first_origin: dict[str, tuple[str, int | str]] = {}
    for item, origin in zip(parsed.items, parsed.origins):
        for reference in _image_references(item.images, item.meta):
            first_origin.setdefault(reference, origin)
    for reference, (file, row) in first_origin.items():
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
    db: sqlite_utils.Database,
    dataset_id: int,
    chunk: Parsed,
    root: Path | None,
    progress: Progress | None,
    tally: _Tally,
) -> None:
    """Probe every image the chunk names that no chunk before it named, once; count those not usable."""
    named = {ref for item in chunk.items for ref in _image_references(item.images, item.meta)}
    references = sorted(named - tally.probed)
    tally.probed.update(references)
    infos = []
    for done, reference in enumerate(references, start=len(tally.probed) - len(references) + 1):
        status = tally.known.get(reference)
        if status != "ok" or root is None:
            try:
                info = probe_image(root, reference)
            except UnsafeImagePathError as error:
                file, row = _origin_of(chunk, reference)
                raise BadInputError(file, row, str(error)) from None
            infos.append(info)
            status = info.status
        tally.missing_images += status != "ok"
        if progress and (done % 500 == 0 or done == len(tally.probed)):
            progress(done, len(tally.probed))
    store.record_images(db, dataset_id, infos)
    for info in infos:
        if info.status == "too_large":
            size = f"{info.pixels:,} pixels" if info.pixels else "more pixels than allowed"
            tally.image_warnings.append(
                ImportWarning(
                    info.path,
                    None,
                    f"image not used: {size}, over the limit of {max_image_pixels():,} pixels; "
                    "raise it with FOIL_MAX_IMAGE_PIXELS",
                )
            )


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
    chunk: Parsed,
    stored: list[tuple[int, bool]],
    run: str | None,
    tally: _Tally,
) -> None:
    """Store each run the chunk carries with its scores (`Parsed.scored_runs`: a JSONL export's) as a
    run of the dataset again (`run`, where given, names the file's one run). A run of that name
    already on the dataset before this import keeps what it has: the file's scores of it are left,
    with a warning, unless they are the ones it holds. Counts run -> items scored in the tally."""
    runs = chunk.scored_runs
    tally.carried |= set(runs)
    if run is not None and len(tally.carried) > 1:
        raise BadInputError(
            chunk.origins[0][0],
            None,
            f"carries the scores of {len(tally.carried)} runs ({', '.join(sorted(tally.carried))}); a run name (--run)"
            " names one: import it without one to keep theirs",
        )
    for carried_name, by_index in runs.items():
        name, (file, row) = run or carried_name, chunk.origins[min(by_index)]
        try:
            store.check_name("run", name)
        except store.InvalidNameError as error:
            raise BadInputError(file, row, f"'results': {error}") from None
        scores = {stored[index][0]: value for index, value in by_index.items()}
        try:
            there = store.get_run(db, dataset, name)
        except store.NotFoundError:
            there = None
        if there is None or name in tally.created_runs:
            run_id = store.ensure_run(db, dataset_id, name, run_type="scores", meta={"imported": True})
            store.put_scores(db, run_id, scores.items())
            tally.created_runs.add(name)
        else:  # a run of that name before this import: kept if the file's scores are the ones it holds
            held = there["run_type"] == "scores" and _holds(store.run_columns(db, int(there["id"])), scores)
            tally.held[name] = tally.held.get(name, True) and held
        tally.runs[name] = tally.runs.get(name, 0) + len(scores)


def _left_runs(dataset: str, file: str, tally: _Tally) -> list[ImportWarning]:
    """Warn of each run the file carried whose name the dataset held before with other scores, and
    take it out of the runs stored (the same scores are the same import again: `attach_images`)."""
    warnings = []
    for name, held in tally.held.items():
        if held:
            continue
        warnings.append(
            ImportWarning(
                file,
                None,
                f"the scores of run {name!r} on {tally.runs.pop(name)} item(s) left out: {dataset} has a run of that "
                "name already, with other scores; delete it first (runs delete), or import into another dataset "
                "(--name)",
            )
        )
    return warnings


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


def _first_file(parsed: Parsed, path: str) -> str:
    """The file a warning about the whole import names: the first item's (a folder's file), else the path."""
    return str(parsed.origins[0][0]) if parsed.origins else path


def _differences(db: sqlite_utils.Database, dataset_id: int, path: str, tally: _Tally) -> list[ImportWarning]:
    """Name the items this file adds to, or lacks from, a dataset that already had them."""
    categories = sorted(set(tally.by_category) & set(tally.before))
    if not categories:
        return []
    absent = {i: s for i, s in store.item_ids_by_category(db, dataset_id, categories).items() if i not in tally.in_file}
    warnings = tally.added + [
        ImportWarning(path, None, f"dataset item {source_id} (id {item_id}) is not in this file")
        for item_id, source_id in sorted(absent.items())
    ]
    extra = tally.added_beyond + len(warnings) - MAX_LISTED_DIFFERENCES
    if extra > 0:
        warnings = warnings[:MAX_LISTED_DIFFERENCES] + [ImportWarning(path, None, f"... and {extra} more differences")]
    return warnings
