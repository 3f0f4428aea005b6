"""Mutation score per module from `mutmut results --all true` (run by `make mutation`).

Reads the results on stdin (or a file given as the first argument) and prints, per module,
the mutants killed, survived, not reached by the selected tests and timed out, and the score
killed / (killed + survived + not reached + timed out): a timeout is not counted as killed (a
mutant that hangs may as well be a slow machine); mutants a run has not checked (yet) are counted
apart and left out of the score. A package of several mutated modules
(`foil_studio/data/item_kinds/`, `annotate/task_types/`, `annotate/health/`) also gets a line of its own.
`--functions MODULE NAME...` adds the figures of those functions of MODULE together (the read
functions of `foil_studio.data.store.annotation`). `--sql-case` also counts the survivors whose
only change is the letter case of SQL text (`SELECT` -> `select`): SQL keywords and unquoted
names are case-insensitive, so these are equivalent mutants (not when an alias changes case: SQLite
names the column as the alias is written); they are printed apart and a second
score leaves them out. It reads the mutated sources under `mutants/`.
"""

from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict
from functools import cache
from pathlib import Path

LINE = re.compile(r"^\s*(?P<module>[\w.]+?)\.(?P<mutant>x_?(?P<function>\w+?)__mutmut_\d+): (?P<status>.+?)\s*$")
# mutated as a whole package: one line for all its modules
PACKAGES = ("foil_studio.data.item_kinds", "foil_studio.annotate.task_types", "foil_studio.annotate.health")
GROUPS = {
    "killed": "killed",
    "survived": "survived",
    "no tests": "not reached",
    "timeout": "timeout",
    "suspicious": "survived",
    "not checked": "not run",
}


# SQL as this code writes it: upper-case keywords, or a table-qualified column (`b.assigned_at`)
SQL = re.compile(
    r"\b(SELECT|INSERT|UPDATE|DELETE|FROM|WHERE|JOIN|ORDER BY|GROUP BY|VALUES|ON CONFLICT|COALESCE|MAX|COUNT|"
    r"LIMIT|AS|SET|AND|NULL)\b|\"[a-z_]+\.[a-z_]+"
)
MUTANTS = Path(__file__).resolve().parents[1] / "mutants"


@cache
def _functions_of(module: str) -> dict[str, list[str]]:
    """Each function (and mutant) of a mutated module's source: name -> its lines after the `def`."""
    found: dict[str, list[str]] = {}
    name = None
    source = MUTANTS / Path(*module.split("."))
    source = source / "__init__.py" if source.is_dir() else source.with_suffix(".py")
    for line in source.read_text().splitlines():
        header = re.match(r"^\s*(?:async )?def (\S+?)\(", line)
        if header:
            name = header[1]
            found[name] = []
        elif line[:1].strip() and not line.startswith((")", "]", "}")):
            name = None  # a module-level statement ends the function (mutmut's trampolines follow it)
        elif name is not None:
            found[name].append(line)
    return found


def only_sql_case(module: str, mutant: str) -> bool:
    """True when a mutant differs from its original only by the letter case of SQL text."""
    functions = _functions_of(module)
    original = functions.get(re.sub(r"__mutmut_\d+$", "__mutmut_orig", mutant))
    changed = functions.get(mutant)
    if original is None or changed is None or len(original) != len(changed):
        return False
    pairs = [(a, b) for a, b in zip(original, changed) if a != b]
    return bool(pairs) and all(a.lower() == b.lower() and SQL.search(a) and not _renames_alias(a, b) for a, b in pairs)


def _renames_alias(original: str, mutated: str) -> bool:
    """An alias written in capitals (`AS DATASET`) is a new column name on SQLite: not equivalent."""
    return re.findall(r"\b(?i:as) (\w+)", original) != re.findall(r"\b(?i:as) (\w+)", mutated)


def summarize(
    lines: list[str], functions: tuple[str, set[str]] | None = None, sql_case: bool = False
) -> dict[str, Counter]:
    """Module (and package) -> counts of killed, survived and not reached mutants; with
    `functions` (module, names), one more row for those functions of that module; with
    `sql_case`, survivors that only change the case of SQL text also counted as `sql case`."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for line in lines:
        match = LINE.match(line)
        if match and match["status"] in GROUPS:
            module, group = match["module"], GROUPS[match["status"]]
            rows = [module, *(f"{p} (package)" for p in PACKAGES if module == p or module.startswith(p + "."))]
            if functions and module == functions[0] and match["function"] in functions[1]:
                rows.append(f"{module} (read functions)")
            equivalent = sql_case and group == "survived" and only_sql_case(module, match["mutant"])
            for row in rows:
                counts[row][group] += 1
                counts[row]["sql case"] += equivalent
    return counts


def main() -> None:
    args = sys.argv[1:]
    sql_case = "--sql-case" in args
    args = [a for a in args if a != "--sql-case"]
    functions = None
    if "--functions" in args:
        at = args.index("--functions")
        functions = (args[at + 1], set(args[at + 2 :]))
        args = args[:at]
    text = Path(args[0]).read_text() if args else sys.stdin.read()
    header = (
        f"{'module':<52} {'killed':>7} {'survived':>9} {'not reached':>12} {'timeout':>8} {'score':>7} {'not run':>8}"
    )
    print(header + (f" {'sql case':>9} {'score without':>14}" if sql_case else ""))
    for module, counts in sorted(summarize(text.splitlines(), functions, sql_case).items()):
        scored = counts["killed"] + counts["survived"] + counts["not reached"] + counts["timeout"]
        line = (
            f"{module:<52} {counts['killed']:>7} {counts['survived']:>9} {counts['not reached']:>12} "
            f"{counts['timeout']:>8} {_percent(counts['killed'], scored)} {counts['not run']:>8}"
        )
        if sql_case:
            line += f" {counts['sql case']:>9} {_percent(counts['killed'], scored - counts['sql case']):>14}"
        print(line)


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:>6.1f}%" if whole else f"{'-':>7}"


if __name__ == "__main__":
    main()
