"""`plugins`: the installed packages that add records to foil's registries, and those refused."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

import sqlite_utils

# Every registry a plugin can add to, loaded here so that each group's entry points are read.
from foil_studio.analysis import metric_families, scorers  # noqa: F401
from foil_studio.annotate import task_types  # noqa: F401
from foil_studio.cli.base import command
from foil_studio.data import formats, item_kinds, plugins  # noqa: F401


def plugins_text(found: dict[str, Any]) -> str:
    """Each plugin with its version and what it adds per group, then each refusal's line."""
    if not found["plugins"]:
        return f"no plugins installed (foil reads the entry-point groups {', '.join(found['groups'])})"
    lines = []
    for plugin in found["plugins"]:
        lines.append(f"{plugin['distribution']} {plugin['version']}".rstrip())
        lines += [f"  {group}: {', '.join(names)}" for group, names in plugin["adds"].items()]
        lines += [f"  refused ({r['group']}) `{r['entry_point']}`: {r['reason']}" for r in plugin["refused"]]
    return "\n".join(lines)


@command("plugins", text=plugins_text, opens_store=False)
def cmd_plugins(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """List the installed plugins (packages adding formats, item kinds, task types, metric or model
    families through entry points), each with its version, what it adds, and any entry point
    refused with the reason (docs/plugins.md)."""
    return {"groups": list(plugins.GROUPS), "plugins": [asdict(plugin) for plugin in plugins.installed()]}
