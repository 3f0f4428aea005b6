"""Plugins (issue 56): records an installed package adds through entry points join a registry as
the built-ins do, through the same loader (`data.plugins.Registry`); a plugin that raises on
import, takes a name already held or gives a record of the wrong type is refused in one line
naming its package and entry point, and foil goes on without it. The installed packages here are
`*.dist-info` folders on the path, which `importlib.metadata` reads as it reads any installed
package; the example package built as a wheel is `tests/test_plugin_package.py`."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from foil_studio.analysis import metric_families, scorers
from foil_studio.annotate import task_types
from foil_studio.data import formats, item_kinds, plugins, store
from foil_studio.data.formats import Format
from foil_studio.plugin_checks import check_item_kind, check_metric_family, check_scorer_family
from tests.conftest import APP_SCRIPT, REPO

BROKEN = {
    "foil_studio.formats": {
        "raises": "broken_plugin_raises:FORMAT",
        "sugarcrepe": "broken_plugin_records:TAKEN",
        "wrong": "broken_plugin_records:WRONG",
    }
}
BROKEN_MODULES = {
    "broken_plugin_raises": 'raise RuntimeError("needs a GPU")\n',
    "broken_plugin_records": textwrap.dedent(
        """
        from foil_studio.data.formats.base import Format

        TAKEN = Format("sugarcrepe", "a second SugarCrepe")
        WRONG = {"name": "wrong"}
        """
    ),
}


def installed_package(
    folder: Path, name: str, version: str, entry_points: dict[str, dict[str, str]], modules: dict[str, str]
) -> Path:
    """A package as an installer leaves it: its modules and `NAME-VERSION.dist-info` (METADATA,
    entry_points.txt) in `folder`, which goes on the path."""
    dist_info = folder / f"{name.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    groups = [
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()) for group, points in entry_points.items()
    ]
    (dist_info / "entry_points.txt").write_text("\n".join(groups))
    for module, text in modules.items():
        (folder / f"{module}.py").write_text(text)
    return folder


@pytest.fixture
def fresh_record_lists(monkeypatch):
    """What a registry adds and refuses, kept apart from this process's own registries."""
    for name, value in (("ADDED", []), ("REFUSED", []), ("_ORIGINS", {}), ("_REGISTRIES", [])):
        monkeypatch.setattr(plugins, name, value)


def built_in_formats() -> list[Format]:
    return [f for f in formats.REGISTRY.values() if plugins.origin(plugins.FORMATS, f.name).built_in]


def test_each_broken_entry_point_is_refused_in_one_line_and_the_built_ins_stay(
    tmp_path, monkeypatch, fresh_record_lists, caplog
):
    monkeypatch.syspath_prepend(installed_package(tmp_path, "broken-plugin", "1.0", BROKEN, BROKEN_MODULES))
    with caplog.at_level(logging.WARNING, logger="foil_studio.data.plugins"):
        registry = plugins.Registry(plugins.FORMATS, Format, built_in_formats())
        assert dict(registry) == {f.name: f for f in built_in_formats()}
    said = {r.origin.entry_point.split(" = ")[0]: r.line() for r in plugins.REFUSED}
    assert said == {
        "raises": "plugin broken-plugin 1.0: entry point `raises = broken_plugin_raises:FORMAT` (foil_studio.formats) "
        "refused: importing it raised RuntimeError: needs a GPU",
        "sugarcrepe": "plugin broken-plugin 1.0: entry point `sugarcrepe = broken_plugin_records:TAKEN` "
        "(foil_studio.formats) refused: the name 'sugarcrepe' is built in",
        "wrong": "plugin broken-plugin 1.0: entry point `wrong = broken_plugin_records:WRONG` (foil_studio.formats) "
        "refused: gives a dict, not a Format",
    }
    assert sorted(r.getMessage() for r in caplog.records) == sorted(said.values())
    assert all("\n" not in line for line in said.values())
    (plugin,) = plugins.installed()
    assert (plugin.distribution, plugin.version, plugin.adds, len(plugin.refused)) == ("broken-plugin", "1.0", {}, 3)


def test_a_plugin_record_joins_its_registry_marked_as_the_plugin_s_and_a_second_of_its_name_is_refused(
    tmp_path, monkeypatch, fresh_record_lists
):
    record = 'from foil_studio.data.formats.base import Format\nMINE = Format("mine", "a lab\'s own layout")\n'
    first = installed_package(
        tmp_path / "a", "lab-formats", "2.3", {plugins.FORMATS: {"mine": "lab_formats:MINE"}}, {"lab_formats": record}
    )
    second = installed_package(
        tmp_path / "b",
        "other-lab",
        "0.1",
        {plugins.FORMATS: {"mine": "other_lab:MINE", "renamed": "other_lab:MINE"}},
        {"other_lab": record},
    )
    monkeypatch.syspath_prepend(first)
    monkeypatch.syspath_prepend(second)
    registry = plugins.Registry(plugins.FORMATS, Format, built_in_formats())
    assert registry["mine"].layout == "a lab's own layout" and list(registry)[-1] == "mine"
    assert plugins.marked(plugins.FORMATS, "mine") == "`mine` (plugin lab-formats 2.3)"
    assert plugins.marked(plugins.FORMATS, "sugarcrepe") == "`sugarcrepe`"
    reasons = sorted(r.reason for r in plugins.REFUSED)
    assert reasons == [
        "its record is named 'mine'; name the entry point 'mine'",
        "the name 'mine' is taken by plugin lab-formats 2.3",
    ]
    assert [(p.distribution, p.adds) for p in plugins.installed()] == [
        ("lab-formats", {plugins.FORMATS: ["mine"]}),
        ("other-lab", {}),
    ]


def foil(*args: str, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m foil_studio.cli ARGS` with `path` on PYTHONPATH (where a package is installed)."""
    env = {k: v for k, v in os.environ.items() if k not in ("FOIL_DB", "PYTHONPATH")}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    return subprocess.run(
        [sys.executable, "-m", "foil_studio.cli", *args], cwd=path or REPO, env=env, capture_output=True, text=True
    )


def test_foil_keeps_working_beside_a_broken_plugin_and_foil_plugins_says_why(tmp_path):
    where = installed_package(tmp_path / "site", "broken-plugin", "1.0", BROKEN, BROKEN_MODULES)
    listed = foil("plugins", path=where)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0] == "broken-plugin 1.0"
    assert (
        "  refused (foil_studio.formats) `raises = broken_plugin_raises:FORMAT`: importing it raised" in listed.stdout
    )
    assert listed.stderr.count("plugin broken-plugin 1.0: entry point") == 3  # each refusal, once, on stderr
    store = str(tmp_path / "foil.db")
    sample = formats.REGISTRY["whatsup"].write_source(tmp_path / "whatsup")
    imported = foil("import", "whatsup", str(sample), "--db", store, "--json", path=where)
    assert imported.returncode == 0 and json.loads(imported.stdout)["n_items"] > 0, imported.stderr


def test_no_plugin_installed_is_said_in_one_line():
    listed = foil("plugins")
    assert listed.returncode == 0 and listed.stdout.startswith("no plugins installed"), listed.stdout + listed.stderr


def test_the_help_path_reads_every_model_family_without_importing_torch():
    """`--help` lists each family from its record, and no record's module imports torch."""
    code = (
        "import sys; from foil_studio.cli.main import build_parser; build_parser(); "
        "from foil_studio.analysis import scorers; print(len(scorers.REGISTRY), 'torch' in sys.modules)"
    )
    shown = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert shown.stdout.split() == [str(len(scorers.REGISTRY)), "False"]


# The generic checks a plugin's records pass (`foil_studio.plugin_checks`), on foil's own; a
# format's round trip and a task type's layout are tests/test_formats.py's and test_task_display.py's.


@pytest.mark.parametrize("name", list(item_kinds.REGISTRY))
def test_every_item_kind_passes_the_generic_check(name):
    check_item_kind(item_kinds.REGISTRY[name])


FAMILY_KINDS = [(kind.metric_family, kind.name) for kind in item_kinds.REGISTRY.values() if kind.metric_family]


@pytest.mark.parametrize(("family", "kind"), FAMILY_KINDS)
def test_every_metric_family_passes_the_generic_check_on_each_kind_naming_it(family, kind):
    check_metric_family(metric_families.METRIC_FAMILIES[family], kind)


@pytest.mark.parametrize("name", [family.name for family in scorers.pair_families()])
def test_every_model_family_passes_the_generic_check(name):
    check_scorer_family(scorers.REGISTRY[name])


def test_every_registry_is_one_loader_s_registry_of_its_group():
    registries = (formats.REGISTRY, item_kinds.REGISTRY, task_types.REGISTRY, metric_families.METRIC_FAMILIES)
    assert all(isinstance(registry, plugins.Registry) for registry in (*registries, scorers.REGISTRY))
    assert {registry.group for registry in (*registries, scorers.REGISTRY)} == set(plugins.GROUPS)


# Opens every page of the app through AppTest in a process where the broken plugin is installed:
# each admin page as the admin, the annotator's page with `sys.argv[1]`'s token; prints, per page,
# its exceptions and the sidebar's warnings.
OPEN_EVERY_PAGE = textwrap.dedent(
    """
    import json, os, sys
    from streamlit.testing.v1 import AppTest
    from foil_studio.views.registry import PAGES

    def opened(token, page=None):
        at = AppTest.from_file(os.environ["APP_SCRIPT"], default_timeout=300)
        at.query_params["token"] = token
        at.run()
        if page is not None:
            at.switch_page(page).run()
        why = [m.value for m in at.sidebar.markdown if "entry point" in m.value]
        said = [w.value for w in at.sidebar.warning] + why
        return {"exceptions": [e.value for e in at.exception], "sidebar": said, "title": [t.value for t in at.title]}

    shown = {p.path: opened(os.environ["FOIL_ADMIN_TOKEN"], p.path) for p in PAGES if p.role == "admin"}
    shown["annotator"] = opened(sys.argv[1])
    print(json.dumps(shown))
    """
)


def test_every_page_opens_beside_a_broken_plugin_and_the_admin_is_told_which_was_refused(demo_store, tmp_path):
    from foil_studio.annotate import batches

    where = installed_package(tmp_path / "site", "broken-plugin", "1.0", BROKEN, BROKEN_MODULES)
    db_file = tmp_path / "foil.db"
    store.open_db(demo_store).conn.execute("VACUUM INTO ?", [str(db_file)])
    spec = batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("ada",), 1, 4, seed=1, name="ada-batch")
    (ada,) = batches.create_batch(store.open_db(db_file), spec)["annotators"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"PYTHONPATH": str(where), "FOIL_DB": str(db_file), "FOIL_ADMIN_TOKEN": "broken-plugin-admin-token"}
    env["APP_SCRIPT"] = str(APP_SCRIPT)
    done = subprocess.run(
        [sys.executable, "-c", OPEN_EVERY_PAGE, ada["token"]], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    shown = json.loads(done.stdout.splitlines()[-1])
    assert len(shown) > 5 and all(page["title"] and not page["exceptions"] for page in shown.values()), shown
    admin_pages = [page for path, page in shown.items() if path != "annotator"]
    for page in admin_pages:
        warning, why = page["sidebar"]
        assert warning.startswith("3 plugin entry points refused; the rest of Foil Studio works without them")
        assert "- plugin broken-plugin 1.0: entry point `raises = broken_plugin_raises:FORMAT`" in why
    assert shown["annotator"]["sidebar"] == []  # an annotator is not told about the lab's plugins
