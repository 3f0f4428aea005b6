"""The command registry: each handler declares its arguments beside it (`command`), the shared
arguments, the number types and the terminal's progress bar."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlite_utils

from foil_studio.analysis.results import BOOTSTRAP
from foil_studio.annotate.task_types import REGISTRY as TASK_REGISTRY
from foil_studio.data import formats
from foil_studio.data.reading import whole_number_problem
from foil_studio.data.subsets import SUBSETS

# The layouts construction batches write: the dataset's own where it has one, else the task's.
CLEAN_FORMATS = sorted(
    {t.clean_format for t in TASK_REGISTRY.values() if t.clean_format}
    | {f for f, fmt in formats.REGISTRY.items() if fmt.writes}
)


log = logging.getLogger("foil")


Handler = Callable[[sqlite_utils.Database, argparse.Namespace], Any]


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
    """One argument of a command, as `argparse.add_argument` takes it; a whole number's range
    (`WholeNumber`) is added to its help, so `--help` states the bound its refusal names.

    >>> arg("--n", type=count(50), help="items")[1]["help"]
    'items (a whole number from 1 to 50)'
    """
    parse = options.get("type")
    if isinstance(parse, WholeNumber) and parse.most is not None:
        said = f"a whole number {parse.span}"
        options = {**options, "help": f"{options['help']} ({said})" if options.get("help") else said}
    return flags, options


@dataclass(frozen=True)
class WholeNumber:
    """An argument type: a whole number from `at_least` to `most`, refused by the rule the readers
    apply to every whole number in a file (`reading.whole_number_problem`). Every count argument has
    a `most` (`tests/test_cli.py` walks them): a count past what any store holds or any machine
    computes (`--bootstrap 1000000000`) is refused in one line, not a memory error."""

    at_least: int = 0
    most: int | None = None

    def __call__(self, text: str) -> int:
        try:
            value: Any = int(text)
        except ValueError:
            value = text
        problem = whole_number_problem(value, self.at_least, None if self.most is None else self.most + 1)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return int(value)

    @property
    def span(self) -> str:
        """The range in words, as the refusal says it.

        >>> count(100_000).span, whole_number(0).span
        ('from 1 to 100000', '0 or more')
        """
        return f"{self.at_least} or more" if self.most is None else f"from {self.at_least} to {self.most}"


def whole_number(at_least: int = 0, below: int | None = None) -> WholeNumber:
    """An argument type: a whole number from `at_least` (below `below`)."""
    return WholeNumber(at_least, None if below is None else below - 1)


def count(most: int, at_least: int = 1) -> WholeNumber:
    """An argument type for a count: a whole number from `at_least` (1) to `most`."""
    return WholeNumber(at_least, most)


# The bounds of the counts the commands take: each far past any real use, each short of a memory error.
MOST_ITEMS = 10_000_000  # items to draw, sample, score or read: ten times the largest benchmark
MOST_PEOPLE = 10_000  # annotators per item, in a batch or at once in a crowd study
MOST_RESAMPLES = 100_000  # bootstrap resamples: a hundred times the default
MOST_IN_A_BATCH = 8192  # images or captions encoded at once
MOST_SEED = 2**32 - 1  # what numpy's and scikit-learn's generators take

AT_LEAST_ONE = count(MOST_ITEMS)  # a count of items (or of anything the store holds rows of)
PEOPLE = count(MOST_PEOPLE)


# Options several commands share, declared once.
SEED = arg(
    "--seed",
    type=whole_number(0, below=MOST_SEED + 1),
    default=0,
    metavar="S",
    help="random seed: the same seed gives the same result",
)


SUBSET = arg(
    "--subset",
    choices=["all", *SUBSETS],
    default="all",
    help="only the items of a subset the source defines (VALSE: valid)",
)


BOOTSTRAP_RESAMPLES = arg(
    "--bootstrap",
    type=count(MOST_RESAMPLES),
    default=BOOTSTRAP,
    metavar="N",
    help="resamples for the 95%% intervals (the app uses the same)",
)


CHECKPOINT = arg("--checkpoint", metavar="FILE", help="local weights file")


BATCH_SIZE = arg(
    "--batch-size", type=count(MOST_IN_A_BATCH), default=64, metavar="N", help="images or captions encoded at once"
)


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


# Bad input, absent names, unreadable files and unavailable weights end in one line on stderr,
# not a traceback (--debug shows it).
class UsageError(Exception):
    """Arguments that parse but do not go together; said in one line, like argparse's own."""
