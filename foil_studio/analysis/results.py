"""Turn a stored run (our scores or imported decisions) into the metrics of `cli.py metrics`.

Scores and imported outcomes both become arrays of per-item outcomes first, then go through the
same functions of ``analysis.metrics``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sqlite_utils

from foil_studio.analysis import metrics as m
from foil_studio.data import formats, item_kinds, store, subsets
from foil_studio.data.plain_text import figure

Run = store.RunColumns


# Resamples behind every 95% interval of a run, in the app and the CLI alike (seed 0).
BOOTSTRAP = 1000


class UnsupportedRunError(store.StoreError):
    """A run holds nothing the metrics can use (say, candidate-image scores)."""


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


@dataclass(frozen=True)
class Settings:
    """How a run becomes metrics: its source format (metric names, groups), the tie rule
    (`analysis.metrics.TIE_RULES`) and the bootstrap behind every interval."""

    source: formats.Format
    ties: str = "wrong"
    n_boot: int = BOOTSTRAP
    seed: int = 0


def summarize_run(run: Run, settings: Settings) -> dict[str, Any]:
    """The metrics of a run: its family's summary (`MetricFamily.summarize`)."""
    return run_family(run).summarize(run, settings)


def item_summary(family: MetricFamily, run: Run, settings: Settings) -> dict[str, Any]:
    """A family's outcomes per item summarized overall and per category, the source's groups
    scored, and every key under the benchmark's own name."""
    outcomes, tied = family.outcomes(run, settings.ties)
    macro = ("accuracy_micro", "accuracy_macro") if family.macro else None
    summary = m.summarize(outcomes, run.categories, macro=macro, n_boot=settings.n_boot, seed=settings.seed, ties=tied)
    if family.extend is not None:
        family.extend(summary, run, outcomes, settings)
    for group in settings.source.groups:
        _add_group_accuracy(summary, run, outcomes[family.headline], group, settings)
    summary = _renamed(summary, settings.source.metric_names)
    if settings.source.categories_are_seeds:
        summary["over_seeds"] = over_seeds(summary["by_category"])
    return summary


def over_seeds(by_category: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Each metric's mean and standard error over the categories, where each category is one
    seed's perturbation set (ARO's order sets): `{metric: {mean, se, n_seeds}}`."""
    metrics = [k for k in next(iter(by_category.values()), {}) if k not in ("n", "ties")]
    result = {}
    for metric in metrics:
        mean, se = m.mean_and_standard_error([figures[metric] for figures in by_category.values()])
        result[metric] = {"mean": mean, "se": se, "n_seeds": len(by_category)}
    return result


def _add_group_accuracy(summary: dict[str, Any], run: Run, credits: np.ndarray, group: str, settings: Settings) -> None:
    """`{group}_accuracy`: the share of the source's item groups (What'sUp's pairs, sets) whose
    every item is right (with half-counted ties, the product of their credits)."""
    members: dict[str, float] = {}
    category_of: dict[str, str] = {}
    for value, groups, category in zip(credits, run.groups, run.categories):
        if groups and group in groups:
            members[groups[group]] = members.get(groups[group], 1.0) * float(value)
            category_of[groups[group]] = str(category)
    if not members:
        return
    key = f"{group}_accuracy"
    scores, categories = np.array(list(members.values())), np.array([category_of[g] for g in members])
    summary["metrics"][key] = m.percent(scores)
    summary["intervals"][key] = m.share_interval(scores, n_boot=settings.n_boot, seed=settings.seed)
    for category in sorted(set(categories.tolist())):
        summary["by_category"][category][key] = m.percent(scores[categories == category])
    summary.setdefault("groups", {})[group] = len(members)


def _renamed(summary: dict[str, Any], names: Mapping[str, str | None]) -> dict[str, Any]:
    """The summary with metric keys renamed to the benchmark's (dropped where renamed to None)."""
    if not names:
        return summary

    def rename(values: dict[str, Any]) -> dict[str, Any]:
        renamed = {k: names.get(k, k) for k in values}
        return {new: values[k] for k, new in renamed.items() if new is not None}

    renamed = {**summary, "metrics": rename(summary["metrics"]), "intervals": rename(summary["intervals"])}
    renamed["by_category"] = {c: rename(v) for c, v in summary["by_category"].items()}
    renamed["category_intervals"] = {c: rename(v) for c, v in summary["category_intervals"].items()}
    if "chance" in summary:
        renamed["chance"] = {c: rename(v) for c, v in summary["chance"].items()}
    return renamed


def item_kind(run: Run) -> str:
    """The one item kind of a run (a run mixing item kinds has no single metric)."""
    kinds = set(run.kinds.tolist())
    if len(kinds) != 1:
        raise UnsupportedRunError(f"a run mixes item kinds {sorted(kinds)}; score one item kind per dataset")
    return kinds.pop()


def _decisions(run: Run) -> list[dict[str, Any]]:
    """An imported run's decision per item; refused when an item has none (a run of scores)."""
    decided = [outcome for outcome in run.outcomes if outcome is not None]
    if len(decided) != len(run.outcomes):
        raise UnsupportedRunError(f"{len(run.outcomes) - len(decided)} items of this run have no imported decision")
    return decided


def _outcome_column(run: Run, key: str) -> np.ndarray:
    return np.array([float(bool(outcome[key])) for outcome in _decisions(run)])


def _no_ties(run: Run) -> np.ndarray:
    return np.zeros(len(run), dtype=int)


Outcomes = tuple[dict[str, np.ndarray], np.ndarray]  # credits per outcome, tied comparisons per item


def pair_outcomes(run: Run, ties: str) -> Outcomes:
    """Per item `s(c) > s(c_n)` (or an imported `correct`)."""
    if run.scores is None:
        return {"accuracy_micro": _outcome_column(run, "correct")}, _no_ties(run)
    s = run.scores
    return {"accuracy_micro": m.credit(s[:, 0], s[:, 1], ties)}, m.tied(s[:, 0], s[:, 1])


def group_outcomes(run: Run, ties: str) -> Outcomes:
    """The seven BiVLC outcomes of each item, from scores or from imported decisions."""
    if run.scores is None:
        parts = {k: _outcome_column(run, k) for k in ("ipos2t", "ineg2t", "tpos2i", "tneg2i")}
        outcomes = m.combine_bivlc(**parts)
        tied = _no_ties(run)
    else:
        outcomes, tied = m.bivlc_outcomes(run.scores, ties), m.bivlc_tied(run.scores)
    return {k: outcomes[k] for k in m.BIVLC_KEYS}, tied


def add_group_types(summary: dict[str, Any], run: Run, outcomes: dict[str, np.ndarray], settings: Settings) -> None:
    """Where the source's categories are subtypes (BiVLC): `by_type` and `type_intervals` hold
    the types (`replace`) beside the subtypes (`replace_obj`) of `by_category`."""
    types = category_types(run.categories, settings.source)
    if types is None:
        return
    by_type = m.summarize(outcomes, types, n_boot=settings.n_boot, seed=settings.seed)
    type_of = dict(zip(map(str, run.categories), types.tolist()))
    for category, figures in summary["by_category"].items():  # a type's ties: its subtypes' ties
        if "ties" in figures:
            counts = by_type["by_category"][type_of[category]]
            counts["ties"] = counts.get("ties", 0) + figures["ties"]
    summary["by_type"], summary["type_intervals"] = by_type["by_category"], by_type["category_intervals"]


def category_types(categories: np.ndarray, source: formats.Format) -> np.ndarray | None:
    """The type of each category where the source declares its categories subtypes
    (`Format.category_types`: BiVLC's `replace_obj` -> `replace`); None where it does not
    (Winoground's tags, any other benchmark's categories, `_` or not) or they are no subtypes."""
    if source.category_types is None:
        return None
    types = np.array([source.category_types(str(c)) for c in categories])
    return None if set(types.tolist()) <= set(np.asarray(categories).tolist()) else types


def triple_outcomes(run: Run, ties: str) -> Outcomes:
    """Hard-positive outcomes (imported decisions: `correct` as the augmented accuracy)."""
    if run.scores is None:
        return {"aug_acc": _outcome_column(run, "correct")}, _no_ties(run)
    scores = run.scores[:, :3]
    tied = m.tied(scores[:, 0], scores[:, 1]) + m.tied(scores[:, 2], scores[:, 1])
    return m.hard_positive_outcomes(scores[:, 0], scores[:, 1], scores[:, 2], ties), tied


def add_caption_means(summary: dict[str, Any], run: Run, outcomes: dict[str, np.ndarray], settings: Settings) -> None:
    """Hard positives: the mean of each caption's score, overall and per category."""
    if run.scores is None:
        return
    scores = run.scores[:, :3]
    summary["metrics"].update(zip(("mean_s_c", "mean_s_cn", "mean_s_cp"), (float(v) for v in scores.mean(axis=0))))
    for category, values in summary["by_category"].items():
        mask = run.categories == category
        values.update(zip(("mean_s_c", "mean_s_cn", "mean_s_cp"), (float(v) for v in scores[mask].mean(axis=0))))


def paraphrase_outcomes(run: Run, ties: str) -> Outcomes:
    """SugarCrepe++: ITT, Image-P1-Neg, Image-P2-Neg and, from the text encoder, TOT
    (imported decisions: `correct` as ITT)."""
    if run.scores is None:
        return {"itt": _outcome_column(run, "correct")}, _no_ties(run)
    scores = run.scores
    return m.paraphrase_outcomes(scores, ties), m.paraphrase_tied(scores)


def retrieval_outcomes(run: Run, ties: str) -> Outcomes:
    """Recall at 1, 3 and 5 of the positive among its negatives (CREPE, What'sUp)."""
    if run.scores is None:
        return {"recall_at_1": _outcome_column(run, "correct")}, _no_ties(run)
    return {f"recall_at_{k}": m.recall_at_k(run.scores, k, ties) for k in (1, 3, 5)}, m.retrieval_tied(run.scores)


def add_retrieval_chance(
    summary: dict[str, Any], run: Run, outcomes: dict[str, np.ndarray], settings: Settings
) -> None:
    """`chance`: recall at k of a random ranking, overall and per category; it depends on each
    item's number of captions (CREPE's vary, What'sUp's are 4 or 2)."""
    if run.scores is None:
        return
    options = np.sum(~np.isnan(np.asarray(run.scores, dtype=float)), axis=1)
    by_item = {key: np.minimum(1.0, int(key.rsplit("_", 1)[1]) / options) for key in outcomes}
    groups = {"(all)": np.ones(len(options), dtype=bool)} | {
        str(c): run.categories == c for c in summary["by_category"]
    }
    summary["chance"] = {
        group: {key: m.percent(values[mask]) for key, values in by_item.items()} for group, mask in groups.items()
    }


def chance_levels(summary: Mapping[str, Any], key: str, categories: Sequence[str]) -> list[float | None]:
    """The random-guess level of `key` for each of `categories` ("(all)" for overall): the
    summary's own where the items decide it (retrieval), else the metric's constant."""
    own = summary.get("chance", {})
    return [own.get(category, {}).get(key, m.chance_level(key)) for category in categories]


CHOICE_HEADLINE = "correct under every caption order"  # the headline of a choices run (parity's)


def choice_outcomes(run: Run, ties: str) -> Outcomes:
    """Imported choices (GPT-4V): an item is right when it is right under every caption order."""
    every, _ = choice_correct(run)
    return {CHOICE_HEADLINE: every.astype(float)}, _no_ties(run)


def choice_columns(run: Run, ties: str) -> dict[str, Any]:
    """Inspection of a choices run: right under every caption order, and per order (None where
    that order was not asked)."""
    every, per_ordering = choice_correct(run)
    return {"correct": every, **{f"right when {ordering}": values for ordering, values in per_ordering.items()}}


def choice_summary(run: Run, settings: Settings) -> dict[str, Any]:
    """Accuracy of imported choices (GPT-4V) pooled over caption orderings, and per ordering.

    An answer naming neither option counts as wrong; `n_unparsed` says how many there were.
    `accuracy_reported` uses the source's own per-answer judgement instead of our reading.
    """
    answers = [
        (category, ordering, answer)
        for category, outcome in zip(run.categories, _decisions(run))
        for ordering, answer in sorted(outcome.items())
    ]
    categories = np.array([category for category, _, _ in answers])
    outcomes = {
        "accuracy": np.array([bool(a["correct"]) for _, _, a in answers]),
        "accuracy_reported": np.array([bool(a.get("reported_correct")) for _, _, a in answers]),
    }
    summary = m.summarize(outcomes, categories, n_boot=settings.n_boot, seed=settings.seed)
    summary["n"] = len(run)
    for category, values in summary["by_category"].items():
        values["n"] = int(np.sum(run.categories == category))  # items, not answers
    summary["metrics"]["n_unparsed"] = sum(not a["parsed"] for _, _, a in answers)
    summary["by_ordering"] = _by_ordering(answers)
    return summary


def choice_correct(run: Run) -> tuple[np.ndarray, dict[str, list[bool | None]]]:
    """Per item of a choices run: right under every ordering it was asked in, and per ordering
    whether it was right (None where that ordering was not asked)."""
    decisions = _decisions(run)
    orderings = sorted({ordering for outcome in decisions for ordering in outcome})
    per: dict[str, list[bool | None]] = {
        o: [None if o not in outcome else bool(outcome[o]["correct"]) for outcome in decisions] for o in orderings
    }
    every = np.array([all(bool(answer["correct"]) for answer in outcome.values()) for outcome in decisions], dtype=bool)
    return every, per


def _by_ordering(answers: list[tuple[str, str, Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    result = {}
    for ordering in sorted({o for _, o, _ in answers}):
        chosen = [a for _, o, a in answers if o == ordering]
        result[ordering] = {
            "n": len(chosen),
            "accuracy": m.percent([a["correct"] for a in chosen]),
            "n_unparsed": sum(not a["parsed"] for a in chosen),
        }
    return result


@dataclass(frozen=True)
class MetricFamily:
    """How a run of one item kind becomes benchmark metrics: `outcomes(run, ties)` gives each
    item's credit per metric and its tied comparisons; `headline` is the outcome that says an
    item is right (inspection's `correct`, parity's headline); `macro` adds the mean over
    categories; `extend` adds family figures to the summary; `columns` names further per-item
    outcomes for inspection (column name -> outcome). Item kinds name their family
    (`ItemKind.metric_family`); a family listing `run_types` scores the runs of those types
    whatever their items (GPT-4V's `choices`), with its own `summary(run, settings)` and
    inspection columns `inspect(run, ties)` where they are not the per-item ones."""

    name: str
    outcomes: Callable[[Run, str], Outcomes]
    headline: str
    macro: bool = False
    extend: Callable[[dict[str, Any], Run, dict[str, np.ndarray], Settings], None] | None = None
    columns: Mapping[str, str] = field(default_factory=dict)
    run_types: tuple[str, ...] = ()
    summary: Callable[[Run, Settings], dict[str, Any]] | None = None
    inspect: Callable[[Run, str], dict[str, Any]] | None = None

    def summarize(self, run: Run, settings: Settings) -> dict[str, Any]:
        """The run's metrics JSON body: the family's own summary, else `item_summary`."""
        return self.summary(run, settings) if self.summary is not None else item_summary(self, run, settings)

    def per_item(self, run: Run, ties: str = "wrong") -> dict[str, Any]:
        """Per-item columns for inspection: `correct` (fully right under the tie rule) and the
        family's further columns, true where the outcome holds."""
        if self.inspect is not None:
            return self.inspect(run, ties)
        outcomes, _ = self.outcomes(run, ties)
        return {
            "correct": outcomes[self.headline] == 1.0,
            **{column: outcomes[key] == 1.0 for column, key in self.columns.items() if key in outcomes},
        }

    def credits(self, run: Run, ties: str = "wrong") -> np.ndarray:
        """Each item's credit on the headline outcome (1 right, 0 wrong, 0.5 a half-counted tie)."""
        return np.asarray(self.outcomes(run, ties)[0][self.headline], dtype=float)


METRIC_FAMILIES = {
    family.name: family
    for family in (
        MetricFamily("pairwise", pair_outcomes, "accuracy_micro", macro=True),
        MetricFamily(
            "hard_positive", triple_outcomes, "aug_acc", extend=add_caption_means, columns={"brittle": "brittleness"}
        ),
        MetricFamily("paraphrase", paraphrase_outcomes, "itt", columns={"text only right": "tot"}),
        MetricFamily("bivlc", group_outcomes, "group", extend=add_group_types),
        MetricFamily("retrieval", retrieval_outcomes, "recall_at_1", extend=add_retrieval_chance),
        MetricFamily(
            "choices",
            choice_outcomes,
            CHOICE_HEADLINE,
            run_types=("choices",),
            summary=choice_summary,
            inspect=choice_columns,
        ),
    )
}


def metric_family(name: str) -> MetricFamily:
    """The metric family of the item kind `name`; UnsupportedRunError when that item kind has none."""
    record = item_kinds.item_kind(name)
    if record.metric_family is None:
        raise UnsupportedRunError(f"{name} items have no right answer to score or inspect: {record.no_metric_because}")
    return METRIC_FAMILIES[record.metric_family]


def run_family(run: Run) -> MetricFamily:
    """The metric family of a run: the one claiming its run type (GPT-4V's `choices`), else its
    item kind's (UnsupportedRunError for a run mixing item kinds, or of an item kind with no metric)."""
    claimed = [family for family in METRIC_FAMILIES.values() if run.run_type in family.run_types]
    return claimed[0] if claimed else metric_family(item_kind(run))


def run_summaries(
    db: sqlite_utils.Database,
    dataset: str,
    *,
    n_boot: int = BOOTSTRAP,
    subset: str | None = None,
    ties: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Run name -> its metrics JSON (or ``{"note": why not}``) for every run of a dataset, with
    the same bootstrap (size and seed) as ``cli.py metrics``: the app and the CLI show one number."""
    summaries: dict[str, dict[str, Any]] = {}
    for run in store.list_runs(db, dataset):
        try:
            summaries[run["run"]] = run_metrics(db, dataset, run["run"], n_boot=n_boot, subset=subset, ties=ties)
        except UnsupportedRunError as error:
            summaries[run["run"]] = {"note": str(error)}
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
