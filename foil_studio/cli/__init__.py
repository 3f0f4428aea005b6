"""Foil Studio from a terminal: the app's operations for scripts, CI and people (see README).

Every command takes ``--db FILE`` or ``--db postgresql://...`` (default ``$FOIL_DB``, else
``foil.db``), prints text by
default and exactly one JSON document with ``--json``, reports progress on stderr and exits
non-zero with a one-line reason on stderr when it fails.
"""

from foil_studio.cli.base import COMMANDS, TerminalProgress, whole_number
from foil_studio.cli.main import build_parser, command_table, main, run
from foil_studio.cli.text import metrics_text

__all__ = [
    "COMMANDS",
    "TerminalProgress",
    "build_parser",
    "command_table",
    "main",
    "metrics_text",
    "run",
    "whole_number",
]
