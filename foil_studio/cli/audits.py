"""Commands that audit a benchmark's captions: `compare`, `audit`, `refine`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import sqlite_utils

from foil_studio.analysis.blind import SCORERS
from foil_studio.cli.base import SEED, UsageError, arg, command, count
from foil_studio.cli.text import as_text


def compare_text(result: dict[str, Any]) -> str:
    """`compare`: the table with McNemar's p as the page writes it."""
    import pandas as pd

    from foil_studio.analysis.inspection import comparison_for_people

    table = comparison_for_people(pd.DataFrame(result["by_category"])).to_dict("records")
    return as_text({**result, "by_category": table})


@command(
    "compare",
    arg("dataset"),
    arg("--run", required=True, metavar="A"),
    arg("--with", dest="other_run", required=True, metavar="B", help="the run to compare with"),
    arg(
        "--other-dataset",
        metavar="OTHER",
        help="the other run's dataset, when it is another one (SugarCrepe++ against SugarCrepe: items linked by image, "
        "caption and negative)",
    ),
    text=compare_text,
)
def cmd_compare(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Two runs item by item: right for both, for one only, for neither, and McNemar's test, per
    category; with --other-dataset, a run on SugarCrepe++ against one on SugarCrepe over the linked
    items."""
    from foil_studio.analysis.inspection import compare_linked, compare_runs

    if args.other_dataset and args.other_dataset != args.dataset:
        table, linked = compare_linked(db, args.dataset, args.run, args.other_dataset, args.other_run)
        return {
            "dataset": args.dataset,
            "other_dataset": args.other_dataset,
            "linked_items": linked,
            "by_category": table.to_dict("records"),
        }
    table = compare_runs(db, args.dataset, args.run, args.other_run)
    return {"dataset": args.dataset, "by_category": table.to_dict("records")}


@command(
    "audit",
    arg("dataset"),
    arg("--folds", type=count(100, at_least=2), default=5, metavar="K", help="cross-validation folds of the scorers"),
    SEED,
    arg("--scorers", nargs="+", default=list(SCORERS), choices=SCORERS),
    arg(
        "--text-model",
        metavar="demo|ARCH",
        help="also a CLIP text encoder for SugarCrepe++'s TOT: 'demo' or an open_clip architecture",
    ),
    arg("--text-pretrained", metavar="TAG", help="pretrained tag of --text-model (e.g. openai)"),
)
def cmd_audit(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Blind text-only baselines per category: how far captions alone tell positive from negative,
    and the word-order-only pairs (on SugarCrepe++ also the text-only TOT of MiniLM and of a CLIP
    text encoder)."""
    from foil_studio.analysis.audit import audit, tot_encoders

    encoders = tot_encoders(args.text_model, args.text_pretrained)
    result = audit(db, args.dataset, scorers=args.scorers, folds=args.folds, seed=args.seed, text_encoders=encoders)
    for per_item in ("gaps", "categories"):
        result.pop(per_item)
    return result


@command(
    "refine",
    arg("dataset"),
    arg("--scorers", nargs=2, required=True, choices=SCORERS, metavar=("A", "B"), help=", ".join(SCORERS)),
    arg("--grid", type=count(1000, at_least=2), default=8, metavar="K", help="cells per side of the grid, even"),
    SEED,
    arg("--out", required=True, metavar="DIR"),
)
def cmd_refine(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Adversarial refinement against two blind scorers; writes the kept subset in SugarCrepe's layout."""
    from foil_studio.analysis.audit import refine_dataset

    if args.grid % 2:
        raise UsageError(f"argument --grid: is {args.grid}; expected an even number of cells per side")
    result = refine_dataset(db, args.dataset, tuple(args.scorers), grid=args.grid, seed=args.seed, out=Path(args.out))
    result.pop("gaps")
    result.pop("kept")
    return result
