"""`kind` means the item kind (pair, triple, group...) and nothing else, in the code, the benches
and the docs' scripts: a dataset's import format is its `source_format`, a run's type its
`run_type`, a role's name `Role.role_name`, a notice's `level`.

Every line of foil_studio/**/*.py, bench/*.py and docs/*.py with the word `kind` must say it in
one of the item-kind forms `ITEM_KIND_FORMS` lists; the old names of the other meanings
(`FORBIDDEN`) may not come back at all. A failure names the file and line.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from foil_studio.annotate.task_types.base import TaskType
from foil_studio.data.item_kinds import REGISTRY as ITEM_KINDS
from foil_studio.data.item_kinds.base import ItemKind

REPO = Path(__file__).resolve().parent.parent
SCANNED = ("foil_studio/**/*.py", "bench/*.py", "docs/*.py")
# The item model and the item kinds' records: every `kind` there is the item's (`Item.kind`,
# `check_shape(kind, ...)`, `ItemKind`).
ITEM_MODEL = ("foil_studio/data/items.py", "foil_studio/data/item_kinds/")
# Migrations are history: the columns' old names stay in the migrations that made and renamed them.
HISTORY = {
    "foil_studio/data/store/schema.py": ("_m0001_initial", "_m0002_imports_log", "_m0016_source_format_and_run_type")
}

FORBIDDEN = {
    r"\bsource_kind\b": "a dataset's or an import's format is `source_format`",
    r"\brun_kinds?\b": "a run's type is `run_type`",
    r"\bIMPORT_KINDS\b": "the import formats are `formats.IMPORT_FORMATS`",
    r"\bruns\.kind\b": "the runs' column is `run_type`",
    r"\bimports\.kind\b": "the imports' column is `source_format`",
    r"\b[Rr]ole\.kind\b|resolve_role\([^)]*\)\.kind\b": "a role's name is `Role.role_name`",
    r"\bcheck_name\(\s*kind\b": "`check_name(what, name)` names the thing named",
    r"\bdef tell\(\s*kind\b": "a notice's `level`",
    r"\bimport kinds?\b|\bKIND\b": "an import format (`FORMAT` on the command line)",
    r"\brun(?:'s)? kinds?\b": "a run's type",
}

_KINDS = "|".join(ITEM_KINDS)
_TASK_TYPE_ATTRIBUTES = {f.name for f in dataclasses.fields(TaskType)} | set(dir(TaskType))
_ITEM_KIND_ATTRIBUTES = "|".join(
    sorted(({f.name for f in dataclasses.fields(ItemKind)} | set(dir(ItemKind))) - _TASK_TYPE_ATTRIBUTES - {"__doc__"})
)
_ITEMS = r"(?:item|items|i|record|row|r|first|every\[i\])"
# The forms `kind` may take, all of them the item kind; each match is cut out of the line before
# the word is looked for again.
ITEM_KIND_FORMS = [
    rf"\bkind=(?:\"(?:{_KINDS})\"|{_ITEMS}\[\"kind\"\])",  # an item built: Item(kind="pair"), make_item(kind=...)
    rf"\"kind\": (?:\"(?:{_KINDS})\"|\[?{_ITEMS}\[\"kind\"\])",  # an item's record (JSONL, doctests)
    rf"\b{_ITEMS}\[[\"']kind[\"']\]",  # a stored item row's key
    r"\b(?:item|self|plan|card)\.kind\b",  # Item, ItemPlan, ItemCard
    rf"\bkind\.(?:{_ITEM_KIND_ATTRIBUTES})\b",  # an ItemKind record's attribute
    r"\bkind = item_kind\(",  # an ItemKind record
    r"\bfor name, kind in ITEM_KINDS\b",
    r"\bitems\.kind\b|\bkind IN \(|\b(?:GROUP|ORDER) BY kind\b|\bSELECT kind, COUNT\(\*\) FROM items\b",  # SQL on items
    r"\bSELECT kind, SUM\(n\) FROM item_counts\b|\bAND kind = \? AND category\b",  # items' counts, the frame
    r"\bkind TEXT NOT NULL, category TEXT\b",  # the columns of items and of item_counts
    r"\bkind[`\"]*, [`\"]*category\b",  # the item's columns in order: id, kind, category...
    r"\| kind \| images \|",  # the item-kind table's header
    rf"``kind`` \((?:{_KINDS})",  # the JSONL format's key, with its values
    r"\bitem kinds?(?:'s)?\b|\bItem kinds\b|\bitems of kind\b|\bitem's kind\b",  # prose
    r"\bkind=\"stable\"",  # numpy's and pandas' sort algorithm (their keyword, not ours)
]
# `kind: str` as a field of these classes is the item's kind.
ITEM_CLASSES = re.compile(r"Item\w*")
WORD = re.compile(r"\bkind\b")


def _files() -> list[Path]:
    return sorted({path for pattern in SCANNED for path in REPO.glob(pattern)})


def _history_lines(path: str, source: str) -> set[int]:
    names = HISTORY.get(path, ())
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name in names:
            lines |= set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def line_problem(line: str, previous: str = "", in_class: str | None = None, item_model: bool = False) -> str | None:
    """Why `line` uses `kind` for something other than the item kind (None: it does not). `previous`
    is the line before (prose wraps: "each item" / "kind ..."), `in_class` the class it is in."""
    for pattern, meaning in FORBIDDEN.items():
        if re.search(pattern, line):
            return f"an old name ({pattern}): {meaning}"
    if item_model or not WORD.search(line):
        return None
    if in_class and ITEM_CLASSES.fullmatch(in_class) and re.fullmatch(r"\s*kind: str\b.*", line):
        return None
    words = previous.split()
    text = f"{words[-1] if words else ''} {line}"
    for form in ITEM_KIND_FORMS:
        text = re.sub(form, " ", text)
    if WORD.search(text):
        return (
            "`kind` here is not the item kind (or not in a form ITEM_KIND_FORMS knows): give the meaning its own word"
        )
    return None


def problems(path: Path) -> list[str]:
    """Each line of `path` that breaks the rule, as `file:line: text (why)`."""
    name = path.relative_to(REPO).as_posix()
    source = path.read_text(encoding="utf-8")
    history = _history_lines(name, source)
    found = []
    in_class = None
    previous = ""
    for number, line in enumerate(source.splitlines(), start=1):
        opened = re.match(r"class (\w+)", line)
        if opened:
            in_class = opened.group(1)
        elif line and not line[0].isspace():
            in_class = None
        why = None if number in history else line_problem(line, previous, in_class, name.startswith(ITEM_MODEL))
        if why:
            found.append(f"{name}:{number}: {line.strip()}  ({why})")
        previous = line
    return found


def test_kind_means_the_item_kind_only():
    found = [problem for path in _files() for problem in problems(path)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "line",
    [
        "    kind = task_type(name)",
        '    sql = "SELECT runs.kind FROM runs"',
        '    run_id = store.ensure_run(db, dataset_id, name, kind="scores")',
        "    store_parsed(db, parsed, kind=DEMO_SOURCE, path=path)",
        '    "SELECT kind, path FROM imports"',
        "def check_name(kind: str, name: Any) -> str:",
        "def tell(kind: str, message: str) -> None:",
        "    pages_for(role.kind)",
        '    return row["source_kind"]',
        "    if run.run_kind == 'choices':",
        "    formats.IMPORT_KINDS",
        '    {"name": d["name"], "kind": d["kind"]}',
        "    (a CSV of every import kind)",
        "    for kind, column in sets.items():",
        '    return f"data:image/{kind};base64,"',
    ],
)
def test_the_rule_catches_the_other_meanings(line):
    assert line_problem(line) is not None


@pytest.mark.parametrize(
    "line",
    [
        '    kind = item_kind(item["kind"])',
        "    captions = list(zip(kind.caption_roles(len(item['captions'])), item['captions']))",
        '        kind="retrieval",',
        '    require_keys(record, ("kind", "category"), file, number)',
        '    sql = "SELECT kind, COUNT(*) FROM items WHERE dataset_id = ? GROUP BY kind ORDER BY kind"',
        '    order = np.argsort(lengths, kind="stable")',
        '    """Items per item kind (pair, triple, group...) of one dataset."""',
        '    >>> chosen_caption({"kind": "pair", "captions": ["a", "b"]}, "1")',
    ],
)
def test_the_rule_lets_the_item_kind_be(line):
    assert line_problem(line) is None


def test_an_item_class_field_is_the_item_kind_and_another_class_field_is_not():
    assert line_problem("    kind: str", in_class="ItemCard") is None
    assert line_problem("    kind: str", in_class="RunSpec") is not None


# ARCHITECTURE.md's glossary: every core word of the domain, each defined once.
GLOSSARY_WORDS = ("item", "kind", "part", "negative", "verdict", "outcome", "run", "batch", "task type", "task")
GLOSSARY_WORDS += ("sample", "prediction")
# Second meanings renamed away, which may not come back: pattern -> the word to use.
SECOND_MEANINGS = {
    r"\bverdict\s*=\s*is_correct\(": "whether one answer is right is `right`; a verdict is a negative's validity",
    r"\b(?:sample|view|read_sample\([^)]*\))\.outcomes\b|\bhealth\.item_outcomes\b"
    r"|\bm\[\"outcomes\"\]|\{\"outcomes\": |\boutcomes=view\b": (
        "an item's decided valid / invalid / ambiguous is its verdict (`HealthSample.verdicts`); an outcome is a credit"
    ),
    r"\[[\"']task[\"']\]|\b(?:spec|label|args)\.task\b|\bb\.task\b|--task\b(?!-)|\btask: TaskType\b"
    r"|\btask = (?:task_type\(|REGISTRY\[)|\bfor name, task in REGISTRY\b": (
        "a task type's name is `task_type` (a batch's, a label's, `--task-type`); a task is one laid-out question"
    ),
    r"\bsample_fixture\b|\bsample=|\]\.sample\(|\bfmt\.sample\b|\bsample_items\b": (
        "a format's round-trip source is `Format.write_source` / `source_fixture`; a sample is Benchmark health's"
    ),
}


def test_the_glossary_defines_each_core_word_once():
    text = (REPO / "ARCHITECTURE.md").read_text()
    section = text.split("## Glossary: one word, one meaning", 1)[1].split("\n## ", 1)[0]
    defined = re.findall(r"\*\*([a-z ]+)\*\*", section)
    assert sorted(defined) == sorted(GLOSSARY_WORDS), defined


@pytest.mark.parametrize("pattern", sorted(SECOND_MEANINGS))
def test_a_renamed_second_meaning_does_not_come_back(pattern):
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in _files()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(pattern, line)
    ]
    assert not found, f"{SECOND_MEANINGS[pattern]}:\n" + "\n".join(found)
