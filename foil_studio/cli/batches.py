"""Commands that make and close batches: `batch create`, `joins`, `close`, `from-picks`."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path
from typing import Any

import sqlite_utils

from foil_studio.annotate import links
from foil_studio.annotate.batches import SPEC_DEFAULTS
from foil_studio.annotate.task_types import TASK_TYPES
from foil_studio.cli.base import AT_LEAST_ONE, PEOPLE, SEED, arg, command
from foil_studio.cli.people import BASE_URL, _base_url
from foil_studio.data import store
from foil_studio.data.reading import read_text


@command(
    "batch create",
    arg("dataset"),
    arg("--task-type", required=True, choices=TASK_TYPES),
    arg("--category", action="append", metavar="CAT", help="only items of this category (repeatable)"),
    arg("--n", type=AT_LEAST_ONE, metavar="N", help="sample this many items (default: all)"),
    arg("--overlap", type=PEOPLE, default=SPEC_DEFAULTS["overlap"], metavar="K", help="annotators per item"),
    arg(
        "--gold-share",
        type=float,
        default=SPEC_DEFAULTS["gold_share"],
        metavar="F",
        help="share of gold items (known answers)",
    ),
    arg("--annotators", nargs="+", metavar="NAME", help="annotator names (created if new; default: all)"),
    SEED,
    arg("--name", metavar="NAME"),
    BASE_URL,
    arg(
        "--lease-minutes",
        metavar="M",
        type=float,
        default=SPEC_DEFAULTS["lease_minutes"],
        help="an opened item unanswered this long goes to someone else",
    ),
    arg(
        "--crowd-items",
        type=AT_LEAST_ONE,
        metavar="N",
        help="crowd study: items per participant who joins through the study link",
    ),
    arg(
        "--max-participants",
        type=PEOPLE,
        metavar="P",
        help="crowd study: participants holding work at once (default: just enough)",
    ),
    arg(
        "--window",
        metavar="W",
        type=AT_LEAST_ONE,
        default=SPEC_DEFAULTS["window"],
        help="crowd study: unanswered units a participant holds at most; more are dealt as they answer",
    ),
    arg(
        "--no-show-minutes",
        metavar="M",
        type=float,
        default=SPEC_DEFAULTS["idle_minutes"],
        help="crowd study: a participant idle this long gives their unopened units back (all, if they answered none)",
    ),
    arg(
        "--consent-file",
        metavar="FILE",
        help="crowd study: a text file with the consent a participant agrees to (default: a short generic one)",
    ),
    arg(
        "--completion-url",
        metavar="URL",
        help="crowd study: where a finished participant goes, {code} for the code (default: Prolific's)",
    ),
)
def cmd_batch_create(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Create an annotation batch: items, overlap, gold share, annotators; with --crowd-items, a crowd
    study whose one link deals units to participants as they work."""
    from foil_studio.annotate.batches import DEFAULT_CONSENT, PROLIFIC_COMPLETION_URL, BatchSpec, create_batch

    annotators = tuple(args.annotators or (a["name"] for a in store.list_annotators(db)))
    crowd = args.crowd_items is not None
    spec = BatchSpec(
        dataset=args.dataset,
        task_type=args.task_type,
        annotators=() if crowd else annotators,
        overlap=args.overlap,
        n=args.n,
        categories=tuple(args.category or ()),
        gold_share=args.gold_share,
        seed=args.seed,
        name=args.name,
        lease_minutes=args.lease_minutes,
        crowd_items=args.crowd_items,
        max_participants=args.max_participants,
        window=args.window,
        idle_minutes=args.no_show_minutes,
        consent=read_text(Path(args.consent_file)) if args.consent_file else DEFAULT_CONSENT,
        completion_url=args.completion_url or PROLIFIC_COMPLETION_URL,
    )
    result = create_batch(db, spec)
    base = _base_url(args)
    for annotator in result["annotators"]:
        annotator["url"] = links.annotator_link(base, annotator["token"])
    if crowd:
        result["crowd_url"] = (base or "") + result["crowd_url"]
    return result


@command(
    "batch joins",
    arg("batch"),
)
def cmd_batch_joins(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """A crowd study's places (taken now, when the next frees) and flood cap, and who joined through its link, when,
    who returned the study and when, and what they hold and answered."""
    from foil_studio.annotate.crowd_studies import study_joins, study_places

    places = study_places(db, args.batch)
    return {
        "batch": args.batch,
        **asdict(places),
        "rule": places.sentence(),
        "participants": study_joins(db, args.batch),
    }


@command(
    "batch close",
    arg("batch"),
    arg("--reopen", action="store_true"),
)
def cmd_batch_close(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Close a crowd study to new participants (--reopen opens it again); those in may finish."""
    from foil_studio.annotate.crowd_studies import close_study

    close_study(db, args.batch, closed=not args.reopen)
    return {"batch": args.batch, "closed": not args.reopen}


@command(
    "batch from-picks",
    arg("batch", help="a pick_image batch"),
    arg("--annotators", nargs="+", metavar="NAME", help="default: the pick batch's annotators"),
    arg(
        "--overlap",
        type=PEOPLE,
        metavar="K",
        help="annotators per item (default: two, or one when only one holds the batch)",
    ),
    SEED,
    arg("--name", metavar="NAME"),
)
def cmd_batch_from_picks(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """BiVLC step 2: the chosen images of a pick_image batch become an ambiguity batch."""
    from foil_studio.annotate.construction import create_ambiguity_batch

    annotators = tuple(args.annotators) if args.annotators else None
    return create_ambiguity_batch(
        db, args.batch, annotators=annotators, overlap=args.overlap, seed=args.seed, name=args.name
    )
