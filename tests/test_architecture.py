"""The shape of the code (ARCHITECTURE.md): each layer imports only from its own layer and the
ones below it, and no modules import each other in a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

# Lowest first: data (files, items and the store) < analysis (models, metrics, results)
# < annotate (tasks, batches, agreement) < the pages and the command line.
# The package itself (its version) is below everything; the faces are the pages, the command
# line, the app's launcher, the notebooks' API and the checks a plugin's own tests call.
LAYERS = {
    "": 0,
    "data": 0,
    "analysis": 1,
    "annotate": 2,
    "views": 3,
    "app": 3,
    "cli": 3,
    "server": 3,
    "api": 3,
    "plugin_checks": 3,
}
PACKAGE = "foil_studio"


def project_modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    modules = {}
    for path in (REPO / PACKAGE).rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imported_modules(path: Path, known: set[str]) -> set[str]:
    """The project modules a file imports, at module level or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {name for name in names if name in known}
    return found


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imported_modules(path, set(modules)) - {name} for name, path in modules.items()}


def layer(module: str) -> int:
    """The layer of a module; a module the table does not name fails here (add it to LAYERS)."""
    return LAYERS[(module.split(".") + [""])[1]]


def test_no_module_imports_from_a_layer_above_it():
    upward = sorted(
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        for target in targets
        if layer(target) > layer(module)
    )
    assert upward == []


def test_no_modules_import_each_other_in_a_cycle():
    graph = import_graph()
    # a package importing its own submodules (to re-export them) is not a cycle of its own
    edges = {m: {t for t in ts if not t.startswith(m + ".")} for m, ts in graph.items()}
    cycles, state = [], {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for target in sorted(edges[module]):
            if state.get(target) == "open":
                cycles.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_the_checks_see_a_known_upward_import():
    """The graph is read for real: the pages import the store, which is on the ground floor."""
    graph = import_graph()
    assert any(t.startswith("foil_studio.data.store") or t == "foil_studio.data" for t in graph["foil_studio.app"])


def test_every_module_of_the_package_has_a_layer():
    assert [module for module in project_modules() if (module.split(".") + [""])[1] not in LAYERS] == []
