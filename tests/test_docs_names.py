"""Every dotted name the docs and the package's docstrings put in backticks names something that
exists: `annotate.browse.datasets_holding`, `foil_studio.data.hub.cache_only`, `store.transaction`.

A name counts when it starts with one of the package's top-level modules (`foil_studio.api`,
`foil_studio.data`...; an entry-point group such as `foil_studio.formats` is not a module), one of
its subpackages (`data.`, `analysis.`, `annotate.`, `views.`, `cli.`) or `store.` (callers' name
for `foil_studio.data.store`, ARCHITECTURE.md's rule). It resolves as a module, then attribute by
attribute; a page module (`views/<page>.py` in the page registry, and `app.py`) runs Streamlit
when imported, so its names are read off its source instead. Left out: file names
(`results.json`, `store/schema.py`) and placeholders (`store.<function>`,
`data.formats.<benchmark>`). A call (`views.session.session_db()`) or an index
(`data.demo.DEMO_DATASETS["pair"]`) is checked up to its dotted name.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from functools import cache
from pathlib import Path

from foil_studio.views.registry import PAGES
from tests.conftest import REPO
from tests.test_docs_links import outside_code

PACKAGE = REPO / "foil_studio"
DOCS = sorted(
    [REPO / name for name in ("README.md", "ARCHITECTURE.md", "TESTING.md", "BENCHMARKS.md", "CHANGELOG.md")]
    + list((REPO / "docs").glob("*.md"))
)
SUBPACKAGES = ("data", "analysis", "annotate", "views", "cli")
ALIASES = {"store": "foil_studio.data.store"}
CODE_SPAN = re.compile(r"(`+)([^`\n]+?)\1")
# The package's own top-level modules and subpackages: `foil_studio.api` goes into the package, an
# entry-point group such as `foil_studio.formats` (a name plugins register under) does not.
TOP_LEVEL = sorted(
    path.stem
    for path in PACKAGE.iterdir()
    if (path.suffix == ".py" and not path.stem.startswith("__")) or (path / "__init__.py").exists()
)
DOTTED = re.compile(
    rf"^(?:foil_studio\.(?:{'|'.join(TOP_LEVEL)})\b|{'|'.join(SUBPACKAGES + tuple(ALIASES))})(?:\.[A-Za-z_]\w*)*"
)
FILE_NAME = re.compile(r"\.(?:py|json|jsonl|md|csv|txt|db|yaml|yml|toml|zip|parquet|png|jpe?g|html|log)$")
# Streamlit scripts: importing one runs the page.
SCRIPTS = {f"foil_studio.{page.path.removesuffix('.py').replace('/', '.')}" for page in PAGES} | {"foil_studio.app"}


def dotted_names(text: str) -> list[str]:
    """The dotted names into the package that a text's code spans hold, as written (a call or an
    index cut off, file names and placeholders left out)."""
    names = []
    for _, span in CODE_SPAN.findall(text):
        span = span.strip()
        match = DOTTED.match(span)
        if not match or "." not in match.group(0) or FILE_NAME.search(span):
            continue
        rest = span[match.end() :]
        if rest.startswith((".<", "<", "/")):  # a placeholder or a path
            continue
        names.append(match.group(0))
    return names


def docstrings(path: Path) -> list[str]:
    """The docstrings of a module, its classes and its functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return [text for node in ast.walk(tree) if isinstance(node, nodes) and (text := ast.get_docstring(node))]


def mentions() -> list[tuple[str, str]]:
    """(where, name) for every backticked dotted name of the docs and the package's docstrings."""
    found = []
    for page in DOCS:
        if page.exists():
            text = "\n".join(outside_code(page.read_text(encoding="utf-8")))
            found += [(str(page.relative_to(REPO)), name) for name in dotted_names(text)]
    for module in sorted(PACKAGE.rglob("*.py")):
        for text in docstrings(module):
            found += [(str(module.relative_to(REPO)), name) for name in dotted_names(text)]
    return sorted(set(found))


def _longest_module(parts: list[str]) -> int:
    """How many of `parts` name a module, walking down from the package: only packages are
    imported on the way (finding a module inside one imports it), never a page."""
    depth = 1
    while depth < len(parts):
        spec = importlib.util.find_spec(".".join(parts[:depth]))
        if spec is None or spec.submodule_search_locations is None:
            break
        if importlib.util.find_spec(".".join(parts[: depth + 1])) is None:
            break
        depth += 1
    return depth


def _script_names(module: str) -> dict[str, ast.AST]:
    """A page's top-level names (functions, classes, assignments, imports), read off its source."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    names: dict[str, ast.AST] = {}
    for node in ast.parse(Path(spec.origin).read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update((t.id, node) for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(((alias.asname or alias.name).split(".")[0], node) for alias in node.names)
    return names


@cache
def unresolved(name: str) -> str | None:
    """Why `name` does not resolve (None when it does): the longest module it starts with, then
    each attribute in turn."""
    head, _, tail = name.partition(".")
    full = f"{ALIASES[head]}.{tail}" if head in ALIASES else name if head == "foil_studio" else f"foil_studio.{name}"
    parts = full.split(".")
    cut = _longest_module(parts)
    module = ".".join(parts[:cut])
    attributes = parts[cut:]
    if not attributes:
        return None
    if module in SCRIPTS:
        if attributes[0] not in _script_names(module):
            return f"page {module} defines no {attributes[0]!r}"
        return None  # deeper attributes of a page's names are not read off its source
    found: object = importlib.import_module(module)
    for depth, attribute in enumerate(attributes):
        if not hasattr(found, attribute):
            owner = ".".join([module, *attributes[:depth]])
            return f"{owner} has no {attribute!r}"
        found = getattr(found, attribute)
    return None


def test_dotted_names_are_found_and_filtered():
    """The extraction itself: what counts as a dotted name and what is left out."""
    text = (
        "`annotate.browse.datasets_holding`, ``foil_studio.data.hub.cache_only``, `views.session.session_db()`,"
        ' `data.demo.DEMO_DATASETS["pair"]`, `store.transaction`, `store.<function>`, `data.formats.<benchmark>`,'
        " `results.json`, `data/store/schema.py`, `foil_studio/data/`, `scoring.score_dataset`, `database.name`,"
        " group `foil_studio.formats`, `foil_studio.api.open_store(location)`, `data`, `foil_studio`"
    )
    assert dotted_names(text) == [
        "annotate.browse.datasets_holding",
        "foil_studio.data.hub.cache_only",
        "views.session.session_db",
        "data.demo.DEMO_DATASETS",
        "store.transaction",
        "foil_studio.api.open_store",
    ]


def test_names_resolve_as_modules_then_attributes():
    assert unresolved("annotate.browse.datasets_holding") is None
    assert unresolved("foil_studio.data.store.schema.MIGRATIONS") is None
    assert unresolved("store.transaction") is None
    assert unresolved("data.store.annotation") == "foil_studio.data.store has no 'annotation'"
    assert unresolved("annotate.browse.no_such_function") == "foil_studio.annotate.browse has no 'no_such_function'"
    page = next(iter(sorted(SCRIPTS - {"foil_studio.app"})))
    assert unresolved(f"{page.removeprefix('foil_studio.')}.no_such_name") is not None


def test_every_backticked_dotted_name_in_the_docs_and_docstrings_resolves():
    named = mentions()
    assert len(named) > 40, "the scan found too few names to be reading the docs"
    broken = [f"{where}: `{name}` ({why})" for where, name in named if (why := unresolved(name))]
    assert not broken, "names that no longer exist (rename them to what is there now):\n" + "\n".join(broken)


def test_architecture_names_the_longest_page_truly():
    """ARCHITECTURE.md says which page is the longest (and why): it must be, by lines."""
    architecture = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    named = re.search(r"The longest page is\s+`views/(\w+\.py)`", architecture)
    assert named, "ARCHITECTURE.md no longer says which page is the longest"
    lines = {
        Path(page.path).name: len((PACKAGE / page.path).read_text(encoding="utf-8").splitlines()) for page in PAGES
    }
    assert max(lines, key=lambda name: lines[name]) == named.group(1), lines
