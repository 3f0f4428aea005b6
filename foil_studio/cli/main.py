"""Argument parsing and the entry point: every command group registered in help order, usage
lines, the command table of docs/commands.md, `main` and `run`."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any, NoReturn

import psycopg

from foil_studio.analysis.cluster import ClusterError
from foil_studio.analysis.model_spec import ModelUnavailableError
from foil_studio.annotate.task_types import TaskError
from foil_studio.cli.base import COMMANDS, GROUP_DEFAULT, GROUP_HELP, Command, UsageError
from foil_studio.cli.text import as_text, jsonable
from foil_studio.data import paths, store
from foil_studio.data.formats import BadInputError
from foil_studio.data.images import UnsafeImagePathError
from foil_studio.data.word_order import TaggerUnavailableError

# The command groups, in the order help and docs/commands.md's table list them: importing one registers its commands.
COMMAND_GROUPS = ("datasets", "runs", "people", "batches", "health", "labels", "audits", "plugins")
for _group in COMMAND_GROUPS:
    importlib.import_module(f"foil_studio.cli.{_group}")


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
    """The command table of docs/commands.md: each command's usage and its handler's first paragraph (`--help`)."""
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


EXPECTED_ERRORS = (
    UsageError,
    TaggerUnavailableError,
    BadInputError,
    UnsafeImagePathError,
    store.StoreError,
    TaskError,
    OSError,
    ModelUnavailableError,
    ClusterError,
)


def main(argv: list[str] | None = None) -> int:
    """Run one command; return the process exit code."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s", stream=sys.stderr)
    args = build_parser().parse_args(with_default_action(sys.argv[1:] if argv is None else argv))
    if args.db is None and args.opens_store:
        args.db = str(paths.cli_db_path())
        if Path(args.db) == paths.DEMO_STORE:
            print(f"using the demo store {args.db} (give --db or set $FOIL_DB for another)", file=sys.stderr)
    created = _store_files(args.db) if args.opens_store else []
    created = [file for file in created if not file.exists()]
    try:
        db = store.open_db(args.db) if args.opens_store else None
        result = args.handler(db, args)
    except EXPECTED_ERRORS as error:
        if args.debug:
            raise
        print(f"error: {error}", file=sys.stderr)
        _remove_unless_used(created)
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


def _store_files(location: str) -> list[Path]:
    """The files a SQLite store at `location` consists of (none for PostgreSQL), its files folder last."""
    if paths.is_store_url(location):
        return []
    file = Path(location)
    return [file, *(file.with_name(file.name + suffix) for suffix in ("-wal", "-shm", "-journal"))]


def _remove_unless_used(created: list[Path]) -> None:
    """A command that failed on a store it created leaves no store behind (a mistyped import left an
    empty store file, which the next command would have taken for the user's store)."""
    if not created:
        return
    try:
        db = sqlite3.connect(f"file:{created[0]}?mode=ro", uri=True)
        try:
            used = db.execute("SELECT EXISTS (SELECT 1 FROM datasets) OR EXISTS (SELECT 1 FROM runs)").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:
        used = False
    if not used:
        for file in created:
            file.unlink(missing_ok=True)


def run() -> None:
    """The `foil` console script."""
    try:
        sys.exit(main())
    except BrokenPipeError:  # `foil ... | head` closed the pipe: the rest is not wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)


if __name__ == "__main__":
    run()
