"""Benchmark health's commands: `health sample`, `health next`, `health predictions`, `health report`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import sqlite_utils

from foil_studio.analysis.health import ALLOCATIONS
from foil_studio.analysis.metrics import TIE_RULES
from foil_studio.annotate.health.sample import ACTIVE_RETIRED, CONSENSUS, STRATEGIES
from foil_studio.cli.base import AT_LEAST_ONE, BOOTSTRAP_RESAMPLES, PEOPLE, SEED, UsageError, arg, command
from foil_studio.data import store


def health_draw(overlap: tuple[tuple[str, ...], dict[str, Any]]) -> tuple[tuple[tuple[str, ...], dict[str, Any]], ...]:
    """The arguments `health sample` and `health next` share, with each one's `--overlap`."""
    return (
        arg("dataset"),
        arg("--budget", type=AT_LEAST_ONE, metavar="N", help="items to draw in all (or --per-category)"),
        arg(
            "--per-category",
            type=AT_LEAST_ONE,
            metavar="N",
            help="items to draw from each category instead of a budget",
        ),
        arg("--annotators", nargs="+", metavar="NAME", help="annotator names (created if new; default: all)"),
        overlap,
        SEED,
        arg("--name", metavar="NAME"),
    )


def _health_batch(db: sqlite_utils.Database, args: argparse.Namespace, **plan: Any) -> dict[str, Any]:
    from foil_studio.annotate.health import create_sample_batch, plan_sample

    drawn = plan_sample(db, args.dataset, args.budget, per_category=args.per_category, seed=args.seed, **plan)
    annotators = tuple(args.annotators or (a["name"] for a in store.list_annotators(db)))
    return create_sample_batch(db, drawn, annotators, overlap=args.overlap, name=args.name)


@command(
    "health sample",
    *health_draw(
        arg(
            "--overlap",
            type=PEOPLE,
            default=3,
            metavar="K",
            help="annotators per item (default 3: a majority always exists)",
        )
    ),
    arg("--allocation", choices=ALLOCATIONS, default="proportional", help="how the budget is spread over categories"),
)
def cmd_health_sample(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Benchmark health, step 1: a validate_negative batch over a stratified random sample of the
    dataset's items (strata: categories), recording its design (sizes, sample sizes, inclusion
    probabilities, seed); refused when the dataset has a health sample already (`health next`)."""
    from foil_studio.annotate.health import HealthError, health_batches

    if health_batches(db, args.dataset):
        raise HealthError(f"{args.dataset} has a health sample already; draw more with `./foil health next`")
    return _health_batch(db, args, allocation=args.allocation)


def _strategy(text: str) -> str:
    """`--strategy`'s value; the retired `active` refused with its reason, not as an unknown choice."""
    if text == "active":
        raise argparse.ArgumentTypeError(ACTIVE_RETIRED)
    return text


@command(
    "health next",
    *health_draw(
        arg(
            "--overlap",
            type=PEOPLE,
            metavar="K",
            help="annotators per item (default: as many as the sample's latest batch asked)",
        )
    ),
    arg("--target", choices=("share", "rank"), default="share", help="what the new items should sharpen"),
    arg("--runs", nargs=2, metavar=("A", "B"), help="with --target rank: the two runs whose order matters"),
    arg(
        "--strategy",
        choices=STRATEGIES,
        default="neyman",
        type=_strategy,
        help="within a category: at random (neyman); or at random within bins of --predictions, more where they "
        "place the invalid items (predicted)",
    ),
    arg("--predictions", metavar="NAME", help="with --strategy predicted: the predictions that draw"),
)
def cmd_health_next(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Benchmark health, step 2 and on: the next batch from items not yet drawn, where it helps most:
    Neyman allocation from the current estimates for the invalid share, or (--target rank) for the
    interval of two runs' accuracy difference on valid items, each item asked of as many annotators
    as the sample's latest batch asked (`--overlap`). `--strategy predicted` cuts each
    category into bins of the predictions and draws more where they place the invalid items."""
    from foil_studio.annotate.health import HealthError, health_batches, sample_overlap

    if not health_batches(db, args.dataset):
        raise HealthError(
            f"{args.dataset} has no health sample yet: draw a health sample first with "
            f"`./foil health sample {args.dataset} --budget N`"
        )
    if args.predictions is not None and args.strategy == "neyman":
        raise UsageError("--predictions goes with --strategy predicted (a random draw uses none)")
    if args.overlap is None:
        args.overlap = sample_overlap(db, args.dataset)
    return _health_batch(
        db,
        args,
        allocation="neyman",
        target=args.target,
        runs=tuple(args.runs or ()),
        strategy=args.strategy,
        predictions=args.predictions,
    )


@command(
    "health predictions",
    arg("dataset"),
    arg(
        "file",
        nargs="?",
        metavar="FILE",
        help="JSON lines or CSV: id (the benchmark's own item id) and invalid (0 to 1)",
    ),
    arg("--name", required=True, metavar="NAME", help="the predictions' name (a judge, a cheap crowd pass...)"),
    arg(
        "--from-run",
        metavar="RUN",
        help="instead of a file: a vqascore, flava-itm or blip2-itm run's probability that the altered caption fits",
    ),
    arg("--from-batch", metavar="BATCH", help="instead: one annotator's answers in a validate_negative batch"),
    arg("--annotator", metavar="NAME", help="with --from-batch: whose answers (invalid 1, valid 0, unsure 0.5)"),
)
def cmd_health_predictions(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Import a predictor's output on every item with a negative (a VLM judge's answer, one crowd
    vote, a validator's probability that the negative is invalid), for prediction-powered estimates:
    `health report --predictions NAME`. A name imported again is replaced whole."""
    from foil_studio.annotate.health.powered import import_predictions, predictions_from_answers, predictions_from_run

    given = [x for x in (args.file, args.from_run, args.from_batch) if x is not None]
    if len(given) != 1:
        raise UsageError("give a FILE of predictions, --from-run RUN or --from-batch BATCH (one of the three)")
    if (args.from_batch is None) != (args.annotator is None):
        raise UsageError("--from-batch and --annotator go together: whose answers, in which batch")
    if args.from_run is not None:
        return predictions_from_run(db, args.dataset, args.from_run, args.name)
    if args.from_batch is not None:
        return predictions_from_answers(db, args.dataset, args.from_batch, args.annotator, args.name)
    return import_predictions(db, args.dataset, Path(args.file), args.name)


def _health_text(result: dict[str, Any]) -> str:
    from foil_studio.annotate.health import report_markdown

    written = "".join(f"\nwrote {path}" for path in result.get("files", []))
    return report_markdown(result).rstrip() + written


@command(
    "health report",
    arg("dataset"),
    arg("--runs", nargs="+", metavar="RUN", help="runs for the leaderboard (default: every run of the dataset)"),
    arg("--ties", choices=list(TIE_RULES), help="how a tie counts (default: the benchmark's own rule)"),
    BOOTSTRAP_RESAMPLES,
    SEED,
    arg("--out", metavar="DIR", help="also write report.md and report.json there"),
    arg(
        "--consensus",
        choices=CONSENSUS,
        default="majority",
        help="an item's verdict from its validations: the majority answer, or Dawid-Skene's estimate",
    ),
    arg(
        "--predictions",
        metavar="NAME",
        help="also the invalid shares prediction-powered by these predictions (`health predictions`)",
    ),
    text=_health_text,
)
def cmd_health_report(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Benchmark health card: the sample's design, the validations' agreement, the invalid and
    ambiguous shares per category and overall with 95% intervals (beside the dataset's own verdicts
    where it has them), each run on all items and on valid items, and a methods paragraph."""
    from foil_studio.annotate.health import health_report, report_markdown, stored_blind_audit

    for run in args.runs or ():  # refused before the card is made, answered items or not
        store.get_run(db, args.dataset, run)
    if stored_blind_audit(db, args.dataset) is None:
        print(
            f"fitting the blind text-only audit of {args.dataset} on every item (once: it is stored for every "
            "report after)...",
            file=sys.stderr,
            flush=True,
        )
    report = health_report(
        db,
        args.dataset,
        args.runs,
        ties=args.ties,
        n_boot=args.bootstrap,
        seed=args.seed,
        predictions=args.predictions,
        consensus=args.consensus,
    )
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.md").write_text(report_markdown(report), encoding="utf-8")
        (out / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
        report["files"] = [str(out / "report.md"), str(out / "report.json")]
    return report
