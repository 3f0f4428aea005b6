"""The hackability audit of a dataset: blind accuracy per category, and adversarial refinement."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_utils

from foil_studio.analysis import blind
from foil_studio.analysis.metrics import percent, text_only_outcome
from foil_studio.data import formats, item_kinds, store

TextEncoders = Mapping[str, blind.Embedder]  # name shown -> sentence embedder


AUDIT_MOST = 100_000  # items an audit fits on: a larger dataset's are a random sample of this many


def sampled_items(
    db: sqlite_utils.Database, dataset: str, *, most: int | None = None, seed: int = 0
) -> tuple[list[store.ItemRow], int]:
    """The dataset's audited items, or a random `most` (default `AUDIT_MOST`) of them where it holds
    more (the rest never decoded: a million items' fit took minutes and gigabytes), and how many it holds."""
    most = AUDIT_MOST if most is None else most
    frame = store.item_strata(db, store.get_dataset(db, dataset)["id"], item_kinds.AUDITED_KINDS)
    ids = sorted(item_id for items in frame.values() for item_id in items)
    held = len(ids)
    if held > most:
        ids = sorted(np.random.default_rng(seed).choice(ids, most, replace=False).tolist())
    rows = store.items_by_id(db, ids)
    return [rows[i] for i in ids], held


PAGE_FITS_MOST = 20_000  # audited items a page fits the audit on at once; past this it asks first


def audited_count(db: sqlite_utils.Database, dataset: str) -> int:
    """How many of the dataset's items an audit reads (those of the audited item kinds), from the
    kept counts."""
    counts = store.item_kind_counts(db, store.get_dataset(db, dataset)["id"])
    return sum(n for item_kind, n in counts.items() if item_kind in item_kinds.AUDITED_KINDS)


def sample_margins(result: Mapping[str, Any], n: int, size: int) -> dict[str, Any]:
    """What drawing `n` of `size` items does to the figures: the 95% margin (percentage points, a
    normal interval with the finite population correction, at the widest share, one half) of any
    blind accuracy over all items, and in the category with the fewest sampled items. It leaves out
    that the scorers are fitted on the `n` items only, which lowers them a little (TESTING.md).

    >>> sample_margins({"by_category": {"a": {"n": 400}, "b": {"n": 600}}}, 1000, 10000)
    {'items': 1000, 'of': 10000, 'margin_overall': 2.94, 'margin_category': 4.65}
    """
    correction = 1 - n / size

    def margin(count: int) -> float:
        return round(100 * 1.96 * float(np.sqrt(0.25 / max(count, 1) * correction)), 2)

    smallest = min(category["n"] for category in result["by_category"].values())
    return {"items": n, "of": size, "margin_overall": margin(n), "margin_category": margin(smallest)}


def dataset_pairs(
    db: sqlite_utils.Database, dataset: str, kinds: Sequence[str] = item_kinds.CAPTION_PAIR_KINDS
) -> list[store.ItemRow]:
    """The dataset's items of `kinds`: by default those with a positive and a negative caption
    (pairs, triples, groups...)."""
    items = store.list_items(db, store.get_dataset(db, dataset)["id"], limit=1 << 62)
    return [i for i in items if i["kind"] in kinds]


def audited_pairs(items: Sequence[store.ItemRow]) -> tuple[list[store.ItemRow], list[tuple[str, str]]]:
    """(positive, negative) caption pairs with the item beside each: one per caption-pair item,
    one per negative of a retrieval item (ARO's order sets: the caption against each perturbation).

    >>> rows, pairs = audited_pairs([{"id": 1, "kind": "retrieval", "captions": ["a b", "b a", "a a b"]}])
    >>> pairs, [row["id"] for row in rows]
    ([('a b', 'b a'), ('a b', 'a a b')], [1, 1])
    """
    rows, pairs = [], []
    for item in items:
        for negative in item_kinds.negative_captions(item):
            rows.append(item)
            pairs.append((item["captions"][0], item["captions"][negative]))
    return rows, pairs


def audit(
    db: sqlite_utils.Database,
    dataset: str,
    *,
    scorers: Sequence[str] = blind.SCORERS,
    folds: int = 5,
    seed: int = 0,
    embed: blind.Embedder | None = None,
    text_encoders: TextEncoders | None = None,
) -> dict[str, Any]:
    """The `./foil audit` JSON: blind accuracy (percent) per scorer, overall and per category;
    for datasets with two positives per item (SugarCrepe++), also the text-only TOT of each
    sentence encoder (`text_encoders`; default MiniLM), which needs no fitting.

    The result is also stored, so `stored_audit` can show it again without refitting.
    """
    drawn, total = sampled_items(db, dataset, seed=seed)
    items, pairs = audited_pairs(drawn)
    if not items:
        raise store.StoreError(f"{dataset} has no caption pairs to audit")
    results = blind.blind_gaps(pairs, scorers, k=folds, seed=seed, embed=embed)
    result = {"dataset": dataset, **summarize_blind(items, pairs, results)}
    if len(drawn) < total:
        result["sample"] = sample_margins(result, len(drawn), total)
    paraphrases = [i for i in items if item_kinds.item_kind(i["kind"]).text_scores_from is not None]  # kinds with a TOT
    encoders: TextEncoders = {}
    if paraphrases:
        encoders = text_encoders if text_encoders is not None else {"minilm": embed or blind.minilm_embedder()}
        result["tot"] = text_only_accuracy(paraphrases, encoders)
    store.put_audit(db, dataset, _settings(scorers, folds, seed, encoders), result)
    return result


def text_only_accuracy(items: Sequence[store.ItemRow], encoders: TextEncoders) -> dict[str, Any]:
    """SugarCrepe++'s TOT per sentence encoder, overall and per category: the two positives
    closer to each other than either is to the negative (cosines of the encoder's embeddings)."""
    categories = np.array([i["category"] for i in items])
    texts = sorted({caption for item in items for caption in item["captions"]})
    index = {text: n for n, text in enumerate(texts)}
    rows = [[index[i["captions"][k]] for i in items] for k in (0, 1, 2)]  # p1, n, p2 of each item
    overall: dict[str, float] = {}
    by_category: dict[str, dict[str, float]] = {c: {} for c in sorted(set(categories.tolist()))}
    for name, embed in encoders.items():
        vectors = np.asarray(embed(texts), dtype=float)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        p1, n, p2 = (vectors[r] for r in rows)
        credits = text_only_outcome((p1 * p2).sum(1), (p1 * n).sum(1), (p2 * n).sum(1))
        overall[name] = percent(credits)
        for category in by_category:
            by_category[category][name] = percent(credits[categories == category])
    return {"n": len(items), "encoders": list(encoders), "overall": overall, "by_category": by_category}


def tot_table(tot: Mapping[str, Any], summaries: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """TOT per category (and overall) for each sentence encoder of an audit, beside the TOT of
    each scored run (its CLIP text encoder, from `results.run_summaries`)."""
    runs = {f"run {name}": s for name, s in summaries.items() if "TOT" in s.get("metrics", {})}
    rows = []
    for category, values in [*tot["by_category"].items(), ("(all)", tot["overall"])]:
        row: dict[str, Any] = {"category": category, **values}
        for label, summary in runs.items():
            row[label] = (
                summary["metrics"]["TOT"]
                if category == "(all)"
                else summary["by_category"].get(category, {}).get("TOT")
            )
        rows.append(row)
    return rows


# The Hackability page's TOT encoders: MiniLM and the shipped demo CLIP's text encoder, the one
# CLIP a fresh install holds without downloading weights (`foil audit --text-model` names others).
PAGE_TOT_CLIP = "demo"


def tot_encoders(clip_arch: str | None = None, pretrained: str | None = None) -> dict[str, blind.Embedder]:
    """MiniLM, plus a CLIP model's text encoder when one is named ('demo': the shipped demo model)."""
    encoders: dict[str, blind.Embedder] = {"minilm": _lazy(blind.minilm_embedder)}
    if clip_arch:
        from foil_studio.analysis import model_spec

        spec = model_spec.demo_model_spec() if clip_arch == "demo" else model_spec.ModelSpec(clip_arch, pretrained)
        encoders[f"clip text: {spec.arch}"] = _lazy(lambda: _clip_text(spec))
    return encoders


def _clip_text(spec: Any) -> blind.Embedder:
    from foil_studio.analysis import models  # torch and open_clip: only when a CLIP text encoder is asked for

    return models.text_embedder(models.load_model(spec))


def _lazy(make: Callable[[], blind.Embedder]) -> blind.Embedder:
    """An embedder built on first use (a dataset without two positives never loads it)."""
    built = functools.cache(make)
    return lambda texts: built()(texts)


def stored_audit(
    db: sqlite_utils.Database,
    dataset: str,
    *,
    scorers: Sequence[str] = blind.SCORERS,
    folds: int = 5,
    seed: int = 0,
    text_encoders: Sequence[str] = ("minilm",),
) -> dict[str, Any] | None:
    """The last `audit` of a dataset with these settings, if its items have not changed since
    (`text_encoders` names the TOT encoders of datasets with two positives)."""
    # a dataset without two positives per item was audited with no TOT encoder
    return store.get_audit(db, dataset, _settings(scorers, folds, seed, text_encoders)) or store.get_audit(
        db, dataset, _settings(scorers, folds, seed, ())
    )


def stored_or_fitted(
    db: sqlite_utils.Database,
    dataset: str,
    *,
    scorers: Sequence[str] = blind.SCORERS,
    text_encoders: TextEncoders | None = None,
) -> dict[str, Any]:
    """The stored audit of `dataset` with these settings (`stored_audit`), else `audit`'s, fitted
    now and stored: what a page or report shows without refitting on every visit."""
    names = tuple(text_encoders) if text_encoders is not None else ("minilm",)
    found = stored_audit(db, dataset, scorers=scorers, text_encoders=names)
    return found or audit(db, dataset, scorers=scorers, text_encoders=text_encoders)


def _settings(scorers: Sequence[str], folds: int, seed: int, text_encoders: Sequence[str] | Mapping[str, Any]) -> str:
    encoders = f";tot={','.join(sorted(text_encoders))}" if text_encoders else ""
    # ";ties=half": audits stored before ties counted half are not served again
    return f"scorers={','.join(sorted(scorers))};folds={folds};seed={seed}{encoders};ties=half"


def summarize_blind(
    items: list[store.ItemRow], pairs: list[tuple[str, str]], results: dict[str, blind.BlindResult]
) -> dict[str, Any]:
    """Blind accuracies (a tie half right) with each scorer's tie count, and same-word counts,
    overall and per category."""
    categories = np.array([i["category"] for i in items])
    flags = np.array([blind.same_words(c, n) for c, n in pairs])
    by_category = {}
    for category in sorted(set(categories.tolist())):
        mask = categories == category
        by_category[category] = {
            "n": int(mask.sum()),
            "same_words": int(flags[mask].sum()),
            "blind": {name: percent(r.correct[mask]) for name, r in results.items()},
            "ties": {name: int(np.count_nonzero(r.gaps[mask] == 0)) for name, r in results.items()},
        }
    return {
        "n": len(items),
        "by_category": by_category,
        "blind": {name: percent(r.correct) for name, r in results.items()},
        "ties": {name: r.ties for name, r in results.items()},
        "same_words": int(flags.sum()),
        "gaps": {name: r.gaps.tolist() for name, r in results.items()},
        "categories": categories.tolist(),
    }


def blind_row(summary: Mapping[str, Any], dataset: str, scorers: Sequence[str]) -> dict[str, Any]:
    """One row of the audit table (a category, or the whole set): n, same-word pairs, then each
    scorer's blind accuracy with its ties beside it."""
    row: dict[str, Any] = {"n": summary["n"], "same words": summary["same_words"]}
    for scorer in scorers:
        row[f"{dataset} {scorer}"] = summary["blind"][scorer]
        row[f"{scorer} ties"] = summary.get("ties", {}).get(scorer)
    return row


def audit_table(
    result: Mapping[str, Any],
    dataset: str,
    scorers: Sequence[str],
    other: Mapping[str, Any] | None = None,
    compare: str = "",
) -> list[dict[str, Any]]:
    """The audit page's table: a row per category and one for the whole set (`blind_row`), with
    another dataset's blind accuracy per scorer beside them when `other` (named `compare`) is given."""
    rows = [{"category": c, **blind_row(v, dataset, scorers)} for c, v in result["by_category"].items()]
    rows.append({"category": "(all)", **blind_row(result, dataset, scorers)})
    if other is not None:
        extra = {c: v["blind"] for c, v in other["by_category"].items()} | {"(all)": other["blind"]}
        for row in rows:
            row.update({f"{compare} {s}": extra.get(row["category"], {}).get(s) for s in scorers})
    return rows


def refine_dataset(
    db: sqlite_utils.Database,
    dataset: str,
    scorers: tuple[str, str],
    *,
    grid: int = 8,
    seed: int = 0,
    folds: int = 5,
    out: Path | None = None,
    embed: blind.Embedder | None = None,
) -> dict[str, Any]:
    """Adversarial refinement against two blind scorers; writes the kept items in SugarCrepe's
    layout, so only caption-pair items take part (a retrieval item's options are not one pair)."""
    items = dataset_pairs(db, dataset)
    if not items:
        raise store.StoreError(f"{dataset} has no caption pairs to refine (refinement keeps or drops whole pairs)")
    stored = stored_audit(db, dataset, scorers=scorers, folds=folds, seed=seed) if embed is None else None
    if stored is not None and len(stored["categories"]) == len(items):  # the audit fitted these scorers on these pairs
        results = {name: blind.BlindResult(name, np.array(stored["gaps"][name])) for name in scorers}
    else:
        results = blind.blind_gaps(
            [(i["captions"][0], i["captions"][1]) for i in items], scorers, k=folds, seed=seed, embed=embed
        )
    keep = blind.refine(results[scorers[0]].gaps, results[scorers[1]].gaps, grid=grid, seed=seed)
    if out is not None:
        formats.REGISTRY["sugarcrepe"].write_items(
            [item for item, kept in zip(items, keep) if kept], out, formats.ExportContext(dataset)
        )
    return {
        "dataset": dataset,
        "n_before": len(items),
        "n_after": int(keep.sum()),
        "blind_before": {name: percent(r.correct) for name, r in results.items()},
        "blind_after": {name: percent(r.correct[keep]) for name, r in results.items()},
        "ties_after": {name: int(np.count_nonzero(r.gaps[keep] == 0)) for name, r in results.items()},
        "kept": keep.tolist(),
        "gaps": {name: r.gaps.tolist() for name, r in results.items()},
    }
