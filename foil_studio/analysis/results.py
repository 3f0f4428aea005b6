"""Turn a stored run (our scores or imported decisions) into the metrics of `./foil metrics`.

Scores and imported outcomes both become arrays of per-item outcomes first, then go through the
same functions of ``analysis.metrics``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import sqlite_utils

from foil_studio.analysis import metrics as m
from foil_studio.analysis.metric_families import run_family
from foil_studio.analysis.metric_families.base import BOOTSTRAP, Run, Settings, UnsupportedRunError
from foil_studio.data import formats, store, subsets
from foil_studio.data.plain_text import figure


def load_run(db: sqlite_utils.Database, dataset: str, run: str, subset: str | None = None) -> Run:
    """The scored items of one run of a dataset (of one named subset, `data.subsets`), as columns."""
    return store.run_columns(db, store.get_run(db, dataset, run)["id"], truth_flag=subsets.truth_flag(subset))


def source_format(db: sqlite_utils.Database, dataset: str) -> formats.Format:
    """The format a dataset was imported from (its metric names, tie rule, groups and category
    types), or the record of its maker (`formats.MADE_HERE`: the demo, BiVLC's construction)."""
    return formats.source_format(store.get_dataset(db, dataset)["source_format"])


def tie_rule(source: formats.Format, ties: str | None) -> dict[str, str]:
    """How a tie counts in a summary, and why: the benchmark's own rule unless `ties` overrides it."""
    if ties is None:
        return {"rule": source.ties, "why": f"{source.name}'s own rule: {source.ties_because}"}
    m.tie_credit(ties)  # refuses an unknown rule
    own = f"{source.name}'s own rule is {source.ties}" if ties != source.ties else f"also {source.name}'s own rule"
    return {"rule": ties, "why": f"chosen for this table instead of the benchmark's rule ({own})"}


# Bumped whenever the summary's keys change (3: BiVLC's types moved to `by_type`, retrieval's
# `chance`; 4: the tie rule's reason in words; 5: `by_type` only where the format declares
# types, not for any group benchmark with `_` in its categories; 6: `over_seeds` where the
# categories are seeds): summaries stored by an older version are then computed anew, never served stale.
SUMMARY_SHAPE = 6


def run_metrics(
    db: sqlite_utils.Database,
    dataset: str,
    run: str,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    subset: str | None = None,
    ties: str | None = None,
) -> dict[str, Any]:
    """The metrics JSON of `./foil metrics` (README, Command line) for one run of one dataset (on a
    named subset of its items: `subset` then names it in the result), ties counted by the benchmark's rule or by `ties`
    (`wrong`, `right` or `half`); `tie_rule` says which, `ties` how many there were.

    Computed once per run, subset, tie rule, bootstrap size and seed, then stored until the run's scores change.
    """
    run_id = store.get_run(db, dataset, run)["id"]
    flag = subsets.truth_flag(subset)
    source = source_format(db, dataset)
    rule = tie_rule(source, ties)
    settings = f"shape={SUMMARY_SHAPE};n_boot={n_boot};seed={seed};ties={rule['rule']}" + (
        f";subset={subset}" if flag else ""
    )
    stored = store.get_run_summary(db, run_id, settings)
    if stored is not None:
        return stored
    columns = store.run_columns(db, run_id, truth_flag=flag)
    if not len(columns):
        raise UnsupportedRunError(
            f"run {run!r} on {dataset!r} has no scored items" + (f" in subset {subset!r}" if flag else "")
        )
    summary = summarize_run(columns, Settings(source, rule["rule"], n_boot, seed))
    named = {"subset": subset} if flag else {}
    decided = {} if columns.scores is None else {"tie_rule": rule}  # imported decisions hold no ties
    result = json.loads(
        json.dumps({"dataset": dataset, "run": run, **named, **decided, **summary})
    )  # the stored form, whichever call reads it
    store.put_run_summary(db, run_id, settings, result)
    return result


def summarize_run(run: Run, settings: Settings) -> dict[str, Any]:
    """The metrics of a run: its family's summary (`MetricFamily.summarize`)."""
    return run_family(run).summarize(run, settings)


def chance_levels(summary: Mapping[str, Any], key: str, categories: Sequence[str]) -> list[float | None]:
    """The random-guess level of `key` for each of `categories` ("(all)" for overall): the
    summary's own where the items decide it (retrieval), else the metric's constant."""
    own = summary.get("chance", {})
    return [own.get(category, {}).get(key, m.chance_level(key)) for category in categories]


def run_summaries(
    db: sqlite_utils.Database,
    dataset: str,
    *,
    n_boot: int = BOOTSTRAP,
    subset: str | None = None,
    ties: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Run name -> its metrics JSON (or ``{"note": why not}``) for every run of a dataset, with
    the same bootstrap (size and seed) as ``./foil metrics``: the app and the CLI show one number."""
    summaries: dict[str, dict[str, Any]] = {}
    for run in store.run_names(db, dataset):
        try:
            summaries[run] = run_metrics(db, dataset, run, n_boot=n_boot, subset=subset, ties=ties)
        except UnsupportedRunError as error:
            summaries[run] = {"note": str(error)}
    return summaries


def runs_overview(runs: list[dict[str, Any]], summaries: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per run (rows of `store.list_runs`): model, run type, items and its headline figures."""
    return [{**run, **summaries[run["run"]].get("metrics", summaries[run["run"]])} for run in runs]


RUN_COLUMNS = (
    "run",
    "dataset",
    "model",
    "pretrained",
    "run_type",
    "precision",
    "n_items",
    "note",
)  # `runs_overview`'s columns that are not metrics


def overview_metrics(row: Mapping[str, Any]) -> list[str]:
    """The headline metrics of a `runs_overview` row (not its descriptive columns, means or counts)."""
    return [k for k in row if k not in RUN_COLUMNS and not k.startswith(("mean_", "n_"))]


def category_table(
    summaries: Mapping[str, dict[str, Any]], runs: list[str], key: str, level: str = "category"
) -> list[dict[str, Any]]:
    """Per category (or per `level` = "type", BiVLC's types) and overall, the metric `key` of
    each run with its 95% interval and, for runs of scores, the number of tied comparisons."""
    table: dict[str, dict[str, Any]] = {}
    for run in runs:
        result = summaries[run]
        for category, values in result.get(f"by_{level}", {}).items():
            row = table.setdefault(category, {"category": category, "n": values["n"]})
            row[run] = values.get(key)
            row[f"{run} 95% CI"] = result.get(f"{level}_intervals", {}).get(category, {}).get(key)
            if "tie_rule" in result:
                row[f"{run} ties"] = values.get("ties", 0)
        overall = table.setdefault("(all)", {"category": "(all)", "n": result["n"]})
        overall[run] = result["metrics"].get(key)
        overall[f"{run} 95% CI"] = result["intervals"].get(key)
        if "tie_rule" in result:
            overall[f"{run} ties"] = result.get("ties", 0)
    return list(table.values())


def tie_rules_said(summaries: Mapping[str, dict[str, Any]], runs: list[str]) -> list[str]:
    """One sentence per distinct tie rule among the runs' summaries (for the page's caption)."""
    said = {
        f"A tie counts as {s['tie_rule']['rule']}: {s['tie_rule']['why']}."
        for s in (summaries[r] for r in runs)
        if "tie_rule" in s
    }
    return sorted(said)


def over_seeds_sentence(over_seeds: Mapping[str, Mapping[str, Any]]) -> str:
    """The seeds' mean ± standard error of each figure (a set with one category per seed), in words.

    >>> over_seeds_sentence({"precision_at_1": {"mean": 41.2, "se": 0.35, "n_seeds": 5}})
    "over 5 seeds (mean ± standard error of the seeds' figures): precision_at_1 41.20 ± 0.35"
    """
    n = next(iter(over_seeds.values()))["n_seeds"]
    figures = "; ".join(f"{metric} {figure(v['mean'])} ± {figure(v['se'])}" for metric, v in over_seeds.items())
    return f"over {n} seeds (mean ± standard error of the seeds' figures): {figures}"


def error_bars(values: Sequence[float], intervals: Sequence[Sequence[float] | float | None]) -> dict[str, Any]:
    """Plotly `error_y` for bars at `values` with asymmetric 95% intervals (none where absent:
    None, or a table's missing cell, NaN).

    >>> error_bars([50.0, float("nan")], [(40.0, 65.0), float("nan")])["array"]
    [15.0, 0.0]
    """
    lows = [v - i[0] if isinstance(i, Sequence) else 0.0 for v, i in zip(values, intervals)]
    highs = [i[1] - v if isinstance(i, Sequence) else 0.0 for v, i in zip(values, intervals)]
    return {"type": "data", "symmetric": False, "array": highs, "arrayminus": lows, "thickness": 1}


# The keys of a `run_metrics` document that `metric_rows` lays out as rows.
TABLED_KEYS = ("metrics", "intervals", "by_category", "category_intervals", "by_type", "type_intervals", "ties")


def metric_rows(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of a `run_metrics` document, in the order of the app's table and `./foil metrics`:
    the whole dataset ("(all)"), then each type (where a benchmark has types; `per` then says
    which axis a row is on), then each category; per row one metric with its value, its 95%
    `interval` (a pair, or None where too few items), and the row's `n` and `ties`."""
    overall = {"n": result["n"], **result["metrics"], **({"ties": result["ties"]} if "ties" in result else {})}
    levels = [("type", "by_type", "type_intervals")] if "by_type" in result else []  # BiVLC: its types
    rows = _metric_rows("(all)", overall, result["intervals"], "" if levels else None)
    for level, values, intervals in [*levels, ("category", "by_category", "category_intervals")]:
        for category, figures in result[values].items():
            rows += _metric_rows(
                category, figures, result.get(intervals, {}).get(category, {}), level if levels else None
            )
    return rows


def _metric_rows(
    category: str, figures: Mapping[str, Any], intervals: Mapping[str, Any], level: str | None = None
) -> list[dict[str, Any]]:
    """One row per metric of a category (`level`, a column, names the axis where a benchmark has two)."""
    counts: dict[str, Any] = {k: figures[k] for k in ("n", "ties") if k in figures}
    per = {} if level is None else {"per": level}
    return [
        {"category": category, **per, "metric": metric, "value": value, "interval": intervals.get(metric), **counts}
        for metric, value in figures.items()
        if metric not in ("n", "ties")
    ]
