"""The health report: the sample's design, the validations' agreement, the shares per category and
overall, the dataset's own verdicts beside them, the blind audit, the human baseline and each
run's accuracy on all items against valid items (`analysis.health` has the statistics)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import sqlite_utils

from foil_studio.analysis import active_sampling as active
from foil_studio.analysis import health as h
from foil_studio.analysis.active_sampling import RoundEstimate
from foil_studio.analysis.audit import stored_audit, stored_or_fitted
from foil_studio.analysis.prediction_strata import edge_weights
from foil_studio.analysis.results import BOOTSTRAP, UnsupportedRunError, source_format
from foil_studio.annotate.agreement import COEFFICIENTS
from foil_studio.annotate.baselines import dataset_baseline
from foil_studio.annotate.batch_reports import batch_agreement
from foil_studio.annotate.consensus import excluded_annotators
from foil_studio.annotate.health.card import methods_paragraph
from foil_studio.annotate.health.powered import powered_leaderboard, powered_shares
from foil_studio.annotate.health.rounds import round_estimates
from foil_studio.annotate.health.sample import (
    DESIGN_KEY,
    HEALTH_KINDS,
    SHARES,
    HealthError,
    HealthSample,
    by_strata,
    credits_at,
    item_verdicts,
    read_sample,
    recorded_bins,
    run_credit_columns,
)
from foil_studio.data import store
from foil_studio.data.item_kinds import VERDICT_KEYS, TruthKey


def own_shares(db: sqlite_utils.Database, dataset: str) -> dict[str, Any] | None:
    """The shares the dataset's own verdicts give over all its items (VALSE's crowd rule, the demo's
    known flaws), for what they measure (`TruthKey.measures`: which verdicts they count, in whose
    words); None when its items carry no such verdict, or verdicts that measure different things."""
    verdicts: dict[str, Counter[str]] = {}
    keys: set[TruthKey] = set()
    for category, truth in store.item_truths(db, store.get_dataset(db, dataset)["id"], HEALTH_KINDS):
        judged = _own_verdict(truth)
        if judged is None:
            return None
        keys.add(judged[0])
        verdicts.setdefault(category, Counter())[judged[1]] += 1
    if len({key.measures for key in keys}) != 1:
        return None
    measures = next(iter(keys)).measures
    return {
        "measures": [{"verdicts": counted_verdicts, "definition": words} for counted_verdicts, words in measures],
        "by_category": {c: _own_counts(n, measures) for c, n in sorted(verdicts.items())},
    }


def _own_verdict(truth: Mapping[str, Any]) -> tuple[TruthKey, str] | None:
    """The truth key that judges the item's negative (the first present, as `source_verdict` reads
    it) and its verdict; None where none does, or it says nothing of what it measures."""
    key = next((k for k in VERDICT_KEYS if k.name in truth), None)
    if key is None or key.verdict is None or not key.measures:
        return None
    verdict = key.verdict(truth[key.name])
    return None if verdict is None else (key, verdict)


def _own_counts(verdicts: Counter[str], measures: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """A category's items and, per measured share, how many of them its verdicts count."""
    return {
        "items": sum(verdicts.values()),
        "counts": {
            counted_verdicts: sum(verdicts[o] for o in counted_verdicts.split("+")) for counted_verdicts, _ in measures
        },
    }


def _own_figures(own: Mapping[str, Any], categories: Sequence[str]) -> dict[str, float]:
    """Per measured share, the dataset's own figure over all items of `categories`."""
    rows = [own["by_category"][c] for c in categories if c in own["by_category"]]
    items = sum(row["items"] for row in rows)
    return {
        m["verdicts"]: round(sum(row["counts"][m["verdicts"]] for row in rows) / items, 4)
        for m in own["measures"]
        if items
    }


def health_report(
    db: sqlite_utils.Database,
    dataset: str,
    runs: Sequence[str] | None = None,
    *,
    ties: str | None = None,
    n_boot: int = BOOTSTRAP,
    seed: int = 0,
    predictions: str | None = None,
    consensus: str = "majority",
    fit_audit: bool = True,
) -> dict[str, Any]:
    """The benchmark card's figures (`./foil health report`, the Benchmark health page): the sample's
    design, the validations' agreement, the invalid, ambiguous and invalid-or-ambiguous shares per
    category and overall with 95% intervals (each share the dataset's own verdicts measure beside
    their figure, `own`, where it carries them), and each run's
    accuracy on all items (published) and on valid items, with paired differences. With `predictions`
    (a prediction set's name), the invalid shares also prediction-powered (`prediction_powered`).
    `consensus` says how validations become an item's verdict (`CONSENSUS`; the report records it).
    The blind text-only audit fits on every item of the dataset: with `fit_audit` False (the page) only
    a stored one is shown, and `hackability` is None until a command (or the page's button) fits it."""
    # read (or refused) before the sample: a name that is not there fails at once
    found = store.get_predictions(db, dataset, predictions) if predictions is not None else {}
    sample = read_sample(db, dataset, consensus)
    view = by_strata(sample)  # the strata and decided items the estimates stand on
    batches, sizes, counts = sample.batches, sample.sizes, replace(sample, verdicts=view.verdicts).counts()
    strata_of = _strata_of(view)
    if not batches:
        raise HealthError(f"{dataset} has no health sample yet; draw one with `./foil health sample {dataset}`")
    own = own_shares(db, dataset)
    screened_out = {b["id"]: {e.annotator for e in excluded_annotators(db, b["name"])} for b in batches}
    by_rounds = _round_shares(sample) if sample.active else None
    strata = [_stratum_row(c, sizes[c], counts.get(c), own, by_rounds, strata_of.get(c)) for c in sorted(sizes)]
    decided = [c for c in sorted(sizes) if counts.get(c, {}).get("decided", 0) > 0]
    report: dict[str, Any] = {
        "dataset": dataset,
        "consensus": consensus,
        # how many decided items the rule chosen decides otherwise than the majority (None for the majority)
        "differs_from_majority": _differs_from_majority(db, dataset, sample) if consensus != "majority" else None,
        "design": _design_summary(batches, sizes, sample.counts(), _answers_by_batch(db, sample, screened_out)),
        # annotators screened out by their gold answers, whose answers no verdict counts
        "screened_out": sorted({name for names in screened_out.values() for name in names}),
        "agreement": [_agreement_row(db, b["name"]) for b in batches],
        "own_verdicts": None if own is None else own["measures"],
        "strata": strata,
        "estimator": "rounds" if sample.active else "binned" if view.category_of else "stratified",
        # why decided items of a draw by prediction wait outside the estimates (None when none do)
        "waiting": view.waiting,
        "overall": _overall(decided, sizes, counts, own, by_rounds, strata_of),
        "hackability": hackability(db, dataset, fit=fit_audit),
        "human_baseline": _human_baseline(db, dataset),
        "leaderboard": None,
        "prediction_powered": None,
    }
    if predictions is not None:
        report["prediction_powered"] = powered_shares(view, found, predictions)
    if decided and sample.active:
        report["leaderboard"] = {"runs": [], "skipped": {}, "undefined": ACTIVE_LEADERBOARD}
    elif decided:
        decided_strata = [name for name, c in (view.category_of or {c: c for c in sizes}).items() if c in decided]
        report["leaderboard"] = _leaderboard(
            db, dataset, runs, decided_strata, view.drawn, view.verdicts, view.sizes, ties, n_boot, seed
        )
        if report["prediction_powered"] is not None:
            report["prediction_powered"]["leaderboard"] = powered_leaderboard(
                db, view, found, report["leaderboard"], ties
            )
    report["methods"] = methods_paragraph(report)
    return report


def _differs_from_majority(db: sqlite_utils.Database, dataset: str, sample: Any) -> int:
    majority = item_verdicts(db, dataset)
    return sum(majority.get(item) != verdict for item, verdict in sample.verdicts.items())


def _human_baseline(db: sqlite_utils.Database, dataset: str) -> dict[str, Any] | None:
    """The dataset's human baseline (its baseline batches, as Model scores draws it), or None."""
    found = dataset_baseline(db, dataset)
    if found is None:
        return None
    return {
        "batches": found["batches"],
        "n": found["n"],
        "min_items": found["min_items"],
        "metrics": [
            {"metric": key, "value": round(value, 2), "interval": [round(x, 2) for x in found["intervals"][key]]}
            for key, value in found["metrics"].items()
            if found["intervals"].get(key)
        ],
    }


BLIND_SCORERS = ("stats", "ngram")  # the blind scorers of the card: fitted in seconds, no model to download


def hackability(db: sqlite_utils.Database, dataset: str, *, fit: bool = True) -> dict[str, Any] | None:
    """Blind text-only accuracy (percent, a tie counted half) overall and per category, from the
    stored audit with the card's scorers, else fitted now and stored (None where not `fit`)."""
    result = stored_or_fitted(db, dataset, scorers=BLIND_SCORERS) if fit else stored_blind_audit(db, dataset)
    if result is None:
        return None
    return {
        "scorers": list(BLIND_SCORERS),
        "ties": "half",
        # fitted on a random part of a large dataset: its size and the figures' widest margins (`audit.sample_margins`)
        "sample": result.get("sample"),
        "overall": {s: round(result["blind"][s], 2) for s in BLIND_SCORERS},
        "by_category": {
            c: {s: round(v["blind"][s], 2) for s in BLIND_SCORERS} for c, v in sorted(result["by_category"].items())
        },
    }


def stored_blind_audit(db: sqlite_utils.Database, dataset: str) -> dict[str, Any] | None:
    """The stored audit with the card's blind scorers, or None where none is stored for the items as
    they are (`audit.stored_audit`)."""
    return stored_audit(db, dataset, scorers=BLIND_SCORERS)


def fit_blind_audit(db: sqlite_utils.Database, dataset: str) -> None:
    """Fit the card's blind audit on every item and store it (what the page's button and a command do
    once; every report after reads it)."""
    stored_or_fitted(db, dataset, scorers=BLIND_SCORERS)


ACTIVE_LEADERBOARD = (
    "the sample has an active batch (items drawn with unequal probabilities), and accuracy on valid items is "
    "estimated for samples drawn at random only; it stays undefined for this sample, whatever is drawn next"
)


def _round_shares(sample: HealthSample) -> dict[str, dict[str, RoundEstimate]]:
    """Per share of the report, per category with a decided item, its estimate from the rounds."""
    return {
        key: round_estimates(sample, frozenset(counted_verdicts.split("+")))
        for counted_verdicts, (key, _) in SHARES.items()
    }


# a category's strata: each one's size, counts and share of the category's extra item at an edge
StrataCounts = list[tuple[int, Mapping[str, int], float]]


def _strata_of(view: HealthSample) -> dict[str, StrataCounts]:
    """Category -> its prediction bins' sizes, counts and edge weights (`prediction_strata.edge_weights`,
    from the bins as the draw recorded them), where the estimates take bins as strata (`by_strata`);
    empty where each category is one stratum."""
    recorded = recorded_bins(view.batches)
    if view.category_of is None or recorded is None:
        return {}
    counts, found = view.counts(), dict[str, StrataCounts]()
    bins = recorded[2]
    weights = {c: edge_weights(b["sizes"], b["means"]) for c, b in bins.items()}
    for name, category in view.category_of.items():
        number = len(found.get(category, []))
        found.setdefault(category, []).append(
            (len(view.frame[name]), counts.get(name, _NO_COUNTS), weights[category][number])
        )
    return found


_NO_COUNTS = {"drawn": 0, "decided": 0, "valid": 0, "invalid": 0, "ambiguous": 0}


def _counted(counts: Mapping[str, int], counted_verdicts: str) -> int:
    """The decided items whose verdict is among `counted_verdicts` ("invalid", "invalid+ambiguous", ...)."""
    return sum(counts[o] for o in counted_verdicts.split("+"))


def _binned_share(bins: StrataCounts, counted_verdicts: str) -> dict[str, Any]:
    """The share of `counted_verdicts` over prediction bins (one category's, or every sampled one's), each bin a
    stratum with its edge weight."""
    counted = [_counted(counts, counted_verdicts) for _, counts, _ in bins]
    decided = [counts["decided"] for _, counts, _ in bins]
    sizes, pseudo = [size for size, _, _ in bins], [weight for _, _, weight in bins]
    return h.stratified_share(counted, decided, sizes, pseudo=pseudo).as_dict()


def _stratum_row(
    category: str,
    size: int,
    counts: Mapping[str, int] | None,
    own: Mapping[str, Any] | None,
    by_rounds: Mapping[str, Mapping[str, RoundEstimate]] | None,
    bins: StrataCounts | None = None,
) -> dict[str, Any]:
    counts = counts or _NO_COUNTS
    row: dict[str, Any] = {"category": category, "size": size, **counts, **{key: None for key, _ in SHARES.values()}}
    if counts["decided"] and by_rounds is not None:
        for key, estimates in by_rounds.items():
            row[key] = active.stratum_share(estimates[category], size).as_dict()
    elif counts["decided"] and bins is not None and len(bins) > 1:
        for counted_verdicts, (key, _) in SHARES.items():
            row[key] = _binned_share(bins, counted_verdicts)
    elif counts["decided"]:
        for counted_verdicts, (key, _) in SHARES.items():
            found = sum(counts[o] for o in counted_verdicts.split("+"))
            row[key] = h.stratum_share(found, counts["decided"], size).as_dict()
    if own is not None:
        row["own"] = _own_figures(own, [category])
    return row


def _overall(
    decided: list[str],
    sizes: Mapping[str, int],
    counts: Mapping[str, Mapping[str, int]],
    own: Any,
    by_rounds: Mapping[str, Mapping[str, RoundEstimate]] | None,
    strata_of: Mapping[str, StrataCounts],
) -> dict[str, Any]:
    """The stratified shares over the categories with a decided item (`covers`: their items), each
    category's prediction bins its strata where `strata_of` has them."""
    overall: dict[str, Any] = {"covers": 0, "size": sum(sizes.values()), **{key: None for key, _ in SHARES.values()}}
    if not decided:
        return overall
    n = [counts[c]["decided"] for c in decided]
    size = [sizes[c] for c in decided]
    overall |= {"covers": sum(size), "categories_without_decided_items": sorted(set(sizes) - set(decided))}
    for counted_verdicts, (key, _) in SHARES.items():
        if by_rounds is not None:
            overall[key] = active.stratified_share([by_rounds[key][c] for c in decided], size).as_dict()
            continue
        if strata_of:
            overall[key] = _binned_share([part for c in decided for part in strata_of[c]], counted_verdicts)
            continue
        found = [_counted(counts[c], counted_verdicts) for c in decided]
        overall[key] = h.stratified_share(found, n, size).as_dict()
    if own is not None:
        overall["own"] = _own_figures(own, decided)
    return overall


def _design_summary(
    batches: list[store.BatchRow],
    sizes: Mapping[str, int],
    counts: Mapping[str, Mapping[str, int]],
    answers: Mapping[int, list[int]],
) -> dict[str, Any]:
    """Each batch's design, its decided items and the answers they had (`answers`: batch id -> the
    answers of each of its decided items); the same over the whole sample."""
    designs = [b["config"][DESIGN_KEY] for b in batches]
    return {
        "batches": [
            {
                "batch": b["name"],
                "allocation": d["allocation"],
                "strategy": d.get("strategy", "random"),
                "predictions": d.get("predictions"),
                "floor_share": d.get("floor_share"),
                "plan": d.get("plan"),
                "target": d["target"],
                "seed": d["seed"],
                "drawn": sum(s["drawn"] for s in d["strata"].values()),
                "overlap": b["config"].get("overlap"),
                "decided": len(answers.get(b["id"], [])),
                "answers": answer_counts(answers.get(b["id"], [])),
            }
            for b, d in zip(batches, designs)
        ],
        "items": sum(sizes.values()),
        "categories": len(sizes),
        "drawn": sum(c["drawn"] for c in counts.values()),
        "decided": sum(c["decided"] for c in counts.values()),
        "answers": answer_counts([n for per_item in answers.values() for n in per_item]),
    }


def answer_counts(answers: Sequence[int]) -> dict[str, Any] | None:
    """The fewest, most and mean answers of decided items (None for none).

    >>> answer_counts([1, 3, 2, 3])
    {'items': 4, 'min': 1, 'max': 3, 'mean': 2.25}
    """
    if not answers:
        return None
    return {"items": len(answers), "min": min(answers), "max": max(answers), "mean": round(float(np.mean(answers)), 2)}


def _answers_by_batch(
    db: sqlite_utils.Database, sample: HealthSample, screened_out: Mapping[int, set[str]]
) -> dict[int, list[int]]:
    """Batch id -> how many answers each of its decided items was decided from, counted from the
    stored labels as `consensus.decisions` counts votes (gold questions and the batch's annotators
    `screened_out` by gold left out); an admin's decision on an item nobody answered counts 0."""
    found: dict[int, list[int]] = {}
    for batch in sample.batches:
        left_out = screened_out[batch["id"]]
        votes = Counter(
            label["item"]
            for label in store.batch_labels(db, batch["id"])
            if not label["is_gold"] and label["part"] == 0 and label["annotator"] not in left_out
        )
        decided = sorted(i for i in sample.verdicts if sample.batch_of[i] == batch["id"])
        found[batch["id"]] = [votes[i] for i in decided]
    return found


def _agreement_row(db: sqlite_utils.Database, batch: str) -> dict[str, Any]:
    """The coefficients the Annotation batches page shows for a batch, with their intervals."""
    report = batch_agreement(db, batch)
    return {
        "batch": batch,
        "n_items": report["n_items"],
        **{key: report[key] for key in COEFFICIENTS},
        "intervals": report["intervals"],
    }


NO_VALID_ITEM = "no decided item is valid yet, so no run has an accuracy on valid items"


def _leaderboard(
    db: sqlite_utils.Database,
    dataset: str,
    runs: Sequence[str] | None,
    decided: list[str],
    drawn: Mapping[int, str],
    verdicts: Mapping[int, str],
    sizes: Mapping[str, int],
    ties: str | None,
    n_boot: int,
    seed: int,
) -> dict[str, Any] | None:
    """Published (all items) against valid-item accuracy per run, with paired differences."""
    names = list(runs) if runs else store.run_names(db, dataset)
    columns: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    skipped: dict[str, str] = {}
    for name in names:
        try:
            columns[name] = run_credit_columns(db, dataset, name, ties)
        except (UnsupportedRunError, store.NotFoundError) as error:
            if runs:
                raise
            skipped[name] = str(error)
    items = sorted(i for i in verdicts if drawn[i] in decided)
    found = {name: credits_at(*columns[name], items) for name in columns}
    credit = {name: given for name, given in found.items() if given is not None}
    scored = list(credit)
    skipped.update({n: "did not score every drawn item" for n in columns if n not in scored})
    if not scored:
        return {"runs": [], "skipped": skipped}
    if not any(verdicts[i] == "valid" for i in items):  # 0 of 0: no accuracy on valid items, not nan
        return {"runs": [], "skipped": skipped, "undefined": NO_VALID_ITEM}
    published = [float(np.mean(columns[name][1])) for name in scored]  # the all-items accuracy
    board = h.valid_accuracy(
        [drawn[i] for i in items],
        np.array([verdicts[i] == "valid" for i in items]),
        np.array([[credit[name][i] for name in scored] for i in items]),
        {c: sizes[c] for c in decided},
        scored,
        published=published,
        n_boot=n_boot,
        seed=seed,
    )
    rows = [
        {
            "run": name,
            "published": round(100 * published[r], 2),
            "valid": round(100 * float(board.estimate[r]), 2),
            "valid_interval": [round(100 * float(board.low[r]), 2), round(100 * float(board.high[r]), 2)],
        }
        for r, name in enumerate(scored)
    ]
    pairs = [
        {
            "a": a,
            "b": b,
            "difference": round(100 * d, 2),
            "interval": [round(100 * lo, 2), round(100 * hi, 2)],
            "order_differs": round(board.order_flip.get((a, b), 0.0), 4),
        }
        for (a, b), (d, lo, hi) in board.difference.items()
    ]
    tie_rule = ties or source_format(db, dataset).ties
    return {
        "runs": rows,
        "pairs": pairs,
        "ties": tie_rule,
        "bootstrap": {"resamples": n_boot, "seed": seed},
        "skipped": skipped,
    }
