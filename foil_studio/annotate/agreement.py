"""Inter-annotator agreement, wrapping the libraries that define each coefficient.

Input is a ratings table: one row per unit (item and question), one column per annotator,
a label or missing. Every coefficient says how many units it rests on; an undefined one is
``None`` with its reason in ``undefined``, never 0 or a bare NaN.

* percent agreement: mean over units rated at least twice of the share of agreeing rater pairs;
* Cohen's kappa per annotator pair on shared units and their mean, as BiVLC (computed from the
  confusion matrix for the bootstrap's sake; tests hold it equal to scikit-learn's);
* Fleiss' kappa (statsmodels) when every unit has the same number of raters;
* Krippendorff's alpha (``krippendorff``), nominal or ordinal, for any pattern of missing labels;
* Gwet's AC1, which stays meaningful when one answer dominates and kappa collapses (the "kappa
  paradox": most generated negatives are valid, so chance agreement is high). Written here from
  Gwet's formula because the ``irrcac`` package pins scipy 1.12 and with it NumPy < 2, which
  the rest of the stack (pyarrow) cannot run with; the doctest reproduces irrCAC's value.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from typing import Any, Literal, cast

import krippendorff
import numpy as np
import pandas as pd

from foil_studio.annotate import agreement_resampling as resampling
from foil_studio.annotate.task_types import answer_questions, task_type
from foil_studio.data.plain_text import interval_text

KAPPA_PARADOX = (
    "Kappa corrects for the agreement expected by chance; when one answer dominates (most negatives "
    "are valid), that expectation is high and kappa drops even when annotators rarely disagree. "
    "Gwet's AC1 models chance differently and stays close to the raw agreement."
)


def coded_label(type_name: str, answer: Mapping[str, Any], question: str = "answer") -> str:
    """The label agreement is computed on, for one question of an answer, as the task type codes
    it: pick_image is "image" vs "none", as BiVLC reports; other answers are taken as given.

    >>> coded_label("pick_image", {"answer": "2"}), coded_label("rank_captions", {"rank_0": "1", "rank_1": "3"}, "rank_1")
    ('image', '3')
    """  # noqa: E501
    return task_type(type_name).agreement_code(str(answer[question]))


def ratings_table(
    labels: Sequence[Mapping[str, Any]], type_name: str, questions: tuple[str, ...] | None = None
) -> pd.DataFrame:
    """Units by annotators, holding each annotator's label or NaN.

    A unit is (item, part) for single-question tasks and (item, part, question) when several
    questions are asked (rank_captions, compare_negatives): each question is a rating of its own.
    """
    questions = questions or answer_questions(type_name)
    rows = [
        {
            "unit": (label["item"], label["part"], *((q,) if len(questions) > 1 else ())),
            "annotator": label["annotator"],
            "label": coded_label(type_name, label["answer"], q),
        }
        for label in labels
        for q in questions
        if q in label["answer"]
    ]
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows).pivot(index="unit", columns="annotator", values="label")
    frame.columns.name = None
    return frame


def task_agreement(
    labels: Sequence[Mapping[str, Any]], type_name: str, *, n_boot: int = 500, seed: int = 0
) -> dict[str, Any]:
    """`agreement_report` of a task type's labels on its scale (ordinal for ranks).

    Task types that ask several questions report the coefficients over all their questions together
    (each question of each item one unit) and, under ``by_question``, for each question alone.
    """
    questions, level = answer_questions(type_name), task_type(type_name).agreement_level
    report = agreement_report(ratings_table(labels, type_name), level=level, n_boot=n_boot, seed=seed)
    if len(questions) > 1:
        report["by_question"] = {
            q: agreement_report(ratings_table(labels, type_name, (q,)), level=level, n_boot=n_boot, seed=seed)
            for q in questions
        }
    return {**report, "level": level}


def percent_agreement(table: pd.DataFrame) -> tuple[float | None, int]:
    """Mean share of agreeing rater pairs over units rated at least twice, and how many units.

    >>> percent_agreement(pd.DataFrame({"a": ["x", "x", "y"], "b": ["x", "y", None], "c": ["x", "x", "y"]}))
    (77.77777777777777, 3)
    """
    return _percent_from_codes(_codes(table).to_numpy(dtype=float)) if not table.empty else (None, 0)


def _percent_from_codes(codes: np.ndarray) -> tuple[float | None, int]:
    n_classes = int(np.nanmax(codes)) + 1 if np.isfinite(codes).any() else 0
    counts = (
        np.stack([(codes == c).sum(axis=1) for c in range(n_classes)], axis=1)
        if n_classes
        else np.zeros((len(codes), 1))
    )
    raters = counts.sum(axis=1)
    rated = raters >= 2
    if not rated.any():
        return None, 0
    agreeing = (counts[rated] * (counts[rated] - 1)).sum(axis=1) / (raters[rated] * (raters[rated] - 1))
    return 100.0 * float(agreeing.mean()), int(rated.sum())


def cohen_pairs(table: pd.DataFrame) -> list[dict[str, Any]]:
    """Cohen's kappa of every annotator pair on their shared units (None with a reason if undefined).

    Computed from the pair's confusion matrix (equal to scikit-learn's ``cohen_kappa_score``, which
    the tests check) because the bootstrap calls it thousands of times.
    """
    codes = _codes(table).to_numpy(dtype=float)
    return [
        _pair_entry(str(a), str(b), codes[:, i], codes[:, j])
        for (i, a), (j, b) in combinations(enumerate(table.columns), 2)
    ]


def _pair_entry(a: str, b: str, x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    kappa, n, reason = cohen_kappa(x, y)
    return {"a": a, "b": b, "n": n, "kappa": kappa, **({"undefined": reason} if reason else {})}


def cohen_kappa(x: np.ndarray, y: np.ndarray) -> tuple[float | None, int, str | None]:
    """Kappa of two raters' integer codes (NaN = missing) on the units both rated.

    >>> cohen_kappa(np.array([0, 0, 1, 1.0]), np.array([0, 1, 1, 1.0]))[0]
    0.5
    """
    both = ~(np.isnan(x) | np.isnan(y))
    x, y, n = x[both].astype(int), y[both].astype(int), int(both.sum())
    if n < 2:
        return None, n, f"only {n} shared item(s); kappa needs at least 2"
    k = max(x.max(), y.max()) + 1
    confusion = np.bincount(x * k + y, minlength=k * k).reshape(k, k) / n
    observed = np.trace(confusion)
    expected = float(confusion.sum(axis=1) @ confusion.sum(axis=0))
    if expected == 1.0:
        return None, n, "both annotators gave one and the same class throughout: kappa is undefined"
    return float((observed - expected) / (1 - expected)), n, None


def fleiss(table: pd.DataFrame) -> tuple[float | None, int, str | None]:
    """Fleiss' kappa (statsmodels) when every unit has the same number of raters, whoever they are."""
    counts = table.notna().sum(axis=1)
    if counts.empty or counts.max() < 2:
        return None, 0, "no item has two or more labels"
    if counts.nunique() != 1:
        return None, int((counts >= 2).sum()), "raters per item vary; use Krippendorff's alpha"
    codes = _codes(table).to_numpy(dtype=float)
    per_unit = np.array([row[~np.isnan(row)] for row in codes], dtype=int)  # the k labels of each unit
    from statsmodels.stats.inter_rater import aggregate_raters  # here: statsmodels takes a second to import

    aggregated, _ = aggregate_raters(per_unit)
    return fleiss_from_counts(aggregated)


def fleiss_from_counts(counts: np.ndarray) -> tuple[float | None, int, str | None]:
    """Fleiss' kappa (statsmodels) from a units-by-answers table of vote counts, as crowd
    validations publish them (VALSE's three votes per foil): no rater identities needed, but the
    same number of votes on every unit.

    >>> round(fleiss_from_counts(np.array([[3, 0, 0], [2, 1, 0], [0, 3, 0], [1, 1, 1]]))[0], 3)
    0.268
    """
    counts = np.asarray(counts, dtype=int)
    totals = counts.sum(axis=1)
    if not len(counts) or totals.max() < 2:
        return None, 0, "no item has two or more labels"
    if len(set(totals.tolist())) != 1:
        return None, int((totals >= 2).sum()), "votes per item vary: Fleiss' kappa needs the same number on every item"
    used = counts[:, counts.sum(axis=0) > 0]
    if used.shape[1] < 2:
        return None, len(counts), "every label is the same class: kappa is undefined"
    from statsmodels.stats.inter_rater import fleiss_kappa  # here: statsmodels takes a second to import

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value = float(fleiss_kappa(used))
    return (
        (None, len(counts), "chance agreement is 1: kappa is undefined")
        if math.isnan(value)
        else (value, len(counts), None)
    )


def _fleiss_from_codes(codes: np.ndarray) -> float | None:
    """Fleiss' kappa of a code matrix (NaN = missing), the bootstrap's way to `fleiss`: None where
    the units rated twice or more do not all have the same number of raters."""
    n_classes = int(np.nanmax(codes)) + 1 if np.isfinite(codes).any() else 0
    counts = np.stack([(codes == c).sum(axis=1) for c in range(n_classes)], axis=1) if n_classes else codes[:, :0]
    rated = counts[counts.sum(axis=1) >= 1]
    return fleiss_from_counts(rated)[0] if len(rated) else None


def krippendorff_alpha(table: pd.DataFrame, level: str = "nominal") -> tuple[float | None, int, str | None]:
    """Krippendorff's alpha over units with at least two labels (missing labels allowed)."""
    usable = table[table.notna().sum(axis=1) >= 2]
    if usable.empty:
        return None, 0, "no item has two or more labels"
    value = _alpha_from_codes(_codes(usable, ordinal=level == "ordinal").to_numpy(dtype=float), level)
    return (
        (value, len(usable), None)
        if value is not None
        else (None, len(usable), "every label is the same class: alpha is undefined")
    )


def _alpha_from_codes(codes: np.ndarray, level: str) -> float | None:
    usable = codes[(~np.isnan(codes)).sum(axis=1) >= 2]
    if len(usable) == 0 or len(np.unique(usable[~np.isnan(usable)])) < 2:
        return None
    scale = cast(
        Literal["nominal", "ordinal", "interval", "ratio"], level
    )  # krippendorff's names, as task types use them
    return float(krippendorff.alpha(reliability_data=usable.T, level_of_measurement=scale))


def gwet_ac1(table: pd.DataFrame) -> tuple[float | None, int, str | None]:
    """Gwet's AC1 over units with at least two labels, any number of raters per unit.

    >>> round(gwet_ac1(pd.DataFrame({"a": ["x", "y", "x", "x"], "b": ["x", "y", "y", "x"]}))[0], 4)
    0.5294
    """
    if table.empty:
        return None, 0, "no item has two or more labels"
    codes = _codes(table).to_numpy(dtype=float)
    n = int(((~np.isnan(codes)).sum(axis=1) >= 2).sum())
    value = _ac1_from_codes(codes)
    if value is None:
        return (
            None,
            n,
            "no item has two or more labels" if n == 0 else "every label is the same class: AC1 says nothing",
        )
    return value, n, None


def _ac1_from_codes(codes: np.ndarray) -> float | None:
    """AC1 = (p_a - p_e) / (1 - p_e) with p_e = sum_k pi_k (1 - pi_k) / (q - 1) (Gwet 2008, 2014)."""
    n_classes = int(np.nanmax(codes)) + 1 if np.isfinite(codes).any() else 0
    if n_classes < 2:
        return None
    counts = np.stack([(codes == c).sum(axis=1) for c in range(n_classes)], axis=1).astype(float)
    raters = counts.sum(axis=1)
    rated = raters >= 2
    if not rated.any():
        return None
    observed = float(((counts[rated] * (counts[rated] - 1)).sum(axis=1) / (raters[rated] * (raters[rated] - 1))).mean())
    shares = (counts[raters >= 1] / raters[raters >= 1, None]).mean(axis=0)
    chance = float((shares * (1 - shares)).sum() / (n_classes - 1))
    return (observed - chance) / (1 - chance)


def _codes(table: pd.DataFrame, ordinal: bool = False) -> pd.DataFrame:
    """Labels as integer codes (NaN kept); ordinal labels keep their numeric order."""
    present = pd.unique(table.to_numpy().ravel())
    values = sorted((v for v in present if not pd.isna(v)), key=lambda v: float(v) if ordinal else str(v))
    index = {v: i for i, v in enumerate(values)}
    return table.apply(lambda column: column.map(index))


def bootstrap(
    statistic: Callable[[np.ndarray], float | None], codes: np.ndarray, *, n_boot: int = 500, seed: int = 0
) -> tuple[float, float] | None:
    """Percentile 95% interval of a coefficient of the code matrix over resampled units."""
    if len(codes) == 0 or n_boot == 0:
        return None
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n_boot):
        sample = codes[rng.integers(0, len(codes), len(codes))]
        value = statistic(sample)
        if value is not None:
            values.append(value)
    if len(values) < n_boot / 2:
        return None
    return float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))


def _intervals(
    statistics: Mapping[str, Callable[[np.ndarray], float | None]],
    codes: np.ndarray,
    level: str,
    n_boot: int,
    seed: int,
) -> dict[str, tuple[float, float] | None]:
    """Each coefficient's bootstrap interval: all resamples at once where `agreement_resampling`
    computes the scale's coefficients, else one resample at a time (the same resamples either way)."""
    if level not in resampling.LEVELS or len(codes) == 0 or n_boot == 0:
        return {key: bootstrap(fn, codes, n_boot=n_boot, seed=seed) for key, fn in statistics.items()}
    values = resampling.replicate_values(codes, resampling.resample_counts(len(codes), n_boot, seed), level)
    return {key: resampling.percentile_interval(values[key], n_boot) for key in statistics}


def agreement_report(
    table: pd.DataFrame, *, level: str = "nominal", n_boot: int = 500, seed: int = 0
) -> dict[str, Any]:
    """Every coefficient with its item count, 95% intervals and reasons for undefined ones."""
    undefined: dict[str, str] = {}
    percent, n_percent = percent_agreement(table)
    if percent is None:
        undefined["percent_agreement"] = "no item has two or more labels"
    pairs = cohen_pairs(table)
    defined = [p["kappa"] for p in pairs if p["kappa"] is not None]
    cohen_mean = float(np.mean(defined)) if defined else None
    if cohen_mean is None:
        undefined["cohen_mean"] = "no annotator pair has a defined kappa"
    coefficients = {
        "fleiss": fleiss(table),
        "krippendorff_alpha": krippendorff_alpha(table, level),
        "gwet_ac1": gwet_ac1(table),
    }
    for key, (value, _, reason) in coefficients.items():
        if value is None and reason:
            undefined[key] = reason
    codes = _codes(table, ordinal=level == "ordinal").to_numpy(dtype=float) if not table.empty else np.zeros((0, 0))
    statistics: dict[str, Callable[[np.ndarray], float | None]] = {
        "percent_agreement": lambda c: _percent_from_codes(c)[0],
        "cohen_mean": lambda c: _mean_or_none(
            [k for i, j in combinations(range(c.shape[1]), 2) if (k := cohen_kappa(c[:, i], c[:, j])[0]) is not None]
        ),
        "fleiss": _fleiss_from_codes,
        "krippendorff_alpha": lambda c: _alpha_from_codes(c, level),
        "gwet_ac1": _ac1_from_codes,
    }
    intervals = _intervals(statistics, codes, level, n_boot, seed)
    return {
        "n_items": int(len(table)),
        "n_labels": int(table.notna().sum().sum()) if not table.empty else 0,
        "percent_agreement": percent,
        "n_items_agreement": n_percent,
        "cohen_pairs": pairs,
        "cohen_mean": cohen_mean,
        **{key: value for key, (value, _, _) in coefficients.items()},
        "n_items_by_coefficient": {key: n for key, (_, n, _) in coefficients.items()},
        "intervals": intervals,
        "undefined": undefined,
        "note": KAPPA_PARADOX,
    }


COEFFICIENTS = ("percent_agreement", "cohen_mean", "fleiss", "krippendorff_alpha", "gwet_ac1")
# How each coefficient is named where people read (tables, the protocol paragraph).
COEFFICIENT_NAMES = {
    "percent_agreement": "Percent agreement",
    "cohen_mean": "Cohen's kappa, mean over annotator pairs",
    "fleiss": "Fleiss' kappa",
    "krippendorff_alpha": "Krippendorff's alpha",
    "gwet_ac1": "Gwet's AC1",
}


def coefficient_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The report's coefficients as rows, named in words: value, 95% interval ("low to high"),
    why undefined. The page, the CLI and the protocol paragraph all read these rows."""
    rows = []
    for key in COEFFICIENTS:
        rows.append(
            {
                "coefficient": COEFFICIENT_NAMES[key],
                "value": report[key],
                "95% interval": interval_text(report["intervals"].get(key)),
                "undefined because": report["undefined"].get(key, ""),
            }
        )
    return rows


def question_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per question of a multi-question task (compare_negatives, rank_captions), its items and
    coefficients; a question in words where the report has them (`question_words`)."""
    words = report.get("question_words", {})
    return [
        {"question": words.get(question, question), "items": part["n_items"], **{k: part[k] for k in COEFFICIENTS}}
        for question, part in report.get("by_question", {}).items()
    ]


def _mean_or_none(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def kappa_matrix(pairs: list[dict[str, Any]]) -> pd.DataFrame:
    """Annotator x annotator Cohen's kappa (symmetric; NaN where undefined or not shared)."""
    names = sorted({p["a"] for p in pairs} | {p["b"] for p in pairs})
    matrix = pd.DataFrame(np.nan, index=names, columns=names)
    for pair in pairs:
        if pair["kappa"] is not None:
            matrix.loc[pair["a"], pair["b"]] = matrix.loc[pair["b"], pair["a"]] = pair["kappa"]
    return matrix
