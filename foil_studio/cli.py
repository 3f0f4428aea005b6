"""Foil Studio from a terminal: the app's operations for scripts, CI and people (see README).

Every command takes ``--db FILE`` or ``--db postgresql://...`` (default ``$FOIL_DB``, else
``foil.db``), prints text by
default and exactly one JSON document with ``--json``, reports progress on stderr and exits
non-zero with a one-line reason on stderr when it fails.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sqlite3
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import psycopg
import sqlite_utils

from foil_studio.analysis.blind import SCORERS
from foil_studio.analysis.health import ALLOCATIONS
from foil_studio.analysis.metrics import TIE_RULES
from foil_studio.analysis.model_spec import FAMILY_NAMES, PRECISIONS, ModelUnavailableError, split_family
from foil_studio.analysis.results import BOOTSTRAP
from foil_studio.annotate import links
from foil_studio.annotate.batches import SPEC_DEFAULTS
from foil_studio.annotate.export import TRAINING_FORMATS
from foil_studio.annotate.task_types import REGISTRY as TASK_REGISTRY
from foil_studio.annotate.task_types import TASK_TYPES, TaskError
from foil_studio.data import formats, paths, plain_text, store
from foil_studio.data.formats import BadInputError
from foil_studio.data.images import UnsafeImagePathError
from foil_studio.data.reading import read_text, whole_number_problem
from foil_studio.data.subsets import SUBSETS
from foil_studio.data.word_order import TaggerUnavailableError

# The layouts construction batches write: the dataset's own where it has one, else the task's.
CLEAN_FORMATS = sorted(
    {t.clean_format for t in TASK_REGISTRY.values() if t.clean_format}
    | {f for f, fmt in formats.REGISTRY.items() if fmt.writes}
)

log = logging.getLogger("foil")

Handler = Callable[[sqlite_utils.Database, argparse.Namespace], Any]


# --- command registry: each handler declares its arguments beside it -----------------------------


@dataclass(frozen=True)
class Command:
    """One CLI command: `group name` (or `name`), its handler and its arguments."""

    name: str
    group: str | None
    handler: Handler
    arguments: tuple[tuple[tuple[str, ...], dict[str, Any]], ...]
    text: Callable[[Any], str] | None = None  # the human rendering, when the generic one is not enough
    opens_store: bool = True  # False: the handler opens the stores its arguments name (--db is not used)


COMMANDS: list[Command] = []
GROUP_HELP = {
    "build": "Build a benchmark from other data (ARO's order sets from a captioned image set).",
    "health": "Benchmark health: how many negatives are invalid, and the leaderboard without them.",
    "batch": "Annotation batches: create one, see who joined a crowd study, close it, or build BiVLC's next step.",
    "annotator": "Manage annotators.",
    "runs": "Model runs: list (the default) or delete.",
}
GROUP_DEFAULT = {"runs": "list"}  # `./foil runs [DATASET]` is `./foil runs list [DATASET]`


def arg(*flags: str, **options: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """One argument of a command, as `argparse.add_argument` takes it."""
    return flags, options


def whole_number(at_least: int = 0, below: int | None = None) -> Callable[[str], int]:
    """An argument type: a whole number from `at_least` (below `below`), refused by the rule the
    readers apply to every whole number in a file (`reading.whole_number_problem`)."""

    def parse(text: str) -> int:
        try:
            value: Any = int(text)
        except ValueError:
            value = text
        problem = whole_number_problem(value, at_least, below)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return int(value)

    return parse


AT_LEAST_ONE = whole_number(1)


# Options several commands share, declared once.
SEED = arg("--seed", type=int, default=0, metavar="S", help="random seed: the same seed gives the same result")
SUBSET = arg(
    "--subset",
    choices=["all", *SUBSETS],
    default="all",
    help="only the items of a subset the source defines (VALSE: valid)",
)
BOOTSTRAP_RESAMPLES = arg(
    "--bootstrap",
    type=AT_LEAST_ONE,
    default=BOOTSTRAP,
    metavar="N",
    help="resamples for the 95%% intervals (the app uses the same)",
)
CHECKPOINT = arg("--checkpoint", metavar="FILE", help="local weights file")
BATCH_SIZE = arg("--batch-size", type=AT_LEAST_ONE, default=64, metavar="N")
DEVICE = arg("--device", default="auto", metavar="auto|cpu|cuda")
CACHE_DIR = arg("--cache-dir", metavar="DIR", help="where open_clip looks for downloaded weights")


def command(
    name: str,
    *arguments: tuple[tuple[str, ...], dict[str, Any]],
    text: Callable[[Any], str] | None = None,
    opens_store: bool = True,
) -> Callable[[Handler], Handler]:
    """Register the decorated handler as command `name` ("batch create" for a group's command);
    `text` renders its result for people (default: `as_text`); ``opens_store=False`` hands it
    no store (it opens those its arguments name)."""
    group, _, leaf = name.rpartition(" ")

    def register(handler: Handler) -> Handler:
        COMMANDS.append(Command(leaf, group or None, handler, arguments, text, opens_store))
        return handler

    return register


class TerminalProgress:
    """The one progress display of the CLI: a tqdm bar per stage on stderr, made on the stage's
    first report and closed when it completes; nothing when stderr is not a terminal (logs and
    pipes get no carriage-return litter)."""

    def __init__(self) -> None:
        self.bars: dict[str, Any] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        from tqdm import tqdm

        bar = self.bars.get(stage)
        if bar is None:
            bar = self.bars[stage] = tqdm(total=total, desc=stage, file=sys.stderr, disable=None, leave=False)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    def stage(self, name: str) -> Callable[[int, int], None]:
        """A (done, total) reporter for one named stage (what imports call)."""
        return lambda done, total: self(name, done, total)


# --- commands --------------------------------------------------------------------------------


@command("demo")
def cmd_demo(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Build (or rebuild, idempotently) the embedded demo datasets and score them with the demo model."""
    from foil_studio.analysis.scoring import score_demo
    from foil_studio.data.demo import install_demo

    started = time.perf_counter()
    print("building the demo world...", file=sys.stderr)
    reports = install_demo(db, paths.demo_image_root(args.db))
    print("scoring the demo datasets with the demo model...", file=sys.stderr)
    score_demo(db, [r.dataset for r in reports], progress=TerminalProgress())
    # each dataset's import format as `foil datasets` says it (aro-order...)
    source_formats = {d["name"]: d["format"] for d in store.list_datasets(db)}
    datasets = [
        {"name": r.dataset, "format": source_formats[r.dataset], "n_items": r.n_items, "by_category": r.by_category}
        for r in reports
    ]
    return {"datasets": datasets, "runs": store.list_runs(db), "seconds": time.perf_counter() - started}


@command(
    "serve",
    arg(
        "--port",
        type=whole_number(1, below=65536),
        default=8501,
        metavar="N",
        help="the port to serve on (default 8501)",
    ),
    arg("--address", metavar="HOST", help="listen only on this address (default: every interface)"),
)
def cmd_serve(db: sqlite_utils.Database, args: argparse.Namespace) -> None:
    """Start the app on this store and print its admin link; runs until Ctrl-C or SIGTERM, which stop
    the app too (exit code 130 or 143)."""
    from foil_studio import server
    from foil_studio.annotate.roles import admin_token

    host = args.address if args.address and args.address not in ("0.0.0.0", "::") else "localhost"
    print(f"Admin link: http://{host}:{args.port}/?token={admin_token(args.db)}", flush=True)
    foil = paths.command_name()
    print(f"Command line (another terminal): {foil} datasets, {foil} --help", flush=True)
    command = server.streamlit_command(sys.executable, args.port, args.address)
    code = server.serve(command, server.app_environment(args.db))
    if code - 128 in server.STOP_SIGNALS:  # stopped by a signal, the app with it: the shell's code for that
        sys.exit(code)
    if code != 0:
        raise OSError(f"the app stopped with exit code {code} (its reason is printed above)")


@command(
    "import",
    arg("source_format", choices=formats.IMPORT_FORMATS, metavar="FORMAT", help=", ".join(formats.IMPORT_FORMATS)),
    arg("path"),
    arg("--images", metavar="DIR", help="image root the file's image paths are relative to"),
    arg("--name", metavar="NAME", help="dataset name (default: the benchmark's name)"),
    arg("--run", metavar="RUN", help="run name for results files (default: from the file name)"),
)
def cmd_import(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Import a benchmark file or folder, or a model's per-instance results (FORMAT: one of the import
    formats in docs/formats.md's table, which says each one's layout)."""
    from foil_studio.data.loading import import_path

    report = import_path(
        db,
        args.source_format,
        Path(args.path),
        images=Path(args.images) if args.images else None,
        name=args.name,
        run=args.run,
        embedded_root=paths.embedded_image_dir(args.db, args.name or args.source_format),
        progress=TerminalProgress().stage("checking images"),
    )
    return report.to_dict()


@command(
    "build aro-order",
    arg("captions", metavar="CAPTIONS", help="Karpathy's split JSON (coco_karpathy_test.json...) or JSON lines"),
    arg("--images", required=True, metavar="DIR", help="the image root the captions' image paths are relative to"),
    arg("--name", required=True, metavar="NAME", help="the dataset's name (coco-order, flickr30k-order...)"),
    SEED,
    arg(
        "--seeds", type=AT_LEAST_ONE, default=1, metavar="K", help="perturb with K seeds (S, S+1...): one category each"
    ),
    arg("--max", type=AT_LEAST_ONE, metavar="N", help="only the first N captions"),
    arg(
        "--spacy-model", default="en_core_web_sm", metavar="MODEL", help="the spaCy model that tags: a name or a folder"
    ),
)
def cmd_build_aro_order(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Build ARO's COCO-Order / Flickr30k-Order from a captioned image set: per caption, a retrieval item of the
    caption and its four word-order perturbations (tagged by spaCy, the trigrams cut by NLTK, as ARO does; chance
    20%), one category per seed; a caption a seed's perturbations leave the same once normalised is left out of that
    seed and listed in `warnings`."""
    from foil_studio.data import order_sets, word_order
    from foil_studio.data.loading import store_parsed

    captioned = order_sets.read_captioned(Path(args.captions))
    parsed = order_sets.build_order_set(
        captioned,
        lambda captions: word_order.tag_captions(captions, model=args.spacy_model),
        name=args.name,
        seeds=range(args.seed, args.seed + args.seeds),
        limit=args.max,
    )
    if not parsed.items:
        raise UsageError(f"no caption of {args.captions} can take all four perturbations; nothing was stored")
    report = store_parsed(
        db,
        parsed,
        source_format=order_sets.ORDER_SOURCE,
        path=str(args.captions),
        images=Path(args.images),
        name=args.name,
        progress=TerminalProgress().stage("checking images"),
    )
    return report.to_dict()


@command("datasets")
def cmd_datasets(db: sqlite_utils.Database, args: argparse.Namespace) -> list[dict[str, Any]]:
    """List datasets with item counts per category."""
    return [
        {"name": d["name"], "format": d["format"], "n_items": d["n_items"], "by_category": d["by_category"]}
        for d in store.list_datasets(db)
    ]


@command(
    "export",
    arg("dataset"),
    arg("--format", choices=[*formats.EXPORT_FORMATS, *TRAINING_FORMATS], required=True),
    arg("--out", required=True, metavar="DIR"),
    SUBSET,
    SEED,
)
def cmd_export(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Write a dataset in a benchmark's own layout, which reads back with that benchmark's `import`
    (BiVLC's images copied), or as JSONL / parquet with every run's per-instance results
    (`results: {run: {correct, scores}}`; the JSONL imports back with `import jsonl`); `negclip-csv`
    writes the items whose negatives validate_negative batches validated as NegCLIP's training table."""
    from foil_studio.analysis.exports import export_dataset

    if args.format in TRAINING_FORMATS:
        if args.subset != "all":
            raise UsageError(f"--subset does not apply to {args.format}: it holds the validated items")
        return TRAINING_FORMATS[args.format](db, args.dataset, Path(args.out), seed=args.seed)
    return export_dataset(db, args.dataset, args.format, Path(args.out), subset=args.subset)


@command(
    "runs list",
    arg("dataset", nargs="?"),
)
def cmd_runs(db: sqlite_utils.Database, args: argparse.Namespace) -> list[store.RunSummary]:
    """List model runs (scored here or imported); `./foil runs [DATASET]` says the same."""
    return store.list_runs(db, args.dataset)


@command(
    "runs delete",
    arg("dataset"),
    arg("run"),
)
def cmd_runs_delete(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Delete a run with its scores and stored summaries (cached embeddings stay)."""
    deleted = store.delete_run(db, args.dataset, args.run)
    return {
        "dataset": args.dataset,
        "deleted_run": args.run,
        "deleted_scores": deleted["scores"],
        "deleted_summaries": deleted["run_summaries"],
    }


@command(
    "score",
    arg("dataset"),
    arg(
        "--model",
        required=True,
        metavar="ARCH",
        help="open_clip architecture, e.g. ViT-B-32, or hf-hub:ORG/NAME; or FAMILY:FOLDER_OR_NAME for another family: "
        + ", ".join(FAMILY_NAMES),
    ),
    arg("--pretrained", metavar="TAG", help="pretrained tag (e.g. openai), or 'none' for random weights (timing only)"),
    CHECKPOINT,
    arg(
        "--precision",
        choices=PRECISIONS,
        default="auto",
        help="auto (default): bf16 where the device computes it natively, else fp32; the run records which and why",
    ),
    BATCH_SIZE,
    arg("--limit", type=AT_LEAST_ONE, metavar="N", help="score only the first N items"),
    arg("--run", metavar="NAME", help="run name (default: model-tag, with -bf16 when run in bf16)"),
    DEVICE,
    CACHE_DIR,
)
def cmd_score(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Score every item with an open_clip model (cached, batched, de-duplicated); precision `auto`
    is bf16 where the CPU or GPU computes it natively, else fp32.

    Other model families: --model FAMILY:FOLDER_OR_NAME, a folder made by save_pretrained (model and
    processor) or a hub name already in the Hugging Face cache. blip-itm: BLIP retrieval models scored
    as ARO scores them (ITM match logit with [ENC] first, plus the ITC cosine; ARO's
    model_zoo/blip_models.py); flava-itm: FlavaForPreTraining scored as ARO scores it (softmax
    probability of a match, nothing masked; ARO's model_zoo/flava.py). Each pair is scored once and
    cached; the run records its family, rule and weights."""
    return _score_in(db, args, args.precision, run=args.run, limit=args.limit)


@command(
    "parity",
    arg("dataset"),
    arg(
        "--model",
        metavar="ARCH",
        help="open_clip architecture: score the dataset in both precisions (embeddings cached)",
    ),
    arg("--pretrained", metavar="TAG", help="pretrained tag, or 'none' for random weights"),
    CHECKPOINT,
    arg("--precision", choices=PRECISIONS, default="auto", help="run B's precision (default auto)"),
    arg("--against", choices=PRECISIONS, default="fp32", help="run A's precision (default fp32)"),
    arg("--runs", nargs=2, metavar=("A", "B"), help="compare two stored runs instead of scoring"),
    BATCH_SIZE,
    DEVICE,
    CACHE_DIR,
    SUBSET,
    text=lambda result: parity_text(result),
)
def cmd_parity(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Which items' decisions flip between two precisions of one model (or two runs), with both
    margins, and how the headline metric changes (95% paired bootstrap interval)."""
    from foil_studio.analysis.parity import parity

    if args.runs:
        run_a, run_b = args.runs
        said: dict[str, Any] = {}
    elif args.model:
        scored_a, scored_b = (_score_in(db, args, precision) for precision in (args.against, args.precision))
        run_a, run_b = scored_a["run"], scored_b["run"]
        if run_a == run_b:
            raise UsageError(
                f"both runs are {run_a} ({scored_b['precision_reason']}); choose another --precision or --against"
            )
        said = {"precision_a": scored_a["precision_reason"], "precision_b": scored_b["precision_reason"]}
    else:
        raise UsageError("give --model (to score in two precisions) or --runs A B")
    return {**parity(db, args.dataset, run_a, run_b, subset=args.subset).to_dict(), **said}


def _score_in(
    db: sqlite_utils.Database,
    args: argparse.Namespace,
    precision: str,
    *,
    run: str | None = None,
    limit: int | None = None,
) -> dict[str, Any]:
    """Score the dataset with the model of `args` in `precision` (`auto` resolved): the report,
    with the precision it ran in and why (`score` and `parity` alike)."""
    from foil_studio.analysis.models import ModelSpec
    from foil_studio.analysis.scoring import score_with_model

    if family := split_family(args.model):
        return _score_family(db, args, family, precision, run=run, limit=limit)
    return score_with_model(
        db,
        args.dataset,
        ModelSpec(args.model, args.pretrained, args.checkpoint, precision),
        device=args.device,
        cache_dir=args.cache_dir,
        run=run,
        batch_size=args.batch_size,
        limit=limit,
        progress=TerminalProgress(),
        notify=lambda sentence: print(sentence, file=sys.stderr),
    )


def _score_family(
    db: sqlite_utils.Database,
    args: argparse.Namespace,
    family: tuple[str, str],
    precision: str,
    *,
    run: str | None = None,
    limit: int | None = None,
) -> dict[str, Any]:
    """`_score_in` for a family other than open_clip (`--model FAMILY:FOLDER_OR_NAME`)."""
    from foil_studio.analysis.scorers.pairwise import score_with_family

    if args.pretrained or args.checkpoint:
        raise UsageError(f"--pretrained and --checkpoint are open_clip's; {family[0]} reads its folder or hub name")
    return score_with_family(
        db,
        args.dataset,
        *family,
        precision=precision,
        device=args.device,
        run=run,
        batch_size=args.batch_size,
        limit=limit,
        progress=TerminalProgress(),
        notify=lambda sentence: print(sentence, file=sys.stderr),
    )


@command(
    "metrics",
    arg("dataset"),
    arg("--run", required=True, metavar="RUN"),
    BOOTSTRAP_RESAMPLES,
    SEED,
    SUBSET,
    arg(
        "--ties",
        choices=list(TIE_RULES),
        help="how a tied comparison counts (default: the benchmark's own rule, said in `tie_rule`)",
    ),
    text=lambda result: metrics_text(result),
)
def cmd_metrics(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """The benchmark's metrics of one run per category, with bootstrap 95% intervals and the number of
    ties; a tie counts as the benchmark's own code counts it unless --ties says otherwise (`tie_rule`
    says which and why); --subset valid keeps the items the source's own validation kept."""
    from foil_studio.analysis.results import run_metrics

    return run_metrics(
        db, args.dataset, args.run, n_boot=args.bootstrap, seed=args.seed, subset=args.subset, ties=args.ties
    )


BASE_URL = arg(
    "--base-url",
    metavar="URL",
    help=f"the app's address links start with (default: ${links.BASE_URL_VARIABLE}; without either, links are paths)",
)


def _base_url(args: argparse.Namespace) -> str | None:
    """--base-url, else $FOIL_BASE_URL; None (links as paths, said on stderr) when neither is given."""
    base = (args.base_url or "").strip().rstrip("/") or links.app_address()
    if base is None:
        print(f"note: {links.UNKNOWN_ADDRESS}", file=sys.stderr)
    return base


@command(
    "annotator add",
    arg("name"),
    BASE_URL,
)
def cmd_annotator_add(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Add an annotator (an existing one gets a new link; earlier links stay valid); print their private link."""
    annotator = store.ensure_annotator(db, args.name)
    token = annotator["token"] or store.issue_token(db, annotator["id"])
    return {"name": annotator["name"], "token": token, "url": links.annotator_link(_base_url(args), token)}


@command(
    "annotator link",
    arg("name"),
    arg(
        "--revoke-old",
        action="store_true",
        help="their earlier links stop working (a link that leaked); default: they stay valid",
    ),
    BASE_URL,
)
def cmd_annotator_link(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Issue a new private link for an annotator whose link was lost (shown once; only its hash is
    stored); earlier links keep working unless --revoke-old."""
    from foil_studio.annotate.batches import reissue_link

    token = reissue_link(db, args.name, revoke_old=args.revoke_old)
    return {
        "name": args.name,
        "token": token,
        "url": links.annotator_link(_base_url(args), token),
        "earlier_links_revoked": args.revoke_old,
    }


def migrate_store_text(result: dict[str, Any]) -> str:
    """The copy's table of rows and its labels' checksum, for people."""
    lines = [f"copied {result['source']} -> {result['destination']}"]
    lines += [f"  {table:<16} {n:>10,}" for table, n in result["rows"].items()]
    lines.append(f"row counts match; labels checksum {result['labels_checksum'][:16]}... matches")
    return "\n".join(lines)


@command(
    "migrate-store",
    arg("source", metavar="SRC", help="the store to copy: a file or a postgresql:// URL"),
    arg("destination", metavar="DST", help="an empty store: a new file, or an empty PostgreSQL database's URL"),
    text=migrate_store_text,
    opens_store=False,
)
def cmd_migrate_store(db: sqlite_utils.Database | None, args: argparse.Namespace) -> dict[str, Any]:
    """Copy a whole store to another engine (SQLite to PostgreSQL or back) into an empty store,
    checked by row counts and a checksum of the labels. Files (images, exports) stay where they are."""
    source = store.open_existing_db(
        args.source
    )  # before the destination is created: a wrong source path leaves no file behind
    destination = store.open_db(args.destination)
    result = store.copy_store(source, destination)
    return {"source": store.redacted(args.source), "destination": store.redacted(args.destination), **result}


@command("admin-token")
def cmd_admin_token(db: sqlite_utils.Database, args: argparse.Namespace) -> str:
    """Print the admin token of this store (from $FOIL_ADMIN_TOKEN or generated once)."""
    from foil_studio.annotate.roles import admin_token

    return admin_token(args.db)


@command(
    "batch create",
    arg("dataset"),
    arg("--task", required=True, choices=TASK_TYPES),
    arg("--category", action="append", metavar="CAT", help="only items of this category (repeatable)"),
    arg("--n", type=AT_LEAST_ONE, metavar="N", help="sample this many items (default: all)"),
    arg("--overlap", type=AT_LEAST_ONE, default=SPEC_DEFAULTS["overlap"], metavar="K", help="annotators per item"),
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
        type=AT_LEAST_ONE,
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
        help="crowd study: a participant idle this long gives their unopened units back",
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
        task=args.task,
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
def cmd_batch_joins(db: sqlite_utils.Database, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Who joined a crowd study through its link, when, and what they hold and answered."""
    from foil_studio.annotate.crowd_studies import study_joins

    return study_joins(db, args.batch)


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
        type=AT_LEAST_ONE,
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


HEALTH_DRAW = (
    arg("dataset"),
    arg("--budget", type=AT_LEAST_ONE, metavar="N", help="items to draw in all (or --per-category)"),
    arg("--per-category", type=AT_LEAST_ONE, metavar="N", help="items to draw from each category instead of a budget"),
    arg("--annotators", nargs="+", metavar="NAME", help="annotator names (created if new; default: all)"),
    arg(
        "--overlap",
        type=AT_LEAST_ONE,
        default=3,
        metavar="K",
        help="annotators per item (default 3: a majority always exists)",
    ),
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
    *HEALTH_DRAW,
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


@command(
    "health next",
    *HEALTH_DRAW,
    arg("--target", choices=("share", "rank"), default="share", help="what the new items should sharpen"),
    arg("--runs", nargs=2, metavar=("A", "B"), help="with --target rank: the two runs whose order matters"),
)
def cmd_health_next(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Benchmark health, step 2 and on: the next batch from items not yet drawn, where it helps most:
    Neyman allocation from the current estimates for the invalid share, or (--target rank) for the
    interval of two runs' accuracy difference on valid items."""
    from foil_studio.annotate.health import HealthError, health_batches

    if not health_batches(db, args.dataset):
        raise HealthError(
            f"{args.dataset} has no health sample yet: draw a health sample first with "
            f"`./foil health sample {args.dataset} --budget N`"
        )
    return _health_batch(db, args, allocation="neyman", target=args.target, runs=tuple(args.runs or ()))


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
    text=_health_text,
)
def cmd_health_report(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Benchmark health card: the sample's design, the validations' agreement, the invalid and
    ambiguous shares per category and overall with 95% intervals (beside the dataset's own verdicts
    where it has them), each run on all items and on valid items, and a methods paragraph."""
    from foil_studio.annotate.health import health_report, report_markdown

    for run in args.runs or ():  # refused before the card is made, answered items or not
        store.get_run(db, args.dataset, run)
    report = health_report(db, args.dataset, args.runs, ties=args.ties, n_boot=args.bootstrap, seed=args.seed)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.md").write_text(report_markdown(report), encoding="utf-8")
        (out / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
        report["files"] = [str(out / "report.md"), str(out / "report.json")]
    return report


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
        type=AT_LEAST_ONE,
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
    arg("--folds", type=int, default=5, metavar="K"),
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
    arg("--grid", type=int, default=8, metavar="K"),
    SEED,
    arg("--out", required=True, metavar="DIR"),
)
def cmd_refine(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Adversarial refinement against two blind scorers; writes the kept subset in SugarCrepe's layout."""
    from foil_studio.analysis.audit import refine_dataset

    result = refine_dataset(db, args.dataset, tuple(args.scorers), grid=args.grid, seed=args.seed, out=Path(args.out))
    result.pop("gaps")
    result.pop("kept")
    return result


# --- text output -----------------------------------------------------------------------------


def as_text(value: Any, indent: str = "") -> str:
    """A readable rendering of a command's result: scalars as `key: value`, lists of records and
    mappings of records (`by_category`) as aligned tables, floats with two decimals."""
    if isinstance(value, list):
        if value and all(_is_record(v) for v in value):
            return _indented(plain_text.table(value), indent)
        return "\n\n".join(as_text(v, indent) for v in value) or f"{indent}(none)"
    if not isinstance(value, dict):
        return f"{indent}{plain_text.cell(value)}"
    lines = []
    for key, item in value.items():
        if isinstance(item, list) and item and all(_is_record(v) for v in item):
            lines += [f"{indent}{key}:", _indented(plain_text.table(item), indent + "  ")]
        elif isinstance(item, dict) and item and all(isinstance(v, dict) and _is_record(v) for v in item.values()):
            label = key.removeprefix("by_") if key.startswith("by_") else "key"
            rows = [{label: k, **_flat(v)} for k, v in item.items()]
            lines += [f"{indent}{key}:", _indented(plain_text.table(rows), indent + "  ")]
        elif isinstance(item, dict) and item and not _is_record(item):
            lines += [f"{indent}{key}:", as_text(item, indent + "  ")]
        else:
            lines.append(f"{indent}{key}: {plain_text.cell(item) if item not in ({}, []) else '(none)'}")
    return "\n".join(lines)


def _is_record(value: Any) -> bool:
    """A dict whose values fit in table cells: scalars, flat mappings, short lists of scalars."""
    return isinstance(value, dict) and all(
        _fits_a_cell(v) or (isinstance(v, dict) and all(_fits_a_cell(x) for x in v.values())) for v in value.values()
    )


def _fits_a_cell(value: Any) -> bool:
    return not isinstance(value, (dict, list, tuple)) or (
        isinstance(value, (list, tuple)) and all(not isinstance(v, (dict, list, tuple)) for v in value)
    )


def _flat(record: dict[str, Any]) -> dict[str, Any]:
    """A record with its nested mappings spread into columns (`blind` -> `blind stats`...)."""
    flat: dict[str, Any] = {}
    for key, value in record.items():
        if isinstance(value, dict):
            flat.update({f"{key} {k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return flat


def _indented(block: str, indent: str) -> str:
    return "\n".join(indent + line for line in block.splitlines())


def metrics_text(result: dict[str, Any]) -> str:
    """`metrics`: the run's header, then one row per category and metric with its 95% interval
    beside the value (the order of the app's table)."""
    from foil_studio.analysis.results import TABLED_KEYS, metric_rows, over_seeds_sentence

    head = {k: v for k, v in result.items() if k not in TABLED_KEYS and not isinstance(v, (dict, list))}
    if "tie_rule" in result:
        head["ties"] = f"a tie counts as {result['tie_rule']['rule']} ({result['tie_rule']['why']})"
    rest = {
        k: v
        for k, v in result.items()
        if k not in TABLED_KEYS and k not in head and k not in ("tie_rule", "over_seeds")
    }
    rows = [
        {
            **{k: v for k, v in row.items() if k in ("category", "per", "metric", "value")},
            "95% interval": plain_text.interval_text(row["interval"]),
            **{k: row[k] for k in ("n", "ties") if k in row},
        }
        for row in metric_rows(result)
    ]
    seeds = [over_seeds_sentence(result["over_seeds"])] if "over_seeds" in result else []
    return "\n".join([as_text(head), plain_text.table(rows), *seeds, *([as_text(rest)] if rest else [])])


def parity_text(result: dict[str, Any]) -> str:
    """`parity`: the runs and why each ran in its precision, the headline change with its
    interval, then the items whose decision flips."""
    change = (
        f"{result['metric']}: {plain_text.cell(result['value_a'])} under A, {plain_text.cell(result['value_b'])} under "
        f"B, change {plain_text.cell(result['change'])} (95% interval "
        f"{plain_text.interval_text(result['change_interval'])})"
    )
    why = [
        f"{run} ({result[key]})"
        for run, key in ((result["run_a"], "precision_a"), (result["run_b"], "precision_b"))
        if key in result
    ]
    lines = [
        f"A: {result['run_a']}, B: {result['run_b']} on {result['dataset']}, {result['n_items']} items both scored",
        *(["precisions: " + "; ".join(why)] if why else []),
        change,
    ]
    lines.append(f"{result['n_flips']} items decide differently" + (":" if result["flips"] else " (none)"))
    margins = [
        {k: f"{v:+.5f}" if isinstance(v, float) else v for k, v in row.items()} for row in result["flips"]
    ]  # bf16 flips sit within 0.01 of a tie
    return "\n".join([*lines, *([plain_text.table(margins)] if margins else [])])


def agreement_text(report: dict[str, Any]) -> str:
    """`agreement`: the coefficients as the page's table, then Cohen's kappa per pair."""
    from foil_studio.annotate.agreement import coefficient_rows, question_rows

    head = {k: report[k] for k in ("batch", "n_items", "n_labels", "level") if k in report}
    parts = [as_text(head), plain_text.table(coefficient_rows(report))]
    if report["cohen_pairs"]:
        parts += ["Cohen's kappa per pair:", plain_text.table(report["cohen_pairs"])]
    if "by_question" in report:
        parts += ["per question:", plain_text.table(question_rows(report))]
    return "\n".join([*parts, report["note"]])


def jsonable(value: Any) -> Any:
    """JSON-safe data: NaN becomes null (an undefined figure), tuples become lists."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


# --- argument parsing ------------------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    """argparse's parser, but its refusals are one line, as every other error of the CLI."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every registered command (``@command`` beside each handler)."""
    common = Parser(add_help=False)
    common.add_argument(
        "--db",
        help="store file or postgresql:// URL (default: $FOIL_DB, else ./foil.db if present"
        + (", else the demo store demo_store/foil.db if built)" if paths.DEMO_STORE else ")"),
    )
    common.add_argument("--json", action="store_true", help="print one JSON document")
    common.add_argument("--debug", action="store_true", help="show the Python traceback of an error")
    parser = Parser(prog="foil", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    groups: dict[str, Any] = {}
    for registered in COMMANDS:
        parent = commands
        if registered.group:
            if registered.group not in groups:
                holder = commands.add_parser(registered.group, help=GROUP_HELP[registered.group])
                groups[registered.group] = holder.add_subparsers(dest="action", required=True)
            parent = groups[registered.group]
        sub = parent.add_parser(
            registered.name,
            parents=[common],
            help=_argparse_text(registered.handler.__doc__),
            description=" ".join((registered.handler.__doc__ or "").split()),  # not %-formatted by argparse
        )
        for flags, options in registered.arguments:
            sub.add_argument(*flags, **options)
        sub.set_defaults(
            handler=registered.handler, render=registered.text or as_text, opens_store=registered.opens_store
        )
    return parser


def usage(command: Command) -> str:
    """The command line README shows for `command`, read off its registered arguments.

    >>> usage(next(c for c in COMMANDS if c.name == "labels"))
    './foil labels BATCH [--format jsonl|csv] [--out FILE]'
    """
    words = ["./foil", *([command.group] if command.group else []), command.name]
    return " ".join(words + [_usage_word(flags, options) for flags, options in command.arguments])


def _usage_word(flags: tuple[str, ...], options: dict[str, Any]) -> str:
    flag = flags[0]
    optional = (flag.startswith("-") and not options.get("required")) or options.get("nargs") == "?"
    if options.get("action") in ("store_true", "store_false"):
        return f"[{flag}]"
    metavar = options.get("metavar")
    if isinstance(metavar, tuple):
        value = " ".join(metavar)
    elif metavar:
        value = metavar
    elif "choices" in options:
        value = "|".join(map(str, options["choices"]))
    else:
        value = (options.get("dest") or flag.lstrip("-")).upper().replace("-", "_")
    if options.get("nargs") == "+" or options.get("action") == "append":
        value += " ..."
    elif isinstance(options.get("nargs"), int) and not isinstance(metavar, tuple):
        value = " ".join([value] * options["nargs"])
    word = f"{flag} {value}" if flag.startswith("-") else value
    return f"[{word}]" if optional else word


def command_table() -> str:
    """README's command table: each command's usage and its handler's first paragraph (`--help`)."""
    rows = ["| command | what it does |", "| --- | --- |"]
    for registered in COMMANDS:
        about = " ".join((registered.handler.__doc__ or "").strip().split("\n\n")[0].split())
        rows.append(f"| `{_cell(usage(registered))}` | {_cell(about)} |")
    return "\n".join(rows)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")  # a pipe inside a Markdown table cell


def with_default_action(argv: list[str]) -> list[str]:
    """`argv` with a group's default action filled in where none is named (`runs X` -> `runs list X`).

    >>> with_default_action(["runs", "demo"]), with_default_action(["runs", "delete", "d", "r"]), with_default_action(["runs", "-h"])
    (['runs', 'list', 'demo'], ['runs', 'delete', 'd', 'r'], ['runs', '-h'])
    """  # noqa: E501
    if not argv or argv[0] not in GROUP_DEFAULT:
        return argv
    actions = {c.name for c in COMMANDS if c.group == argv[0]}
    rest = argv[1:]
    if rest and (rest[0] in actions or rest[0] in ("-h", "--help")):
        return argv
    return [argv[0], GROUP_DEFAULT[argv[0]], *rest]


def _argparse_text(doc: str | None) -> str | None:
    """A docstring as argparse help: argparse %-formats help text, so a literal % ("95% interval")
    must be doubled or `--help` ends in a traceback."""
    return None if doc is None else " ".join(doc.split()).replace("%", "%%")


# Bad input, absent names, unreadable files and unavailable weights end in one line on stderr,
# not a traceback (--debug shows it).
class UsageError(Exception):
    """Arguments that parse but do not go together; said in one line, like argparse's own."""


EXPECTED_ERRORS = (
    UsageError,
    TaggerUnavailableError,
    BadInputError,
    UnsafeImagePathError,
    store.StoreError,
    TaskError,
    OSError,
    ModelUnavailableError,
)


def main(argv: list[str] | None = None) -> int:
    """Run one command; return the process exit code."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s", stream=sys.stderr)
    args = build_parser().parse_args(with_default_action(sys.argv[1:] if argv is None else argv))
    if args.db is None and args.opens_store:
        args.db = str(paths.cli_db_path())
        if Path(args.db) == paths.DEMO_STORE:
            print(f"using the demo store {args.db} (give --db or set $FOIL_DB for another)", file=sys.stderr)
    try:
        db = store.open_db(args.db) if args.opens_store else None
        result = args.handler(db, args)
    except EXPECTED_ERRORS as error:
        if args.debug:
            raise
        print(f"error: {error}", file=sys.stderr)
        return 1
    except sqlite3.DatabaseError as error:  # a store damaged after it was opened
        if args.debug:
            raise
        print(
            f"error: the store {args.db} is damaged or unreadable ({error}); restore it from a backup", file=sys.stderr
        )
        return 1
    except psycopg.Error as error:  # the PostgreSQL server went away, or refused a statement
        if args.debug:
            raise
        print(f"error: the PostgreSQL store {store.redacted(args.db)} failed: {str(error).strip()}", file=sys.stderr)
        return 1
    if result is not None:
        print(json.dumps(jsonable(result), ensure_ascii=False) if args.json else args.render(result))
    return 0


def run() -> None:
    """The `foil` console script."""
    try:
        sys.exit(main())
    except BrokenPipeError:  # `foil ... | head` closed the pipe: the rest is not wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)


if __name__ == "__main__":
    run()
