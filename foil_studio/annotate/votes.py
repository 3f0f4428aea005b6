"""Crowd votes that come with a benchmark (VALSE's ``mturk``): agreement and validity per category.

The votes are counts per answer on each item (``meta["votes"]``), without annotator identities,
so agreement is Fleiss' kappa from counts; validity is the source's own rule, stored by the
importer as ``truth["valid_foil"]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sqlite_utils

from foil_studio.annotate.agreement import fleiss_from_counts
from foil_studio.data import store


def vote_agreement(db: sqlite_utils.Database, dataset: str) -> dict[str, Any]:
    """Per category and overall: items with votes, valid items, and Fleiss' kappa of the votes."""
    items = [
        i for i in store.list_items(db, store.get_dataset(db, dataset)["id"], limit=1 << 62) if "votes" in i["meta"]
    ]
    if not items:
        raise store.StoreError(f"{dataset} has no crowd votes (import VALSE with its mturk votes)")
    answers = sorted({answer for item in items for answer in item["meta"]["votes"]})
    by_category: dict[str, list[store.ItemRow]] = {}
    for item in items:
        by_category.setdefault(item["category"], []).append(item)
    rows = {category: _figures(part, answers) for category, part in sorted(by_category.items())}
    return {"dataset": dataset, "answers": answers, "by_category": rows, "overall": _figures(items, answers)}


def _figures(items: list[store.ItemRow], answers: list[str]) -> dict[str, Any]:
    counts = np.array([[item["meta"]["votes"].get(a, 0) for a in answers] for item in items])
    kappa, n, undefined = fleiss_from_counts(counts)
    valid = sum(bool(item["truth"].get("valid_foil")) for item in items)
    return {
        "n": len(items),
        "n_valid": valid,
        "percent_valid": 100.0 * valid / len(items),
        "fleiss": kappa,
        "fleiss_n": n,
        **({"undefined": undefined} if undefined else {}),
    }
