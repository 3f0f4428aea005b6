"""Print pip's configured package sources as uv's options, one per line (for the Makefile and the
packaging test): uv installs what pip would, from where pip would, without reading pip's files.

    .venv/bin/python tools/pip_sources.py      # --constraint FILE --extra-index-url URL ...

`pip config list` shows pip's configuration files and PIP_* variables; their index-url,
extra-index-url, find-links and constraint become uv's options of the same names (a name set in
several places: the last one listed, as pip applies them), with pip's rule of taking the best match
over every index (`--index-strategy unsafe-best-match`).
"""

from __future__ import annotations

import subprocess
import sys

OPTIONS = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
}


def uv_options(python: str = sys.executable) -> list[str]:
    """uv's options for the sources `python -m pip` is configured with."""
    listed = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True)
    found: dict[str, list[str]] = {}
    for line in listed.stdout.splitlines():
        key, _, value = line.partition("=")
        name = key.rpartition(".")[2]
        if name in OPTIONS:
            found[name] = value.strip().strip("'\"").split()
    options = [part for name, values in found.items() for value in values for part in (OPTIONS[name], value)]
    return [*options, "--index-strategy", "unsafe-best-match"]


if __name__ == "__main__":
    print("\n".join(uv_options()))
