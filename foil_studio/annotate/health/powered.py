"""Prediction-powered benchmark health over the store: a predictor's predictions on every item (imported
from a file) combined with people's outcomes on the health sample (`analysis.prediction_powered`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_utils

from foil_studio.analysis import active_sampling as active
from foil_studio.analysis.health import Share
from foil_studio.analysis.prediction_powered import (
    Powered,
    PoweredAccuracy,
    powered_stratified_share,
    powered_stratum_share,
    powered_valid_accuracy,
    worth_of_widths,
)
from foil_studio.annotate.health.rounds import round_estimates
from foil_studio.annotate.health.sample import (
    HEALTH_KINDS,
    SHARES,
    VALIDATION,
    HealthError,
    HealthSample,
    nothing_to_validate,
    run_credits,
)
from foil_studio.data import store
from foil_studio.data.prediction_files import match_predictions


def import_predictions(db: sqlite_utils.Database, dataset: str, path: Path, name: str) -> dict[str, Any]:
    """Store a prediction file (`data.prediction_files`) as prediction set `name` of a dataset
    (replacing one of that name); every item a health sample can draw must have its prediction."""
    found = match_predictions(path, _frame(db, dataset))
    return _kept(db, dataset, name, str(path), found, {})


def _frame(db: sqlite_utils.Database, dataset: str) -> list[tuple[int, str, str]]:
    """(item id, source id, category) of every item a health sample can draw."""
    frame = store.item_sources(db, store.get_dataset(db, dataset)["id"], HEALTH_KINDS)
    if not frame:
        raise nothing_to_validate(dataset)
    return frame


def _kept(
    db: sqlite_utils.Database, dataset: str, name: str, source: str, found: Mapping[int, float], meta: dict[str, Any]
) -> dict[str, Any]:
    """Store the predictions (whether they are 0/1 labels noted) and say what was stored."""
    labels = all(value in (0.0, 1.0) for value in found.values())
    store.put_predictions(db, dataset, name, source, found, {"labels": labels, **meta})
    return {
        "dataset": dataset,
        "predictions": name,
        "items": len(found),
        "predicted_invalid": round(float(np.mean(list(found.values()))), 4),
        "labels": labels,
    }


def predictions_from_run(db: sqlite_utils.Database, dataset: str, run: str, name: str) -> dict[str, Any]:
    """Store a run's score of each item's altered caption with its image as prediction set `name`,
    where its family scores a pair by a probability that the caption fits (a VLM's yes-probability,
    an ITM match probability): that the altered caption fits is that the negative is invalid."""
    from foil_studio.analysis.scorers import REGISTRY

    row = store.get_run(db, dataset, run)
    family = REGISTRY.get(str(row["model"] or "").partition(":")[0])
    if family is None or not family.probability or row["run_type"] != "scores":
        usable = ", ".join(f.name for f in REGISTRY.values() if f.probability)
        raise HealthError(
            f"run {run!r} ({row['model'] or row['run_type']}) does not score a pair by a probability that the caption "
            f"fits the image; predictions need a run of {usable}"
        )
    frame = _frame(db, dataset)
    columns = store.run_columns(db, int(row["id"]))
    if columns.scores is None:
        raise HealthError(f"run {run!r} holds no scores")
    # an item of every caption-pair item kind holds its positive and its negative as captions 0 and 1 of image 0
    altered = columns.scores[:, 0, 1] if columns.scores.ndim == 3 else columns.scores[:, 1]
    scored = dict(zip(columns.item_ids.tolist(), altered.tolist(), strict=True))
    missing = [source for item, source, _ in frame if item not in scored]
    if missing:
        raise HealthError(
            f"run {run!r} scored {len(frame) - len(missing)} of the {len(frame)} items with a negative "
            f"(not {missing[0]!r}, ...); score the whole dataset first"
        )
    found = {item: _probability(scored[item], run, source, family.name) for item, source, _ in frame}
    return _kept(db, dataset, name, f"run {run}", found, {"run": run, "model": row["model"], "rule": family.rule})


ROUNDING = 1e-6  # a probability this far past 0 or 1 is rounding in the model's arithmetic, read as 0 or 1


def _probability(value: float, run: str, source: str, family: str) -> float:
    """A run's score of one item as a probability; a NaN (a failed score) or a score past 0 or 1 (not
    a probability: the run is not what its family says) refused, naming the run and the item."""
    value = float(value)
    if -ROUNDING <= value <= 1 + ROUNDING:  # False for NaN
        return min(max(value, 0.0), 1.0)
    said = "NaN (no score)" if value != value else f"{value:g}"
    raise HealthError(
        f"run {run!r} scores item {source!r} {said}, not a probability from 0 to 1; predictions need one on every "
        f"item: score the dataset again with {family}, or import a file of predictions"
    )


# An annotator's answer as a prediction that the negative is invalid: unsure is even odds.
PREDICTION_OF_VERDICT = {"invalid": 1.0, "valid": 0.0, "ambiguous": 0.5}


def predictions_from_answers(
    db: sqlite_utils.Database, dataset: str, batch: str, annotator: str, name: str
) -> dict[str, Any]:
    """Store one annotator's answers in a validate_negative batch of the dataset (a cheap pass over
    every item) as prediction set `name`: invalid 1, valid 0, unsure 0.5; their last answer per item."""
    row = store.get_batch(db, batch)
    if row["dataset"] != dataset or row["task_type"] != VALIDATION.name:
        raise HealthError(
            f"batch {batch!r} is a {row['task_type']} batch of {row['dataset']}; predictions from answers need a "
            f"{VALIDATION.name} batch of {dataset}"
        )
    answers = {
        label["item"]: VALIDATION.verdict_of_answer[label["answer"]["answer"]]
        for label in store.batch_labels(db, row["id"])
        if label["annotator"] == annotator and label["part"] == 0
    }
    if not answers:
        raise HealthError(f"{annotator!r} gave no answer in batch {batch!r}")
    frame = _frame(db, dataset)
    missing = [source for item, source, _ in frame if item not in answers]
    if missing:
        raise HealthError(
            f"{annotator!r} answered {len(frame) - len(missing)} of the {len(frame)} items with a negative in batch "
            f"{batch!r} (not {missing[0]!r}, ...): predictions need one on every item"
        )
    found = {item: PREDICTION_OF_VERDICT[answers[item]] for item, _, _ in frame}
    return _kept(
        db, dataset, name, f"answers of {annotator} in {batch}", found, {"batch": batch, "annotator": annotator}
    )


def powered_shares(sample: HealthSample, predictions: Mapping[int, float], name: str) -> dict[str, Any]:
    """The invalid share per category (with a decided item) and overall, plain and prediction-powered
    side by side, with the predictor's agreement with people and the human answers it was worth; the
    ambiguous and invalid-or-ambiguous shares alike (`other_shares`), powered by the same predictions
    (a valid interval whatever they track; narrower only where they track that share too)."""
    left_out = [item for items in sample.frame.values() for item in items if item not in predictions]
    if left_out:
        raise HealthError(
            f"the predictions {name!r} leave {len(left_out)} item(s) of {sample.dataset} without a prediction "
            "(items were added after they were imported?): import them again for every item"
        )
    result: dict[str, Any] = {"predictions": name, **_powered(sample, predictions, frozenset({"invalid"}))}
    result["leaderboard"] = None  # set by the report, which has the board
    result["other_shares"] = [
        {"share": words, "key": key, **_powered(sample, predictions, frozenset(counted_verdicts.split("+")))}
        for counted_verdicts, (key, words) in SHARES.items()
        if counted_verdicts != "invalid"
    ]
    return result


def _powered(sample: HealthSample, predictions: Mapping[int, float], counted: frozenset[str]) -> dict[str, Any]:
    """The share of verdicts in `counted` per category with a decided item and overall, plain and
    prediction-powered (from the rounds where the sample has an active batch)."""
    parts = {
        category: _category(sample, category, predictions, counted)
        for category in sorted(sample.frame)
        if any(sample.drawn[i] == category for i in sample.verdicts)
    }
    if not parts:
        return {"by_category": [], "overall": None}
    if sample.active:
        return _by_rounds(sample, predictions, parts, counted)
    category_of = sample.category_of or {c: c for c in parts}
    grouped: dict[str, list[str]] = {}
    for stratum in parts:
        grouped.setdefault(category_of[stratum], []).append(stratum)
    by_category = [{"category": c, **_strata_share(parts, names).as_dict()} for c, names in grouped.items()]
    # always combined, also over one stratum: the "all" row is Korn and Graubard's, as the report's overall
    outcomes, predicted, population = ({c: parts[c][k] for c in parts} for k in range(3))
    overall = powered_stratified_share(outcomes, predicted, population)
    return {
        "by_category": by_category,
        "overall": {"covers": sum(len(sample.frame[c]) for c in parts), **overall.as_dict()},
    }


def _strata_share(parts: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]], strata: list[str]) -> Powered:
    """The share over some strata of `parts` (outcomes, predictions on the decided items and on every
    item): one stratum's own, or the strata combined (a category's prediction bins; all of them)."""
    if len(strata) == 1:
        y, f, everything = parts[strata[0]]
        return powered_stratum_share(y, f, everything)
    outcomes, predicted, population = ({c: parts[c][k] for c in strata} for k in range(3))
    return powered_stratified_share(outcomes, predicted, population)


def _by_rounds(
    sample: HealthSample,
    predictions: Mapping[int, float],
    parts: Mapping[str, tuple[np.ndarray, ...]],
    counted: frozenset[str],
) -> dict[str, Any]:
    """The shares of a sample with an active batch, plain and prediction-powered, from its rounds."""
    plain, powered = round_estimates(sample, counted), round_estimates(sample, counted, predictions)
    by_category = []
    for category, (y, f, _) in parts.items():
        size = len(sample.frame[category])
        found = _side_by_side(
            active.stratum_share(plain[category], size),
            active.stratum_share(powered[category], size),
            powered[category].variance,
            powered[category].weight,
            (y, f),
            ([int(y.sum())], [len(y)], [size]),
        )
        by_category.append({"category": category, **found.as_dict()})
    sizes = [len(sample.frame[c]) for c in parts]
    weights = np.array(sizes, dtype=float) / sum(sizes)
    overall = _side_by_side(
        active.stratified_share([plain[c] for c in parts], sizes),
        active.stratified_share([powered[c] for c in parts], sizes),
        float(weights**2 @ [powered[c].variance for c in parts]),
        None,
        (np.concatenate([y for y, _, _ in parts.values()]), np.concatenate([f for _, f, _ in parts.values()])),
        ([int(y.sum()) for y, _, _ in parts.values()], [len(y) for y, _, _ in parts.values()], sizes),
    )
    return {"by_category": by_category, "overall": {"covers": sum(sizes), **overall.as_dict()}}


def _side_by_side(
    plain: Share,
    powered: Share,
    variance: float,
    weight: float | None,
    decided: tuple[np.ndarray, np.ndarray],
    counts: tuple[list[int], list[int], list[int]],
) -> Powered:
    """The plain and the prediction-powered share, the narrower reported; `decided`: people's outcomes
    and the predictions on the decided items; `counts`: per category the outcomes counted, the decided
    items and the items, for the reported interval's worth."""
    reported = powered if powered.high - powered.low < plain.high - plain.low else plain
    return Powered(reported, plain, powered, variance, weight, *decided, counts)


def _category(
    sample: HealthSample, category: str, predictions: Mapping[int, float], counted: frozenset[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """People's outcomes (1: in `counted`) and the predictions on the category's decided items, and
    the predictions on all its items."""
    decided = sorted(i for i, verdict in sample.verdicts.items() if sample.drawn[i] == category)
    outcomes = np.array([sample.verdicts[i] in counted for i in decided], dtype=float)
    predicted = np.array([predictions[i] for i in decided])
    return outcomes, predicted, np.array([predictions[i] for i in sample.frame[category]])


def powered_leaderboard(
    db: sqlite_utils.Database,
    sample: HealthSample,
    predictions: Mapping[int, float],
    board: Mapping[str, Any] | None,
    ties: str | None,
) -> dict[str, Any] | None:
    """Each leaderboard run's accuracy on valid items, prediction-powered (its credit on every item
    and the predicted validity 1 - f of every item) beside the plain figure; None without a board."""
    if not board or not board.get("runs"):
        return None
    categories = sorted({sample.drawn[i] for i in sample.verdicts})
    credit = {row["run"]: run_credits(db, sample.dataset, row["run"], ties) for row in board["runs"]}
    every = [i for c in categories for i in sample.frame[c]]
    runs = [name for name, given in credit.items() if all(i in given for i in every)]
    skipped = {name: "did not score every item of the sampled categories" for name in credit if name not in runs}
    if not runs:
        return {"runs": [], "skipped": skipped}
    decided = {c: sorted(i for i in sample.verdicts if sample.drawn[i] == c) for c in categories}
    found = powered_valid_accuracy(
        {c: [sample.verdicts[i] == "valid" for i in items] for c, items in decided.items()},
        {c: [1 - predictions[i] for i in items] for c, items in decided.items()},
        {c: [[credit[r][i] for r in runs] for i in items] for c, items in decided.items()},
        {c: [1 - predictions[i] for i in sample.frame[c]] for c in categories},
        {c: [[credit[r][i] for r in runs] for i in sample.frame[c]] for c in categories},
        runs,
    )
    plain = {row["run"]: row for row in board["runs"]}
    n = len(sample.verdicts)
    rows = []
    for r, name in enumerate(runs):
        interval = [round(100 * float(found.low[r]), 2), round(100 * float(found.high[r]), 2)]
        width, plain_width = (
            interval[1] - interval[0],
            plain[name]["valid_interval"][1] - plain[name]["valid_interval"][0],
        )
        narrower = width < plain_width
        rows.append(
            {
                "run": name,
                "plain": plain[name]["valid"],
                "plain_interval": plain[name]["valid_interval"],
                "prediction_powered": round(100 * float(found.estimate[r]), 2),
                "interval": interval,
                "reported": "prediction-powered" if narrower else "plain",
                "worth_human_answers": round(worth_of_widths(n, plain_width, width, len(every)), 1),
            }
        )
    return {"runs": rows, "pairs": _powered_pairs(found, board, n, len(every)), "skipped": skipped}


def _powered_pairs(found: PoweredAccuracy, board: Mapping[str, Any], n: int, items: int) -> list[dict[str, Any]]:
    """Each pair's difference of accuracy on valid items, prediction-powered beside the plain one (`n`
    decided of the sampled categories' `items`)."""
    rows = []
    for pair in board.get("pairs", []):
        key = (pair["a"], pair["b"])
        if key not in found.difference:
            continue
        estimate, low, high = found.difference[key]
        interval = [round(100 * low, 2), round(100 * high, 2)]
        width, plain_width = interval[1] - interval[0], pair["interval"][1] - pair["interval"][0]
        rows.append(
            {
                "a": pair["a"],
                "b": pair["b"],
                "plain": pair["difference"],
                "plain_interval": pair["interval"],
                "prediction_powered": round(100 * estimate, 2),
                "interval": interval,
                "reported": "prediction-powered" if width < plain_width else "plain",
                "worth_human_answers": round(worth_of_widths(n, plain_width, width, items), 1),
            }
        )
    return rows
