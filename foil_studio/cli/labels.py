"""Commands on a batch's answers: `assignments`, `labels`, `agreement`, `simulate`, `baseline`,
`export-clean`, `votes`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import sqlite_utils

from foil_studio.cli.base import BOOTSTRAP_RESAMPLES, CLEAN_FORMATS, PEOPLE, SEED, arg, command
from foil_studio.cli.text import agreement_text
from foil_studio.data import store


@command(
    "assignments",
    arg("batch"),
)
def cmd_assignments(db: sqlite_utils.Database, args: argparse.Namespace) -> list[dict[str, Any]]:
    """List a batch's assignments: item, annotator, position in their queue."""
    batch = store.get_batch(db, args.batch)
    return [
        {
            "item": a["item_id"],
            "part": a["part"],
            "annotator": a["annotator"],
            "position": a["position"],
            "gold": bool(a["is_gold"]),
            "done": bool(a["done"]),
        }
        for a in store.batch_assignments(db, batch["id"])
    ]


@command(
    "labels",
    arg("batch"),
    arg("--format", choices=["jsonl", "csv"], default="jsonl"),
    arg("--out", metavar="FILE"),
)
def cmd_labels(db: sqlite_utils.Database, args: argparse.Namespace) -> str | None:
    """Export every label of a batch as JSONL or CSV (stdout, or --out FILE): annotator, item, answer,
    displayed order, timestamps, seconds."""
    from foil_studio.annotate.batch_reports import export_labels

    text = export_labels(db, args.batch, args.format)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        return f"wrote {args.out}"
    sys.stdout.write(text)
    return None


@command(
    "agreement",
    arg("batch"),
    text=lambda report: agreement_text(report),
)
def cmd_agreement(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Inter-annotator agreement of a batch: percent, Cohen per pair, Fleiss, Krippendorff, AC1
    (95% intervals from the resamples the page and the protocol paragraph use)."""
    from foil_studio.annotate.batch_reports import batch_agreement

    return batch_agreement(db, args.batch)


@command(
    "simulate",
    arg("batch"),
    arg(
        "--annotators",
        type=PEOPLE,
        metavar="N",
        help="answer as the first N annotators of the batch (default: all)",
    ),
    arg("--accuracy", type=float, default=0.9, metavar="P", help="chance each answer matches the ground truth"),
    SEED,
)
def cmd_simulate(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Answer a batch from ground truth with per-annotator noise (same write path as the app)."""
    from foil_studio.annotate.simulation import simulate

    return simulate(db, args.batch, accuracies=args.accuracy, n_annotators=args.annotators, seed=args.seed)


@command(
    "baseline",
    arg("batches", nargs="+", metavar="BATCH", help="one batch, or BiVLC's i2t and t2i batches together"),
    BOOTSTRAP_RESAMPLES,
    SEED,
)
def cmd_baseline(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Human baseline of baseline/validation/ranking batches, with the keys of `metrics` (BiVLC: give
    the i2t and the t2i batch)."""
    from foil_studio.annotate.baselines import human_baseline

    return human_baseline(db, args.batches, n_boot=args.bootstrap, seed=args.seed)


@command(
    "export-clean",
    arg("batch"),
    arg(
        "--format",
        choices=CLEAN_FORMATS,
        help="the layout (default: the dataset's own, as VALSE or SugarCrepe++, else the task type's: sugarcrepe for "
        "validate_negative, bivlc for ambiguity)",
    ),
    arg("--out", required=True, metavar="DIR"),
)
def cmd_export_clean(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Write the cleaned benchmark a construction batch leaves, with `provenance.json`: which batch and
    rule removed each item, the agreement, a protocol paragraph."""
    from foil_studio.annotate.export import export_clean

    return export_clean(db, args.batch, args.format, Path(args.out))


@command("votes", arg("dataset"))
def cmd_votes(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Crowd votes shipped with a benchmark (VALSE's `mturk`): valid items by the authors' rule and
    Fleiss' kappa from the vote counts, per category."""
    from foil_studio.annotate.votes import vote_agreement

    return vote_agreement(db, args.dataset)
