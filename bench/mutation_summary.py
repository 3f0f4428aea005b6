"""Mutation score per module from `mutmut results --all true` (run by `make mutation`).

Reads the results on stdin (or a file given as the first argument) and prints, per module,
the mutants killed, survived and not reached by the selected tests, and the score
killed / (killed + survived + not reached); a package of several mutated modules
(`data/item_kinds/`) also gets a line of its own. `--functions MODULE NAME...` adds the
figures of those functions of MODULE together (the read functions of `data.store.annotation`).
"""

from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

LINE = re.compile(r"^\s*(?P<module>[\w.]+?)\.x_?(?P<function>\w+?)__mutmut_\d+: (?P<status>.+?)\s*$")
PACKAGES = ("data.item_kinds",)  # mutated as a whole package: one line for all its modules
GROUPS = {
    "killed": "killed",
    "survived": "survived",
    "no tests": "not reached",
    "timeout": "killed",
    "suspicious": "survived",
}


def summarize(lines: list[str], functions: tuple[str, set[str]] | None = None) -> dict[str, Counter]:
    """Module (and package) -> counts of killed, survived and not reached mutants; with
    `functions` (module, names), one more row for those functions of that module."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for line in lines:
        match = LINE.match(line)
        if match and match["status"] in GROUPS:
            module, group = match["module"], GROUPS[match["status"]]
            counts[module][group] += 1
            for package in PACKAGES:
                if module == package or module.startswith(package + "."):
                    counts[f"{package} (package)"][group] += 1
            if functions and module == functions[0] and match["function"] in functions[1]:
                counts[f"{module} (read functions)"][group] += 1
    return counts


def main() -> None:
    args = sys.argv[1:]
    functions = None
    if "--functions" in args:
        at = args.index("--functions")
        functions = (args[at + 1], set(args[at + 2 :]))
        args = args[:at]
    text = Path(args[0]).read_text() if args else sys.stdin.read()
    print(f"{'module':<44} {'killed':>7} {'survived':>9} {'not reached':>12} {'score':>7}")
    for module, counts in sorted(summarize(text.splitlines(), functions).items()):
        total = sum(counts.values())
        print(
            f"{module:<44} {counts['killed']:>7} {counts['survived']:>9} {counts['not reached']:>12} "
            f"{100 * counts['killed'] / total:>6.1f}%"
        )


if __name__ == "__main__":
    main()
