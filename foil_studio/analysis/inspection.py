"""What the inspection pages show: per-item gaps and correctness, run comparisons, failures.

Everything here works from stored runs: our own scores give gaps and correctness; imported
per-instance results (BiVLC, SugarCrepe-correct) give correctness only.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import sqlite_utils

from foil_studio.analysis.metric_families.base import item_kind
from foil_studio.analysis.results import Run, load_run, run_family, source_format
from foil_studio.data import item_kinds, plain_text
from foil_studio.data.links import linked_items

LISTED_ROWS = 1_000  # items of a gap range a page lists (its count says how many there are)


def item_table(db: sqlite_utils.Database, dataset: str, run: str, subset: str | None = None) -> pd.DataFrame:
    """One row per scored item (of a named subset): id, category, `correct`, and its score gaps
    where scores exist; an item is correct under its benchmark's tie rule."""
    return run_table(load_run(db, dataset, run, subset), source_format(db, dataset).ties)


def run_table(columns: Run, ties: str = "wrong") -> pd.DataFrame:
    """`item_table` of a run already read as columns (`correct`: fully right under the tie rule)."""
    frame = pd.DataFrame(
        {"item": columns.item_ids, "category": columns.categories, "correct": np.zeros(len(columns), dtype=bool)}
    )
    if not len(columns):
        return frame
    per_item = run_family(columns).per_item(columns, ties)
    frame["correct"] = per_item.pop("correct")
    if columns.scores is not None:
        for gap in item_kinds.item_kind(item_kind(columns)).gaps:
            frame[gap.name] = gap.of(columns.scores)
    return frame.assign(**per_item)


def share_below_zero(gaps: pd.Series) -> float:
    """Percent of items whose gap is not positive (the model's failures; ties included)."""
    return float(100.0 * (gaps <= 0).mean()) if len(gaps) else float("nan")


def compare_runs(
    db: sqlite_utils.Database, dataset: str, run_a: str, run_b: str, subset: str | None = None
) -> pd.DataFrame:
    """Per category: how often two runs agree on correctness, and McNemar's exact test."""
    return compare_correctness(
        item_table(db, dataset, run_a, subset), item_table(db, dataset, run_b, subset), run_a, run_b
    )


def compare_linked(
    db: sqlite_utils.Database, dataset: str, run: str, other: str, other_run: str
) -> tuple[pd.DataFrame, int]:
    """A run on one dataset against a run on another on the items they share (`data.links`:
    SugarCrepe++ and SugarCrepe), per category of the first; and how many items are linked."""
    links = linked_items(db, dataset, other)
    theirs = item_table(db, other, other_run)
    theirs = theirs[theirs["item"].isin(links)].assign(item=lambda t: t["item"].map(links))
    return compare_correctness(item_table(db, dataset, run), theirs, run, f"{other}: {other_run}"), len(links)


def human_table(humans: Mapping[int, bool]) -> pd.DataFrame:
    """Human correctness per item (`baselines.item_outcomes`) as a table `compare_correctness` reads."""
    return pd.DataFrame({"item": list(humans), "correct": list(humans.values())}, columns=["item", "correct"]).astype(
        {"correct": bool}
    )


def compare_correctness(a: pd.DataFrame, b: pd.DataFrame, name_a: str, name_b: str) -> pd.DataFrame:
    """Per category of `a` (and overall), on the items both judged: right for both, for one only,
    for neither, the agreement, and McNemar's exact test of the two accuracies."""
    from statsmodels.stats.contingency_tables import mcnemar  # ~0.8 s to import: only when two are compared

    joined = a[["item", "category", "correct"]].merge(b[["item", "correct"]], on="item", suffixes=("_a", "_b"))
    rows = []
    for category, part in [*joined.groupby("category"), ("(all)", joined)]:
        both = int((part.correct_a & part.correct_b).sum())
        only_a = int((part.correct_a & ~part.correct_b).sum())
        only_b = int((~part.correct_a & part.correct_b).sum())
        neither = int((~part.correct_a & ~part.correct_b).sum())
        test = mcnemar([[both, only_a], [only_b, neither]], exact=True)
        rows.append(
            {
                "category": category,
                "n": len(part),
                "both right": both,
                f"only {name_a}": only_a,
                f"only {name_b}": only_b,
                "both wrong": neither,
                "agreement %": 100.0 * (both + neither) / max(len(part), 1),
                "McNemar p": float(test.pvalue),
            }
        )
    return pd.DataFrame(rows)


def comparison_for_people(table: pd.DataFrame) -> pd.DataFrame:
    """A `compare_correctness` table as the page and the CLI show it: McNemar's p written by
    `plain_text.p_value_text` (one rule everywhere), agreement with one decimal."""
    return table.assign(
        **{"McNemar p": table["McNemar p"].map(plain_text.p_value_text), "agreement %": table["agreement %"].round(1)}
    )


PATTERNS = (
    "wrong for A",
    "wrong for A, right for B",
    "right for A, wrong for B",
    "wrong for both",
    "wrong for A, right for humans",
    "brittle for A",
    "any outcome",
)


def gap_columns(table: pd.DataFrame) -> list[str]:
    """The score-gap columns of an `item_table` (none for imported decisions)."""
    return [c for c in table.columns if c.startswith("s(") or ": s(" in c]


def patterns_for(
    table_a: pd.DataFrame, table_b: pd.DataFrame | None = None, humans: Mapping[int, bool] | None = None
) -> tuple[str, ...]:
    """The correctness patterns these tables can answer (a second run, human labels, brittleness)."""
    usable = [PATTERNS[0]]
    if table_b is not None:
        usable += PATTERNS[1:4]
    if humans:
        usable.append("wrong for A, right for humans")
    if "brittle" in table_a:
        usable.append("brittle for A")
    return (*usable, "any outcome")


def failures(
    table_a: pd.DataFrame,
    table_b: pd.DataFrame | None = None,
    *,
    humans: Mapping[int, bool] | None = None,
    pattern: str = "wrong for A",
    category: str | None = None,
    items: Collection[int] | None = None,
    page: int = 0,
    page_size: int = 20,
) -> tuple[pd.DataFrame, int]:
    """Items (rows of `item_table`) matching a correctness pattern, worst margin first where the
    run has margins: one page and the total.

    `humans` maps item ids to whether the human majority got the item right (`baselines.item_outcomes`);
    the rows then carry it as `humans` (missing where no human answered). `items` keeps only
    those ids (the gap range chosen on the histogram).
    """
    if pattern not in PATTERNS:
        raise ValueError(f"unknown pattern {pattern!r}; expected one of {PATTERNS}")
    if pattern not in patterns_for(table_a, table_b, humans):
        raise ValueError(f"pattern {pattern!r} needs {_NEEDS[pattern]}")
    table = table_a
    if table_b is not None:
        table = table.merge(table_b[["item", "correct"]].rename(columns={"correct": "correct_b"}), on="item")
    if humans:
        table = table.assign(humans=table["item"].map(humans))
    mask = _pattern_mask(table, pattern)
    if category:
        mask &= table["category"] == category
    if items is not None:
        mask &= table["item"].isin(list(items))
    chosen = table[mask]
    gaps = gap_columns(chosen)
    if gaps:
        chosen = chosen.sort_values(gaps[0], kind="stable")
    return chosen.iloc[page * page_size : (page + 1) * page_size], len(chosen)


_NEEDS = {
    "wrong for A, right for B": "a second run",
    "right for A, wrong for B": "a second run",
    "wrong for both": "a second run",
    "wrong for A, right for humans": "human baseline or ranking labels on this dataset",
    "brittle for A": "hard-positive scores",
}


def _pattern_mask(table: pd.DataFrame, pattern: str) -> pd.Series:
    wrong_a = ~table["correct"]
    if pattern == "any outcome":
        return pd.Series(True, index=table.index)
    if pattern == "wrong for A":
        return wrong_a
    if pattern == "wrong for A, right for humans":
        return wrong_a & (table["humans"] == True)  # noqa: E712  (NaN where no human answered)
    if pattern == "brittle for A":
        return table["brittle"]
    right_b = table["correct_b"]
    return {
        "wrong for A, right for B": wrong_a & right_b,
        "right for A, wrong for B": ~wrong_a & ~right_b,
        "wrong for both": wrong_a & ~right_b,
    }[pattern]


def gap_histogram(tables: Mapping[str, pd.DataFrame], gap: str, *, bins: int = 40) -> pd.DataFrame:
    """Counts of `gap` per run and category over shared bins: a few hundred rows, however many items.

    Columns: run, category, left, right, middle, count.
    """
    values = np.concatenate([t[gap].to_numpy(dtype=float) for t in tables.values()])
    edges = np.histogram_bin_edges(values[np.isfinite(values)], bins=bins)
    rows = []
    for run, table in tables.items():
        for category, part in category_parts(table, gap):
            counts, _ = np.histogram(part, bins=edges)
            rows.append(
                pd.DataFrame(
                    {"run": run, "category": category, "left": edges[:-1], "right": edges[1:], "count": counts}
                )
            )
    frame = pd.concat(rows, ignore_index=True)
    return frame.assign(middle=(frame["left"] + frame["right"]) / 2)


def shares_below_zero(tables: Mapping[str, pd.DataFrame], gap: str) -> pd.DataFrame:
    """Per run and category, the percent of items whose `gap` is at or below zero."""
    rows = [
        {"run": run, "category": category, "% at or below zero": share_below_zero(pd.Series(part))}
        for run, table in tables.items()
        for category, part in category_parts(table, gap)
    ]
    return pd.DataFrame(rows)


def category_parts(table: pd.DataFrame, column: str) -> list[tuple[str, np.ndarray]]:
    """(category, its items' `column` as floats) per category of a run's table, categories sorted
    (`groupby("category")`'s parts, split by integer codes: grouping a million strings took 0.2 s)."""
    codes, names = pd.factorize(table["category"], sort=True)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
    values = table[column].to_numpy(dtype=float)[order]
    return [(str(name), values[bounds[number] : bounds[number + 1]]) for number, name in enumerate(names)]


@dataclass(frozen=True)
class GapRange:
    """A gap range chosen on a chart, optionally limited to the categories whose facets it covers."""

    low: float
    high: float
    categories: tuple[str, ...] = ()


def selected_range(selection: Mapping[str, Any] | None) -> GapRange | None:
    """The x range of a box drawn on a plotly chart (Streamlit's selection state), if any, and the
    categories of the bars it caught (each bar carries its category as custom data)."""
    boxes = (selection or {}).get("box") or []
    if not boxes or len(boxes[0].get("x", ())) < 2:
        return None
    low, high = boxes[0]["x"][:2]
    caught = {str(point["customdata"][0]) for point in (selection or {}).get("points", []) if point.get("customdata")}
    return GapRange(min(low, high), max(low, high), tuple(sorted(caught)))


def clamped(chosen: GapRange, lowest: float, highest: float) -> tuple[float, float]:
    """The range as a slider over [lowest, highest] can hold it.

    >>> clamped(GapRange(-3.0, 0.5), -2.0, 4.0)
    (-2.0, 0.5)
    """
    low, high = max(chosen.low, lowest), min(chosen.high, highest)
    return (low, max(low, high))


def in_range(table: pd.DataFrame, gap: str, chosen: GapRange) -> pd.DataFrame:
    """Items whose `gap` lies in the range (and categories, if any are named), smallest gap first."""
    mask = (table[gap] >= chosen.low) & (table[gap] <= chosen.high)
    if chosen.categories:
        mask &= table["category"].isin(chosen.categories)
    return table[mask].sort_values(gap, kind="stable")


def paired_gaps(table_a: pd.DataFrame, table_b: pd.DataFrame, gap: str) -> pd.DataFrame:
    """Per item both runs' `gap`: item, category, A, B (for the model-against-model scatter)."""
    joined = table_a[["item", "category", gap]].merge(table_b[["item", gap]], on="item", suffixes=(" A", " B"))
    return joined.rename(columns={f"{gap} A": "A", f"{gap} B": "B"})


def marked_difference(positive: str, negative: str) -> tuple[str, str]:
    """Both captions with the words that differ in [brackets] (plain text, no markup), aware of
    word order: captions of equal length (replacements, swaps) are compared place by place, so
    swapped words are marked where they moved; others are aligned by difflib (additions).

    >>> marked_difference("a red cup on a table", "a blue cup on a table")
    ('a [red] cup on a table', 'a [blue] cup on a table')
    >>> marked_difference("a dog chasing a cat", "a cat chasing a dog")
    ('a [dog] chasing a [cat]', 'a [cat] chasing a [dog]')
    >>> marked_difference("an apple next to a dog", "a dog next to an apple")[0]
    '[an apple] next to [a dog]'
    """
    a, b = positive.split(), negative.split()
    plain_a, plain_b = [re.sub(r"\W", "", w.lower()) for w in a], [re.sub(r"\W", "", w.lower()) for w in b]
    if len(a) == len(b):
        blocks = [(i, i + 1, i, i + 1) for i in range(len(a)) if plain_a[i] != plain_b[i]]
    else:
        blocks = [
            (a0, a1, b0, b1)
            for op, a0, a1, b0, b1 in difflib.SequenceMatcher(None, plain_a, plain_b, autojunk=False).get_opcodes()
            if op != "equal"
        ]
    return _bracketed(a, [(a0, a1) for a0, a1, _, _ in blocks]), _bracketed(b, [(b0, b1) for _, _, b0, b1 in blocks])


def _bracketed(words: list[str], spans: list[tuple[int, int]]) -> str:
    """The words with each run of adjacent marked spans in one pair of brackets."""
    marked = {i for start, end in spans for i in range(start, end)}
    out: list[str] = []
    for i, word in enumerate(words):
        opens, closes = i in marked and i - 1 not in marked, i in marked and i + 1 not in marked
        out.append("[" * opens + word + "]" * closes)
    return " ".join(out)
