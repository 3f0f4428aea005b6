"""The hackability audit of a dataset: blind accuracy per category, and adversarial refinement."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_utils

from analysis import blind
from analysis.metrics import percent
from data import formats, store


def dataset_pairs(db: sqlite_utils.Database, dataset: str) -> list[dict[str, Any]]:
    """The dataset's items that have a positive and a negative caption (pairs, triples, groups)."""
    items = store.list_items(db, store.get_dataset(db, dataset)["id"], limit=1 << 62)
    return [i for i in items if i["kind"] in ("pair", "triple", "group")]


def audit(
    db: sqlite_utils.Database, dataset: str, *, scorers: Sequence[str] = blind.SCORERS, folds: int = 5, seed: int = 0,
    embed: blind.Embedder | None = None,
) -> dict[str, Any]:
    """The `cli.py audit` JSON: blind accuracy (percent) per scorer, overall and per category.

    The result is also stored, so `stored_audit` can show it again without refitting.
    """
    items = dataset_pairs(db, dataset)
    if not items:
        raise store.StoreError(f"{dataset} has no caption pairs to audit")
    pairs = [(i["captions"][0], i["captions"][1]) for i in items]
    results = blind.blind_gaps(pairs, scorers, k=folds, seed=seed, embed=embed)
    result = {"dataset": dataset, **summarize_blind(items, pairs, results)}
    store.put_audit(db, dataset, _settings(scorers, folds, seed), result)
    return result


def stored_audit(db: sqlite_utils.Database, dataset: str, *, scorers: Sequence[str] = blind.SCORERS, folds: int = 5, seed: int = 0) -> dict[str, Any] | None:
    """The last `audit` of a dataset with these settings, if its items have not changed since."""
    return store.get_audit(db, dataset, _settings(scorers, folds, seed))


def _settings(scorers: Sequence[str], folds: int, seed: int) -> str:
    return f"scorers={','.join(sorted(scorers))};folds={folds};seed={seed}"


def summarize_blind(items: list[store.ItemRow], pairs: list[tuple[str, str]], results: dict[str, blind.BlindResult]) -> dict[str, Any]:
    """Blind accuracies and same-word counts, overall and per category."""
    categories = np.array([i["category"] for i in items])
    flags = np.array([blind.same_words(c, n) for c, n in pairs])
    by_category = {}
    for category in sorted(set(categories.tolist())):
        mask = categories == category
        by_category[category] = {
            "n": int(mask.sum()), "same_words": int(flags[mask].sum()),
            "blind": {name: percent(r.correct[mask]) for name, r in results.items()},
        }
    return {"n": len(items), "by_category": by_category, "blind": {name: percent(r.correct) for name, r in results.items()},
            "same_words": int(flags.sum()), "gaps": {name: r.gaps.tolist() for name, r in results.items()},
            "categories": categories.tolist()}


def refine_dataset(
    db: sqlite_utils.Database, dataset: str, scorers: tuple[str, str], *, grid: int = 8, seed: int = 0, folds: int = 5,
    out: Path | None = None, embed: blind.Embedder | None = None,
) -> dict[str, Any]:
    """Adversarial refinement against two blind scorers; writes the kept items in SugarCrepe's layout."""
    items = dataset_pairs(db, dataset)
    stored = stored_audit(db, dataset, scorers=scorers, folds=folds, seed=seed) if embed is None else None
    if stored is not None:  # the page's audit already fitted these scorers on these items
        results = {name: blind.BlindResult(name, np.array(stored["gaps"][name])) for name in scorers}
    else:
        results = blind.blind_gaps([(i["captions"][0], i["captions"][1]) for i in items], scorers, k=folds, seed=seed, embed=embed)
    keep = blind.refine(results[scorers[0]].gaps, results[scorers[1]].gaps, grid=grid, seed=seed)
    if out is not None:
        formats.REGISTRY["sugarcrepe"].write([item for item, kept in zip(items, keep) if kept], out, formats.ExportContext(dataset))
    return {
        "dataset": dataset, "n_before": len(items), "n_after": int(keep.sum()),
        "blind_before": {name: percent(r.correct) for name, r in results.items()},
        "blind_after": {name: percent(r.correct[keep]) for name, r in results.items()},
        "kept": keep.tolist(), "gaps": {name: r.gaps.tolist() for name, r in results.items()},
    }
