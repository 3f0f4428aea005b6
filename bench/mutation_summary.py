"""Mutation score per module from `mutmut results --all true` (run by `make mutation`).

Reads the results on stdin (or a file given as the only argument) and prints, per module,
the mutants killed, survived and not reached by the selected tests, and the score
killed / (killed + survived + not reached).
"""

from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

LINE = re.compile(r"^\s*(?P<module>[\w.]+?)\.x_?(?P<function>\w+?)__mutmut_\d+: (?P<status>.+?)\s*$")
GROUPS = {
    "killed": "killed",
    "survived": "survived",
    "no tests": "not reached",
    "timeout": "killed",
    "suspicious": "survived",
}


def summarize(lines: list[str]) -> dict[str, Counter]:
    """Module -> counts of killed, survived and not reached mutants."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for line in lines:
        match = LINE.match(line)
        if match and match["status"] in GROUPS:
            counts[match["module"]][GROUPS[match["status"]]] += 1
    return counts


def main() -> None:
    text = Path(sys.argv[1]).read_text() if len(sys.argv) > 1 else sys.stdin.read()
    print(f"{'module':<24} {'killed':>7} {'survived':>9} {'not reached':>12} {'score':>7}")
    for module, counts in sorted(summarize(text.splitlines()).items()):
        total = sum(counts.values())
        print(
            f"{module:<24} {counts['killed']:>7} {counts['survived']:>9} {counts['not reached']:>12} "
            f"{100 * counts['killed'] / total:>6.1f}%"
        )


if __name__ == "__main__":
    main()
