"""The example outputs of README.md and docs/*.md, generated from the code (never pasted): `make docs`
writes them, `python docs/readme_outputs.py --check` (`make docs CHECK=1`, and a test) fails
naming each file and block that differs from what the commands print now.

A block is

    <!-- output: ./foil metrics demo-sugarcrepe --run demo-clip -->
    ```text
    ...what the command prints...
    ```
    <!-- end output -->

and `| PREFIX` after the command keeps only the table's header and the rows starting with PREFIX;
`A && B` runs A first and shows what B prints; `python docs/SCRIPT.py` runs that script with
`$FOIL_DB` naming the store.
All blocks run on one demo store built afresh (the one `make run` builds), or on `--db`, file by
file in the order of `readme_tables.doc_files()`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import runpy
import shlex
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "docs"))

from readme_tables import doc_files  # noqa: E402  (docs/readme_tables.py: which files, in which order)

from foil_studio import cli  # noqa: E402  (the checkout's own CLI, wherever this is run from)

BLOCK = re.compile(r"(<!-- output: (?P<command>.+?) -->\n```text\n)(?P<body>.*?)(```\n<!-- end output -->)", re.S)


def command_output(command: str, db: Path) -> str:
    """What `./foil ...` prints on `db`, filtered by an optional `| PREFIX`; in `A && B`, the
    commands before the last run first and only the last one's output is kept."""
    *before, command = command.split(" && ")
    for setup in before:
        command_output(setup, db)
    line, _, keep = command.partition(" | ")
    argv = shlex.split(line)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        if argv[0] == "python":
            run_script(REPO / argv[1], db)
        elif argv[0] == "./foil":
            if (code := cli.main([*argv[1:], "--db", str(db)])) != 0:
                raise RuntimeError(f"{line} failed (exit {code})")
        else:
            raise ValueError(f"an output block runs {argv[0]!r}; expected ./foil or python")
    lines = printed.getvalue().splitlines()
    if keep:
        lines = [x for x in lines if x.startswith(("category", keep.strip()))]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def run_script(script: Path, db: Path) -> None:
    """Run a Python file of the checkout as `python SCRIPT` would, with `$FOIL_DB` set to `db`."""
    before = os.environ.get("FOIL_DB")
    os.environ["FOIL_DB"] = str(db)
    try:
        runpy.run_path(str(script), run_name="__main__")
    finally:
        if before is None:
            del os.environ["FOIL_DB"]
        else:
            os.environ["FOIL_DB"] = before


def regenerate(text: str, db: Path) -> str:
    """`text` with every output block replaced by what its command prints now."""
    return BLOCK.sub(lambda m: m.group(1) + command_output(m.group("command"), db) + m.group(4), text)


def demo_store(folder: Path) -> Path:
    """A demo store as `make run` builds it."""
    db = folder / "foil.db"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        if cli.main(["demo", "--db", str(db)]) != 0:
            raise RuntimeError("./foil demo failed")
    return db


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each stale file and block")
    parser.add_argument("--db", help="a demo store to run the commands on (default: build one)")
    args = parser.parse_args(argv)
    texts = {path: path.read_text(encoding="utf-8") for path in doc_files()}
    with tempfile.TemporaryDirectory() as folder:
        db = Path(args.db) if args.db else demo_store(Path(folder))
        fresh = {path: regenerate(text, db) if BLOCK.search(text) else text for path, text in texts.items()}
    stale = []
    for path, text in texts.items():
        if not args.check:
            if fresh[path] != text:
                path.write_text(fresh[path], encoding="utf-8")
            continue
        for old, new in zip(BLOCK.finditer(text), BLOCK.finditer(fresh[path])):
            if old.group("body") != new.group("body"):
                stale.append(f"{path.relative_to(REPO)}: the output of `{old.group('command')}` is stale")
    for line in stale:
        print(f"{line}; run `make docs`", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
