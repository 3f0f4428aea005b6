"""Score a dataset with a cross-encoder family: each distinct image and caption prepared once,
(image, caption) pairs scored in batches and cached per pair, so a re-run scores nothing.

Each item's image-by-caption matrix is filled from the pair scores and read by its item kind
(``ItemKind.scores_from``), exactly as open_clip's cosine matrix is in ``analysis.scoring``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
from foil_studio.analysis.scorers.record import ScorerFamily
from foil_studio.analysis.scoring import (
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


def load_family(family: ScorerFamily, ref: str, precision: str = "auto", device: str = "auto") -> LoadedFamily:
    """Load `ref` (a save_pretrained folder or a cached hub name) with `family`, in the precision
    `auto` resolves to on the device."""
    if not family.scores_pairs:
        raise ValueError(f"{family.name} models load through analysis.models, not as a pair scorer")
    if precision not in family.precisions:
        raise ValueError(f"precision {precision!r}; expected one of {family.precisions}")
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


def score_dataset_pairs(
    db: sqlite_utils.Database,
    dataset: str,
    loaded: LoadedFamily,
    *,
    run: str | None = None,
    batch_size: int = 64,
    limit: int | None = None,
    progress: Progress | None = None,
) -> ScoreReport:
    """Score the dataset's items with a cross-encoder, store them as a run, report what was scored."""
    started = time.perf_counter()
    require_scorable(db, dataset, limit=limit)
    row, items, (plans, image_sources, text_sources) = dataset_plans(db, dataset, limit)
    refuse_text_scores(plans)
    cached = cached_pairs(db, loaded.identity, plans)
    work = pairs_to_score(plans, cached)
    root = Path(row["image_root"]) if row["image_root"] else None
    fresh, n_images, n_texts = _score_work(db, loaded, work, root, image_sources, text_sources, batch_size, progress)
    pair_scores = {**cached, **fresh}
    scores = [(plan.item_id, item_scores(plan, pair_scores)) for plan in plans]
    name = run or loaded.run_name
    with store.transaction(db):
        run_id = store.ensure_run(db, row["id"], name, run_type="scores", model=f"{loaded.family.name}:{loaded.ref}")
        store.put_scores(db, run_id, scores)
        store.update_run_meta(db, run_id, {**loaded.stamp(), "batch_size": batch_size})
    store.keep_run_copies(db, row["id"])
    return ScoreReport(
        run=name,
        dataset=dataset,
        n_items=len(scores),
        n_images_encoded=n_images,
        n_texts_encoded=n_texts,
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


def _score_work(
    db: sqlite_utils.Database,
    loaded: LoadedFamily,
    work: PairWork,
    root: Path | None,
    image_sources: dict[str, tuple[str, list[float] | None]],
    text_sources: dict[str, str],
    batch_size: int,
    progress: Progress | None,
) -> tuple[dict[str, float], int, int]:
    """Score the pairs of `work`, a chunk of images at a time (the next chunk decoded meanwhile,
    on `scoring.prepared_ahead`'s loader thread)."""
    scorer, scored, done, n_texts = loaded.scorer, {}, 0, 0
    chunks = [list(work.by_image)[start : start + batch_size] for start in range(0, len(work.by_image), batch_size)]

    def decode(chunk: list[str]) -> list[Image.Image]:
        return [load_image(root, *image_sources[key]) for key in chunk]

    with closing(prepared_ahead(chunks, decode)) as decoded_ahead:
        for chunk, decoded in zip(chunks, decoded_ahead):
            images = dict(zip(chunk, scorer.prepare_images(decoded)))
            text_keys = list(dict.fromkeys(t for image in chunk for t in work.by_image[image]))
            texts = _prepare_texts(scorer, text_keys, text_sources, batch_size)
            n_texts += len(text_keys)
            pairs = [(image, text) for image in chunk for text in work.by_image[image]]
            for start in range(0, len(pairs), batch_size):
                batch = pairs[start : start + batch_size]
                values = scorer.score_pairs([images[i] for i, _ in batch], [texts[t] for _, t in batch])
                fresh = {pair_key(i, t): v for (i, t), v in zip(batch, values)}
                store.put_embeddings(
                    db, loaded.identity, PAIR, [(k, np.float32(v).tobytes()) for k, v in fresh.items()]
                )
                scored.update(fresh)
                done += len(batch)
                if progress:
                    progress("pairs", done, work.n_pairs)
    return scored, len(work.by_image), n_texts


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
    if (skipped := require_scorable(db, dataset, limit=limit).skipped_sentence()) and notify:
        notify(skipped)
    # before a model loads for nothing; the dataset's kinds, not its items planned twice
    refuse_text_kinds(store.item_kind_counts(db, store.get_dataset(db, dataset)["id"]))
    loaded = load(scorer_family(family), ref, precision, device)
    report = score_dataset_pairs(db, dataset, loaded, run=run, batch_size=batch_size, limit=limit, progress=progress)
    return {
        **report.to_dict(),
        "family": family,
        "rule": loaded.family.rule,
        "precision": loaded.precision,
        "precision_reason": loaded.precision_reason,
    }
