"""Mutation score per module from `mutmut results --all true` (run by `make mutation`).

Reads the results on stdin (or a file given as the first argument) and prints, per module,
the mutants killed, survived and not reached by the selected tests, and the score
killed / (killed + survived + not reached); mutants a run has not checked (yet) are counted
apart and left out of the score. A package of several mutated modules
(`foil_studio/data/item_kinds/`, `annotate/task_types/`) also gets a line of its own.
`--functions MODULE NAME...` adds the figures of those functions of MODULE together (the read
functions of `foil_studio.data.store.annotation`).
"""

from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

LINE = re.compile(r"^\s*(?P<module>[\w.]+?)\.x_?(?P<function>\w+?)__mutmut_\d+: (?P<status>.+?)\s*$")
# mutated as a whole package: one line for all its modules
PACKAGES = ("foil_studio.data.item_kinds", "foil_studio.annotate.task_types")
GROUPS = {
    "killed": "killed",
    "survived": "survived",
    "no tests": "not reached",
    "timeout": "killed",
    "suspicious": "survived",
    "not checked": "not run",
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
    print(f"{'module':<52} {'killed':>7} {'survived':>9} {'not reached':>12} {'score':>7} {'not run':>8}")
    for module, counts in sorted(summarize(text.splitlines(), functions).items()):
        scored = counts["killed"] + counts["survived"] + counts["not reached"]
        score = f"{100 * counts['killed'] / scored:>6.1f}%" if scored else f"{'-':>7}"
        print(
            f"{module:<52} {counts['killed']:>7} {counts['survived']:>9} {counts['not reached']:>12} "
            f"{score} {counts['not run']:>8}"
        )


if __name__ == "__main__":
    main()
