"""Commands on runs: `runs`, `runs delete`, `score`, `parity`, `metrics`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import sqlite_utils

from foil_studio.analysis.cluster import CLUSTER_INSTALL, MAX_ACTORS, ClusterSpec
from foil_studio.analysis.metrics import TIE_RULES
from foil_studio.analysis.model_spec import PRECISIONS
from foil_studio.analysis.scorers import pair_families, split_family
from foil_studio.cli.base import (
    AT_LEAST_ONE,
    BATCH_SIZE,
    BOOTSTRAP_RESAMPLES,
    CACHE_DIR,
    CHECKPOINT,
    DEVICE,
    SEED,
    SUBSET,
    TerminalProgress,
    UsageError,
    arg,
    command,
    count,
    whole_number,
)
from foil_studio.cli.text import metrics_text, parity_text
from foil_studio.data import store


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
        + "; ".join(f"{family.name} ({family.summary})" for family in pair_families()),
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
    arg(
        "--cluster",
        metavar="ADDRESS",
        help="score on a Ray cluster: local (one started on this machine for the run), auto (the cluster this "
        f"machine joined) or ray://HEAD:10001; needs Ray ({CLUSTER_INSTALL}). Each actor loads the model once; "
        "what is scored is stored as it comes back, so a stopped run resumes with the rest",
    ),
    arg("--actors", type=count(MAX_ACTORS), default=1, metavar="N", help="actors on the cluster (with --cluster)"),
    arg("--actor-cpus", type=count(256), default=1, metavar="N", help="CPUs each actor takes (with --cluster)"),
    arg(
        "--actor-gpus", type=whole_number(0, 17), default=0, metavar="N", help="GPUs each actor takes (with --cluster)"
    ),
)
def cmd_score(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Score every item with an open_clip model (cached, batched, de-duplicated); precision `auto`
    is bf16 where the CPU or GPU computes it natively, else fp32.

    Other model families: --model FAMILY:FOLDER_OR_NAME, a folder made by save_pretrained (model and
    processor) or a hub name already in the Hugging Face cache; --model's help names each family
    (its rule and source: docs/scoring.md). Each pair is scored once and cached; the run records its
    family, rule and weights."""
    if args.cluster is None and (args.actors, args.actor_cpus, args.actor_gpus) != (1, 1, 0):
        raise UsageError("--actors, --actor-cpus and --actor-gpus are for --cluster")
    return _score_in(db, args, args.precision, run=args.run, limit=args.limit)


def _cluster(args: argparse.Namespace) -> ClusterSpec | None:
    """The cluster `foil score` was asked to score on (None: this process)."""
    if getattr(args, "cluster", None) is None:
        return None
    return ClusterSpec(args.cluster, actors=args.actors, cpus=args.actor_cpus, gpus=args.actor_gpus)


@command(
    "parity",
    arg("dataset"),
    arg(
        "--model",
        metavar="ARCH",
        help="open_clip architecture, or FAMILY:FOLDER_OR_NAME: score the dataset in both precisions "
        "(embeddings or pair scores cached)",
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
        _refuse_one_precision(args)
        scored_a, scored_b = (_score_in(db, args, precision) for precision in (args.against, args.precision))
        run_a, run_b = scored_a["run"], scored_b["run"]
        said = {"precision_a": scored_a["precision_reason"], "precision_b": scored_b["precision_reason"]}
    else:
        raise UsageError("give --model (to score in two precisions) or --runs A B")
    return {**parity(db, args.dataset, run_a, run_b, subset=args.subset).to_dict(), **said}


def _refuse_one_precision(args: argparse.Namespace) -> None:
    """Refuse, before any model loads, a comparison of one precision with itself (`auto` may
    resolve to the precision of --against): both scorings would make one run."""
    from foil_studio.analysis.models import pick_device, resolve_precision

    device = pick_device(args.device)
    (a, _), (b, why) = (resolve_precision(precision, device) for precision in (args.against, args.precision))
    if a == b:
        raise UsageError(f"both runs would be in {a} ({why}); choose another --precision or --against")


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

    cluster = _cluster(args)
    if family := split_family(args.model):
        return _score_family(db, args, family, precision, cluster, run=run, limit=limit)
    spec = ModelSpec(args.model, args.pretrained, args.checkpoint, precision)
    settings: dict[str, Any] = {"device": args.device, "cache_dir": args.cache_dir, "run": run, "limit": limit}
    settings |= {"batch_size": args.batch_size, "progress": TerminalProgress()}
    if cluster is not None:
        from foil_studio.analysis.cluster import score_on_cluster

        return score_on_cluster(db, args.dataset, spec, cluster, notify=_to_stderr, **settings)
    return score_with_model(db, args.dataset, spec, notify=_to_stderr, **settings)


def _to_stderr(sentence: str) -> None:
    print(sentence, file=sys.stderr)


def _score_family(
    db: sqlite_utils.Database,
    args: argparse.Namespace,
    family: tuple[str, str],
    precision: str,
    cluster: ClusterSpec | None,
    *,
    run: str | None = None,
    limit: int | None = None,
) -> dict[str, Any]:
    """`_score_in` for a family other than open_clip (`--model FAMILY:FOLDER_OR_NAME`), here or on a cluster."""
    from foil_studio.analysis.scorers.pairwise import score_with_family

    if args.pretrained or args.checkpoint:
        raise UsageError(f"--pretrained and --checkpoint are open_clip's; {family[0]} reads its folder or hub name")
    settings: dict[str, Any] = {"precision": precision, "device": args.device, "run": run, "limit": limit}
    settings |= {"batch_size": args.batch_size, "progress": TerminalProgress(), "notify": _to_stderr}
    if cluster is not None:
        from foil_studio.analysis.cluster import score_family_on_cluster

        return score_family_on_cluster(db, args.dataset, *family, cluster, **settings)
    return score_with_family(db, args.dataset, *family, **settings)


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
