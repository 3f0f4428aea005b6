"""Score a dataset with a cross-encoder family: each distinct image and caption prepared once,
(image, caption) pairs scored in batches and cached per pair, so a re-run scores nothing.

Each item's image-by-caption matrix is filled from the pair scores and read by its item kind
(``ItemKind.scores_from``), exactly as open_clip's cosine matrix is in ``analysis.scoring``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import sqlite_utils
import torch
from PIL import Image

from foil_studio.analysis.model_files import folder_digests
from foil_studio.analysis.model_spec import ModelUnavailableError
from foil_studio.analysis.models import pick_device, resolve_precision
from foil_studio.analysis.scorable import require_scorable
from foil_studio.analysis.scorers import scorer_family
from foil_studio.analysis.scorers.base import LoadedFamily, weights_folder
from foil_studio.analysis.scorers.record import PairScorer, ScorerFamily
from foil_studio.analysis.scoring import (
    ImageSource,
    ItemPlan,
    Progress,
    ScoreReport,
    load_image,
    plan_items,
    prepared_ahead,
)
from foil_studio.data import hub, store
from foil_studio.data.item_kinds import item_kind

PAIR = "pair"  # the embeddings cache's modality for a cross-encoder's pair scores


class NoTextScoresError(store.StoreError):
    """Items whose item kind also needs caption-to-caption similarities, which a cross-encoder lacks."""


@dataclass(frozen=True)
class PairWork:
    """The pairs still to score, grouped by image: image key -> caption keys."""

    by_image: dict[str, list[str]]

    @property
    def n_pairs(self) -> int:
        """How many pairs are to be scored."""
        return sum(len(texts) for texts in self.by_image.values())

    def chunks(self, image_sources: dict[str, ImageSource], text_sources: dict[str, str], size: int) -> list[PairChunk]:
        """The work in chunks of `size` images, each with the sources of its images and captions."""
        keys = list(self.by_image)
        return [
            PairChunk(
                {key: (image_sources[key], self.by_image[key]) for key in part},
                {text: text_sources[text] for key in part for text in self.by_image[key]},
            )
            for part in (keys[start : start + size] for start in range(0, len(keys), size))
        ]


def load_family(family: ScorerFamily, ref: str, precision: str = "auto", device: str = "auto") -> LoadedFamily:
    """Load `ref` (a save_pretrained folder or a cached hub name) with `family`, in the precision
    `auto` resolves to on the device."""
    check_pair_family(family, precision)
    target = pick_device(device)
    chosen, reason = resolve_precision(precision, target)
    weights, files = folder_digests(weights_folder(ref))
    load = family.loader()
    try:
        scorer = load(ref, chosen, target)
    except (ModelUnavailableError, torch.OutOfMemoryError):
        raise  # said in one line already; too little memory is not a wrong folder
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as error:  # the library's, often many lines
        raise ModelUnavailableError(not_a_model(family, ref, error)) from error
    return LoadedFamily(family, ref, scorer, chosen, reason, target, weights, files)


def check_pair_family(family: ScorerFamily, precision: str) -> None:
    """ValueError unless `family` scores pairs and in `precision`."""
    if not family.scores_pairs:
        raise ValueError(f"{family.name} models load through analysis.models, not as a pair scorer")
    if precision not in family.precisions:
        raise ValueError(f"precision {precision!r}; expected one of {family.precisions}")


def check_family_run(
    db: sqlite_utils.Database,
    dataset: str,
    family: str,
    precision: str,
    limit: int | None,
    notify: Callable[[str], None] | None,
) -> None:
    """What a family's run checks before its model loads for nothing (here or on a cluster's actors):
    the dataset scorable (the items it skips said to `notify`), no item kind that needs caption-to-caption
    scores (the dataset's kinds, not its items planned twice), the family known, the precision its own."""
    if (skipped := require_scorable(db, dataset, limit=limit).skipped_sentence()) and notify:
        notify(skipped)
    refuse_text_kinds(store.item_kind_counts(db, store.get_dataset(db, dataset)["id"]))
    check_pair_family(scorer_family(family), precision)


def not_a_model(family: ScorerFamily, ref: str, error: Exception) -> str:
    """One line for a folder (or cached name) `family` cannot load: the folder, the library's reason
    in brief, and what was expected. The page and `foil score` say the same (issue 55: the page
    showed transformers' own message, which names neither the family nor what a folder holds).

    >>> from foil_studio.analysis.scorers.built_in import BLIP_ITM
    >>> not_a_model(BLIP_ITM, "/data/x", OSError("Error no file named model.safetensors found in /data/x. More."))
    "/data/x is not a blip-itm model (Error no file named model.safetensors found in /data/x): expected a folder made by save_pretrained holding the model and its processor (config.json, the weights, the processor's files), as Salesforce/blip-itm-base-coco is saved, or its name in the Hugging Face cache"
    """  # noqa: E501
    said = hub.error_line(error).split(". ")[0].rstrip(".")
    example = family.example.split(":", 1)[-1]
    return (
        f"{ref} is not a {family.name} model ({said}): expected a folder made by save_pretrained holding the model "
        f"and its processor (config.json, the weights, the processor's files), as {example} is saved, or its name "
        "in the Hugging Face cache"
    )


def pair_key(image: str, text: str) -> str:
    """Cache key of one (image, caption) pair."""
    return f"{image}|{text}"


class PairRunner(Protocol):
    """Where a run's pairs are scored: `LocalPairs` (a model loaded here) or a cluster's actors
    (`analysis.cluster`); the run records the same either way."""

    identity: str
    run_name: str
    model: str

    def stamp(self) -> dict[str, Any]: ...

    def facts(self) -> dict[str, str]:
        """What `foil score --json` reports of the model: family, rule, precision and why."""
        ...

    def scored_chunks(self, root: Path | None, chunks: list[PairChunk], batch_size: int) -> Iterator[dict[str, float]]:
        """Each chunk's pair scores (pair key -> score), in parts as they are scored."""
        ...


@dataclass(frozen=True)
class PairChunk:
    """A few images' pairs to score, with what is needed to read them: image key -> (its source, its
    captions' keys), and caption key -> its text."""

    images: dict[str, tuple[ImageSource, list[str]]]
    texts: dict[str, str]


class LocalPairs:
    """A `PairRunner` on a model loaded in this process: each chunk's images decoded ahead on
    `scoring.prepared_ahead`'s loader thread while the one before is scored."""

    def __init__(self, loaded: LoadedFamily) -> None:
        self.loaded = loaded
        self.identity, self.run_name = loaded.identity, loaded.run_name
        self.model = f"{loaded.family.name}:{loaded.ref}"

    def stamp(self) -> dict[str, Any]:
        return self.loaded.stamp()

    def facts(self) -> dict[str, str]:
        loaded = self.loaded
        return {
            "family": loaded.family.name,
            "rule": loaded.family.rule,
            "precision": loaded.precision,
            "precision_reason": loaded.precision_reason,
        }

    def scored_chunks(self, root: Path | None, chunks: list[PairChunk], batch_size: int) -> Iterator[dict[str, float]]:
        def decode(chunk: PairChunk) -> list[Image.Image]:
            return [load_image(root, *source) for source, _ in chunk.images.values()]

        with closing(prepared_ahead(chunks, decode)) as decoded_ahead:
            for chunk, decoded in zip(chunks, decoded_ahead):
                yield from chunk_scores(self.loaded.scorer, chunk, decoded, batch_size)


def chunk_scores(
    scorer: PairScorer, chunk: PairChunk, decoded: list[Image.Image], batch_size: int
) -> Iterator[dict[str, float]]:
    """A chunk's pair scores, `batch_size` pairs at a time: its images and captions prepared once."""
    images = dict(zip(chunk.images, scorer.prepare_images(decoded)))
    texts = _prepare_texts(scorer, list(chunk.texts), chunk.texts, batch_size)
    pairs = [(image, text) for image, (_, captions) in chunk.images.items() for text in captions]
    for start in range(0, len(pairs), batch_size):
        batch = pairs[start : start + batch_size]
        values = scorer.score_pairs([images[i] for i, _ in batch], [texts[t] for _, t in batch])
        yield {pair_key(i, t): float(v) for (i, t), v in zip(batch, values)}


def score_dataset_pairs(
    db: sqlite_utils.Database,
    dataset: str,
    runner: LoadedFamily | PairRunner,
    *,
    run: str | None = None,
    batch_size: int = 64,
    limit: int | None = None,
    progress: Progress | None = None,
) -> ScoreReport:
    """Score the dataset's items with a cross-encoder (loaded here, or a `PairRunner`), store them as
    a run, report what was scored. Each part of the scores is stored as it comes back, so a run
    stopped anywhere resumes with only the pairs still missing."""
    started = time.perf_counter()
    runner = LocalPairs(runner) if isinstance(runner, LoadedFamily) else runner
    require_scorable(db, dataset, limit=limit)
    row, items, (plans, image_sources, text_sources) = dataset_plans(db, dataset, limit)
    refuse_text_scores(plans)
    cached = cached_pairs(db, runner.identity, plans)
    work = pairs_to_score(plans, cached)
    root = Path(row["image_root"]) if row["image_root"] else None
    chunks = work.chunks(image_sources, text_sources, batch_size)
    fresh: dict[str, float] = {}
    for part in runner.scored_chunks(root, chunks, batch_size):
        store.put_embeddings(db, runner.identity, PAIR, [(k, np.float32(v).tobytes()) for k, v in part.items()])
        fresh.update(part)
        if progress:
            progress("pairs", len(fresh), work.n_pairs)
    pair_scores = {**cached, **fresh}
    scores = [(plan.item_id, item_scores(plan, pair_scores)) for plan in plans]
    name = run or runner.run_name
    with store.transaction(db):
        run_id = store.ensure_run(db, row["id"], name, run_type="scores", model=runner.model)
        store.put_scores(db, run_id, scores)
        store.update_run_meta(db, run_id, {**runner.stamp(), "batch_size": batch_size})
    store.keep_run_copies(db, row["id"])
    return ScoreReport(
        run=name,
        dataset=dataset,
        n_items=len(scores),
        n_images_encoded=len(work.by_image),
        n_texts_encoded=sum(len(chunk.texts) for chunk in chunks),
        cache_hits=len(cached),
        seconds=time.perf_counter() - started,
        n_skipped=len(items) - len(plans),
    )


def dataset_plans(
    db: sqlite_utils.Database, dataset: str, limit: int | None
) -> tuple[store.DatasetRow, list[store.ItemRow], tuple[list[ItemPlan], dict[str, Any], dict[str, str]]]:
    """The dataset's row, its (first `limit`) items, and their plans with the images and captions to read."""
    row = store.get_dataset(db, dataset)
    items = store.list_items(db, row["id"], limit=limit if limit is not None else 1 << 62)
    return row, items, plan_items(items, store.image_hashes(db, row["id"]))


def refuse_text_scores(plans: list[ItemPlan]) -> None:
    """NoTextScoresError when an item kind reads caption-to-caption cosines (SugarCrepe++'s TOT)."""
    refuse_text_kinds(plan.kind for plan in plans)


def refuse_text_kinds(kinds: Iterable[str]) -> None:
    """`refuse_text_scores` for item kinds named directly (a dataset's, read off the store)."""
    kinds = sorted({name for name in kinds if item_kind(name).text_scores_from is not None})
    if kinds:
        raise NoTextScoresError(
            f"items of kind {', '.join(kinds)} also need caption-to-caption similarities, which a cross-encoder "
            "does not give; score them with an open_clip model"
        )


def cached_pairs(db: sqlite_utils.Database, identity: str, plans: list[ItemPlan]) -> dict[str, float]:
    """The pair scores of this model already in the store."""
    keys = list(dict.fromkeys(pair_key(i, t) for plan in plans for i in plan.image_keys for t in plan.text_keys))
    found = store.get_embeddings(db, identity, PAIR, keys)
    return {key: float(np.frombuffer(blob, dtype=np.float32)[0]) for key, blob in found.items()}


def pairs_to_score(plans: list[ItemPlan], cached: dict[str, float]) -> PairWork:
    """Every (image, caption) pair the items need and the cache lacks, grouped by image."""
    by_image: dict[str, dict[str, None]] = {}
    for plan in plans:
        for image in plan.image_keys:
            missing = (text for text in plan.text_keys if pair_key(image, text) not in cached)
            by_image.setdefault(image, {}).update(dict.fromkeys(missing))
    return PairWork({image: list(texts) for image, texts in by_image.items() if texts})


def item_scores(plan: ItemPlan, pair_scores: dict[str, float]) -> Any:
    """The item's scores as its item kind reads them off its image-by-caption matrix."""
    matrix = np.array([[pair_scores[pair_key(i, t)] for t in plan.text_keys] for i in plan.image_keys])
    return item_kind(plan.kind).scores_from(matrix)


def _prepare_texts(scorer: Any, keys: list[str], sources: dict[str, str], batch_size: int) -> dict[str, Any]:
    """Prepared caption states by key, in batches."""
    states: dict[str, Any] = {}
    for start in range(0, len(keys), batch_size):
        batch = keys[start : start + batch_size]
        states.update(zip(batch, scorer.prepare_texts([sources[k] for k in batch])))
    return states


def score_with_family(
    db: sqlite_utils.Database,
    dataset: str,
    family: str,
    ref: str,
    *,
    precision: str = "auto",
    device: str = "auto",
    run: str | None = None,
    batch_size: int = 64,
    limit: int | None = None,
    progress: Progress | None = None,
    notify: Callable[[str], None] | None = None,
    load: Callable[[ScorerFamily, str, str, str], LoadedFamily] = load_family,
) -> dict[str, Any]:
    """Load `ref` with family `family` and score the dataset: the report of `./foil score --json`,
    with the family, its rule and the precision it ran in and why. `load` is `load_family` or one
    that keeps loaded models (the app's)."""
    check_family_run(db, dataset, family, precision, limit, notify)
    runner = LocalPairs(load(scorer_family(family), ref, precision, device))
    report = score_dataset_pairs(db, dataset, runner, run=run, batch_size=batch_size, limit=limit, progress=progress)
    return {**report.to_dict(), **runner.facts()}
