"""Score every item of a dataset with one model: each distinct image and caption encoded once.

Images are keyed by content hash (plus the ARO crop), captions by their text, and embeddings are
cached in the store per model identity: a re-run encodes nothing, an interrupted run resumes
from the last finished batch. Similarities are then read off the cached vectors for each item
kind (see ``item_scores``). The next batch of images is decoded and preprocessed on a loader
thread while the current one is encoded (``prepared_ahead``: PIL's decoding releases the GIL);
batches, their order and so the embeddings are those of decoding in turn.

What encodes the batches is an ``Encoder``: the model loaded in this process (``LocalEncoder``), or
actors on a Ray cluster each holding it (``analysis.cluster``); either way the driver stores each
batch's vectors as it arrives.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
import sqlite_utils
from PIL import Image, ImageOps

from foil_studio.analysis.model_spec import ModelSpec
from foil_studio.analysis.models import (
    LoadedModel,
    encode_images,
    encode_texts,
    load_model,
    preprocess_images,
    token_lengths,
)
from foil_studio.analysis.scorable import require_scorable
from foil_studio.data import store
from foil_studio.data.images import resolve_image
from foil_studio.data.item_kinds import item_kind

Progress = Callable[[str, int, int], None]  # (stage, done, total)
Chunk = TypeVar("Chunk")
Prepared = TypeVar("Prepared")
ImageSource = tuple[str, list[float] | None]  # an image's path under the dataset's root, and its crop
# (the batch's place in the list given, its vectors), as each batch is done
Encoded = Generator[tuple[int, np.ndarray], None, None]


class Encoder(Protocol):
    """What scores a dataset with an open_clip model: its identity, spec and stamp, and the batches
    of images and captions it encodes (in any order: each comes back with its place)."""

    @property
    def identity(self) -> str: ...

    @property
    def spec(self) -> ModelSpec: ...

    @property
    def precision_reason(self) -> str: ...

    def stamp(self) -> dict[str, Any]: ...

    def image_batches(self, root: Path | None, batches: list[list[ImageSource]]) -> Encoded: ...

    def text_batches(self, batches: list[list[str]]) -> Encoded: ...

    def token_lengths(self, texts: list[str]) -> list[int]: ...


class LocalEncoder:
    """An `Encoder` on the model loaded in this process: the next batch of images decoded and
    preprocessed on a loader thread while this one is encoded."""

    def __init__(self, loaded: LoadedModel) -> None:
        self.loaded = loaded

    @property
    def identity(self) -> str:
        return self.loaded.identity

    @property
    def spec(self) -> ModelSpec:
        return self.loaded.spec

    @property
    def precision_reason(self) -> str:
        return self.loaded.precision_reason

    def stamp(self) -> dict[str, Any]:
        return self.loaded.stamp()

    def image_batches(self, root: Path | None, batches: list[list[ImageSource]]) -> Encoded:
        ready = prepared_ahead(
            batches, lambda batch: preprocess_images(self.loaded, [load_image(root, *s) for s in batch])
        )
        with closing(ready):
            for index, pixels in enumerate(ready):
                yield index, encode_images(self.loaded, pixels)

    def text_batches(self, batches: list[list[str]]) -> Encoded:
        for index, batch in enumerate(batches):
            yield index, encode_texts(self.loaded, batch)

    def token_lengths(self, texts: list[str]) -> list[int]:
        return token_lengths(self.loaded, texts)


@dataclass(frozen=True)
class ScoreReport:
    """What `./foil score --json` prints."""

    run: str
    dataset: str
    n_items: int
    n_images_encoded: int
    n_texts_encoded: int
    cache_hits: int
    seconds: float
    n_skipped: int  # items whose image files are missing or unreadable

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return asdict(self)


@dataclass(frozen=True)
class ItemPlan:
    """The content keys of one item's images and captions, in the item's order."""

    item_id: int
    kind: str
    image_keys: tuple[str, ...]
    text_keys: tuple[str, ...]


def text_key(caption: str) -> str:
    """Cache key of a caption: the exact text the model reads."""
    return hashlib.sha256(caption.encode()).hexdigest()


def image_key(sha256: str, bbox: list[float] | None) -> str:
    """Cache key of an image: its content hash, plus the crop when one is applied."""
    return sha256 if not bbox else f"{sha256}:crop={','.join(f'{v:g}' for v in bbox)}"


def score_dataset(
    db: sqlite_utils.Database,
    dataset: str,
    loaded: LoadedModel | Encoder,
    *,
    run: str | None = None,
    batch_size: int = 64,
    limit: int | None = None,
    progress: Progress | None = None,
) -> ScoreReport:
    """Score the dataset's items with `loaded` (a model loaded here, or any `Encoder`), store them
    as a run, report what was encoded (NothingToScoreError, before anything is stored, when no item
    has its images)."""
    started = time.perf_counter()
    encoder = LocalEncoder(loaded) if isinstance(loaded, LoadedModel) else loaded
    require_scorable(db, dataset, limit=limit)
    row = store.get_dataset(db, dataset)
    root = Path(row["image_root"]) if row["image_root"] else None
    items = store.list_items(db, row["id"], limit=limit if limit is not None else 1 << 62)
    hashes = store.image_hashes(db, row["id"])
    plans, image_sources, text_sources = plan_items(items, hashes)
    model_id = encoder.identity
    image_vectors, image_hits, n_images = _embed(
        db, model_id, "image", image_sources, lambda batches: encoder.image_batches(root, batches), batch_size, progress
    )
    text_vectors, text_hits, n_texts = _embed(
        db,
        model_id,
        "text",
        text_sources,
        encoder.text_batches,
        batch_size,
        progress,
        order=lambda keys: _by_token_length(encoder, keys, text_sources),
    )
    scores = [(plan.item_id, item_scores(plan, image_vectors, text_vectors)) for plan in plans]
    name = run or encoder.spec.run_name
    with store.transaction(db):
        run_id = store.ensure_run(
            db, row["id"], name, run_type="scores", model=encoder.spec.arch, pretrained=encoder.spec.pretrained
        )
        store.put_scores(db, run_id, scores)
        store.update_run_meta(db, run_id, {**encoder.stamp(), "batch_size": batch_size})
    store.keep_run_copies(db, row["id"])
    return ScoreReport(
        run=name,
        dataset=dataset,
        n_items=len(scores),
        n_images_encoded=n_images,
        n_texts_encoded=n_texts,
        cache_hits=image_hits + text_hits,
        seconds=time.perf_counter() - started,
        n_skipped=len(items) - len(plans),
    )


def plan_items(
    items: list[store.ItemRow], hashes: dict[str, str]
) -> tuple[list[ItemPlan], dict[str, tuple[str, list[float] | None]], dict[str, str]]:
    """Content keys per item, plus the distinct images (path, crop) and captions to encode."""
    plans: list[ItemPlan] = []
    images: dict[str, tuple[str, list[float] | None]] = {}
    texts: dict[str, str] = {}
    for item in items:
        bbox = item["meta"].get("bbox")
        if not item["images"] or any(path not in hashes for path in item["images"]):
            continue
        image_keys = tuple(image_key(hashes[path], bbox) for path in item["images"])
        images.update({key: (path, bbox) for key, path in zip(image_keys, item["images"])})
        text_keys = tuple(text_key(caption) for caption in item["captions"])
        texts.update(zip(text_keys, item["captions"]))
        plans.append(ItemPlan(item["id"], item["kind"], image_keys, text_keys))
    return plans, images, texts


def item_scores(plan: ItemPlan, images: dict[str, np.ndarray], texts: dict[str, np.ndarray]) -> Any:
    """The similarities an item kind needs (cosine of normalised embeddings).

    pair / triple / retrieval: ``[s(caption_k, I)]``; group: ``[[s(C0,I0), s(C1,I0)],
    [s(C0,I1), s(C1,I1)]]``; candidates: ``[s(caption, img_k)]``; paraphrase: the image scores,
    then the text encoder's cosines between captions.
    """
    kind = item_kind(plan.kind)
    text_matrix = np.stack([texts[k] for k in plan.text_keys])
    image_matrix = np.stack([images[k] for k in plan.image_keys])
    scores = kind.scores_from(image_matrix @ text_matrix.T)  # rows: images, columns: captions
    return scores if kind.text_scores_from is None else [*scores, *kind.text_scores_from(text_matrix @ text_matrix.T)]


def load_image(root: Path | None, path: str, bbox: list[float] | None = None) -> Image.Image:
    """An RGB image, EXIF-rotated, cropped to the ARO bounding box (x, y, w, h) when given."""
    if root is None:
        raise FileNotFoundError(f"no image root for {path}")
    with Image.open(resolve_image(root, path)) as raw:
        image = ImageOps.exif_transpose(raw).convert("RGB")
    if bbox:
        x, y, w, h = bbox
        image = image.crop((x, y, x + w, y + h))
    return image


def _by_token_length(encoder: Encoder, keys: list[str], texts: dict[str, str]) -> list[str]:
    """Caption keys ordered by token count, so that each trimmed batch wastes little padding."""
    lengths = encoder.token_lengths([texts[k] for k in keys]) if keys else []
    return [keys[i] for i in np.argsort(lengths, kind="stable")]


def _embed(
    db: sqlite_utils.Database,
    model_id: str,
    modality: str,
    sources: dict[str, Any],
    encode_batches: Callable[[list[list[Any]]], Encoded],
    batch_size: int,
    progress: Progress | None,
    order: Callable[[list[str]], list[str]] | None = None,
) -> tuple[dict[str, np.ndarray], int, int]:
    """Vectors for every key: cached ones read, the rest encoded in batches (in `order`) and each
    batch cached as it comes back, so that a run stopped anywhere resumes with what is missing."""
    cached = store.get_embeddings(db, model_id, modality, list(sources))
    vectors = {key: np.frombuffer(blob, dtype=np.float32) for key, blob in cached.items()}
    missing = [key for key in sources if key not in vectors]
    if order is not None:
        missing = order(missing)  # only what is encoded: a warm run tokenizes nothing
    batches = [missing[start : start + batch_size] for start in range(0, len(missing), batch_size)]
    done = 0
    encoded_batches = encode_batches([[sources[k] for k in keys] for keys in batches])
    with closing(encoded_batches):  # a generator: its loader thread (or its actors' work) stops with it
        for index, encoded in encoded_batches:
            keys, encoded = batches[index], encoded.astype(np.float32)
            store.put_embeddings(db, model_id, modality, [(k, v.tobytes()) for k, v in zip(keys, encoded)])
            vectors.update(zip(keys, encoded))
            done += len(keys)
            if progress:
                progress(f"{modality}s", done, len(missing))
    return vectors, len(cached), len(missing)


def prepared_ahead(chunks: Sequence[Chunk], prepare: Callable[[Chunk], Prepared]) -> Generator[Prepared, None, None]:
    """`prepare(chunk)` of each chunk in order, the next chunk's made on a loader thread while the
    caller works on this one (one chunk ahead: memory for two). An error raised preparing a chunk
    is raised, unchanged, when the caller reaches that chunk, as preparing in turn would raise it."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="foil-decode") as pool:
        pending: Future[Prepared] | None = pool.submit(prepare, chunks[0]) if chunks else None
        try:
            for index in range(len(chunks)):
                assert pending is not None
                current = pending.result()
                pending = pool.submit(prepare, chunks[index + 1]) if index + 1 < len(chunks) else None
                yield current
        finally:
            if pending is not None:
                pending.cancel()  # the caller stopped: the chunk not yet started is not prepared


def score_with_model(
    db: sqlite_utils.Database,
    dataset: str,
    spec: ModelSpec,
    *,
    device: str = "auto",
    cache_dir: str | None = None,
    run: str | None = None,
    batch_size: int = 64,
    limit: int | None = None,
    progress: Progress | None = None,
    notify: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Load the model `spec` names (precision `auto` resolved) and score the dataset: the report of
    `./foil score --json`, with the precision it ran in and why. Items without image files are
    said through `notify` before the model loads, and refused when no item has them. (On a Ray
    cluster: `analysis.cluster.score_on_cluster`.)"""
    say_skipped(db, dataset, limit, notify)
    loaded = load_model(spec, device=device, cache_dir=cache_dir)
    return scored_report(db, dataset, loaded, run=run, batch_size=batch_size, limit=limit, progress=progress)


def say_skipped(
    db: sqlite_utils.Database, dataset: str, limit: int | None, notify: Callable[[str], None] | None
) -> None:
    """Say through `notify` which items have no image files, before any model loads (and refuse
    a dataset where none has them)."""
    if (skipped := require_scorable(db, dataset, limit=limit).skipped_sentence()) and notify:
        notify(skipped)


def scored_report(
    db: sqlite_utils.Database,
    dataset: str,
    encoder: LoadedModel | Encoder,
    *,
    run: str | None,
    batch_size: int,
    limit: int | None,
    progress: Progress | None,
) -> dict[str, Any]:
    """Score the dataset with `encoder`: the report `foil score --json` prints, with the precision
    it ran in and why."""
    report = score_dataset(db, dataset, encoder, run=run, batch_size=batch_size, limit=limit, progress=progress)
    return {**report.to_dict(), "precision": encoder.spec.precision, "precision_reason": encoder.precision_reason}


def score_demo(db: sqlite_utils.Database, datasets: list[str], progress: Progress | None = None) -> list[ScoreReport]:
    """Score the demo datasets with the shipped demo model (skipped if its checkpoint is absent)."""
    from foil_studio.analysis.models import DEMO_CHECKPOINT, DEMO_RUN, demo_model_spec, load_model

    if not DEMO_CHECKPOINT.is_file():
        return []
    loaded = load_model(demo_model_spec(), device="cpu")
    return [score_dataset(db, name, loaded, run=DEMO_RUN, progress=progress) for name in datasets]
