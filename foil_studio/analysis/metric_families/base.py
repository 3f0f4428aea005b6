"""What every metric family shares: the `MetricFamily` record, the run as columns, the settings
(source format, tie rule, bootstrap) and the per-item summary a family's outcomes go through.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from foil_studio.analysis import metrics as m
from foil_studio.data import formats, store

Run = store.RunColumns


# Resamples behind every 95% interval of a run, in the app and the CLI alike (seed 0).
BOOTSTRAP = 1000


class UnsupportedRunError(store.StoreError):
    """A run holds nothing the metrics can use (say, candidate-image scores)."""


@dataclass(frozen=True)
class Settings:
    """How a run becomes metrics: its source format (metric names, groups), the tie rule
    (`analysis.metrics.TIE_RULES`) and the bootstrap behind every interval."""

    source: formats.Format
    ties: str = "wrong"
    n_boot: int = BOOTSTRAP
    seed: int = 0


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
    if len(run.kinds) and bool(np.all(run.kinds == run.kinds[0])):  # one comparison: a set of a million took 0.15 s
        return str(run.kinds[0])
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


def category_types(categories: np.ndarray, source: formats.Format) -> np.ndarray | None:
    """The type of each category where the source declares its categories subtypes
    (`Format.category_types`: BiVLC's `replace_obj` -> `replace`); None where it does not
    (Winoground's tags, any other benchmark's categories, `_` or not) or they are no subtypes."""
    if source.category_types is None:
        return None
    types = np.array([source.category_types(str(c)) for c in categories])
    return None if set(types.tolist()) <= set(np.asarray(categories).tolist()) else types


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
