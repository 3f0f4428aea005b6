"""Commands on datasets: the demo, `serve`, `import`, ARO's order sets, `datasets`, `items`, `export`."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import sqlite_utils

from foil_studio.annotate.export import TRAINING_FORMATS
from foil_studio.cli.base import (
    AT_LEAST_ONE,
    SEED,
    SUBSET,
    TerminalProgress,
    UsageError,
    arg,
    command,
    count,
    whole_number,
)
from foil_studio.data import formats, paths, store


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

    server.check_port(args.port, args.address)  # a taken port is said before any link names it
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
    arg(
        "--category",
        metavar="NAME",
        help="the category of a copy that names none (hf: a Hub repository per category, such as "
        "HuggingFaceM4/SugarCrepe_swap_att)",
    ),
)
def cmd_import(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Import a benchmark file or folder, or a model's per-instance results (FORMAT: one of the import
    formats in docs/formats.md's table, which says each one's layout)."""
    from foil_studio.data.loading import import_path

    report = import_path(
        db,
        args.source_format,
        paths.given_path(args.path),
        images=Path(args.images) if args.images else None,
        name=args.name,
        run=args.run,
        embedded_root=paths.embedded_image_dir(args.db, args.name or args.source_format),
        progress=TerminalProgress().stage("checking images"),
        category=args.category,
    )
    return report.to_dict()


@command(
    "build aro-order",
    arg("captions", metavar="CAPTIONS", help="Karpathy's split JSON (coco_karpathy_test.json...) or JSON lines"),
    arg("--images", required=True, metavar="DIR", help="the image root the captions' image paths are relative to"),
    arg("--name", required=True, metavar="NAME", help="the dataset's name (coco-order, flickr30k-order...)"),
    SEED,
    arg(
        "--seeds", type=count(1000), default=1, metavar="K", help="perturb with K seeds (S, S+1...): one category each"
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
    "items",
    arg("dataset"),
    arg("--category", metavar="CAT", help="only the items of this category"),
    arg("--limit", type=AT_LEAST_ONE, metavar="N", help="only the first N items (default: every item)"),
)
def cmd_items(db: sqlite_utils.Database, args: argparse.Namespace) -> list[dict[str, Any]]:
    """List a dataset's items in import order: the store's id, the benchmark's own id (`source_id`,
    which a predictions file names items by), the category and the item kind."""
    dataset_id = store.get_dataset(db, args.dataset)["id"]
    counts = store.category_counts(db, dataset_id)
    if args.category is not None and args.category not in counts:
        raise UsageError(f"{args.dataset} has no category {args.category!r} (its categories: {', '.join(counts)})")
    listed = [
        {"id": item_id, "source_id": source_id, "category": category, "item_kind": item_kind}
        for item_id, item_kind, category, source_id in store.item_index(
            db, dataset_id, category=args.category, limit=args.limit
        )
    ]
    total = counts[args.category] if args.category is not None else sum(counts.values())
    if len(listed) < total:
        print(f"the first {len(listed)} of {total} items (--limit)", file=sys.stderr)
    return listed


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
