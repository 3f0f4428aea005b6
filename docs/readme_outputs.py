"""README's example outputs, generated from the code (never pasted): `make docs` writes them,
`python docs/readme_outputs.py --check` (and a test) fails when README differs from what the
commands print now.

A block in README.md is

    <!-- output: ./foil metrics demo-sugarcrepe --run demo-clip -->
    ```text
    ...what the command prints...
    ```
    <!-- end output -->

and `| PREFIX` after the command keeps only the table's header and the rows starting with PREFIX;
`A && B` runs A first and shows what B prints; `python docs/SCRIPT.py` runs that script with
`$FOIL_DB` naming the store.
The commands run on a demo store built afresh (the one `make run` builds), or on `--db`.
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
            raise ValueError(f"README output block runs {argv[0]!r}; expected ./foil or python")
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


def regenerate(readme: str, db: Path) -> str:
    """README with every output block replaced by what its command prints now."""
    return BLOCK.sub(lambda m: m.group(1) + command_output(m.group("command"), db) + m.group(4), readme)


def demo_store(folder: Path) -> Path:
    """A demo store as `make run` builds it."""
    db = folder / "foil.db"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        if cli.main(["demo", "--db", str(db)]) != 0:
            raise RuntimeError("./foil demo failed")
    return db


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1, naming the blocks, when README differs")
    parser.add_argument("--db", help="a demo store to run the commands on (default: build one)")
    args = parser.parse_args(argv)
    readme_path = REPO / "README.md"
    readme = readme_path.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as folder:
        db = Path(args.db) if args.db else demo_store(Path(folder))
        fresh = regenerate(readme, db)
    if not args.check:
        readme_path.write_text(fresh, encoding="utf-8")
        return 0
    stale = [
        m.group("command")
        for m, n in zip(BLOCK.finditer(readme), BLOCK.finditer(fresh))
        if m.group("body") != n.group("body")
    ]
    for command in stale:
        print(f"README.md: the output of `{command}` is stale; run `make docs`", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
