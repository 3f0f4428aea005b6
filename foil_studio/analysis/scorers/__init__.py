"""Model families, one record each (``base.ScorerFamily``): how a family loads, the rule it scores
an (image, caption) pair by, and where that rule was read.

A new family is one module defining ``FAMILY`` and one line here; ``--model FAMILY:NAME`` then
reaches it (its name also goes in ``model_spec.FAMILY_NAMES``, which the CLI's help reads without
importing torch; a test keeps the two equal).
"""

from __future__ import annotations

from foil_studio.analysis.scorers import blip_itm, flava_itm, open_clip_family
from foil_studio.analysis.scorers.base import ScorerFamily

REGISTRY: dict[str, ScorerFamily] = {
    family.name: family
    for family in (
        open_clip_family.FAMILY,
        blip_itm.FAMILY,
        flava_itm.FAMILY,
    )
}


class UnknownFamilyError(ValueError):
    """A ``FAMILY:`` prefix no record has."""


def scorer_family(name: str) -> ScorerFamily:
    """The record of family `name`."""
    if name not in REGISTRY:
        raise UnknownFamilyError(f"unknown model family {name!r}; known: {', '.join(REGISTRY)}")
    return REGISTRY[name]


def family_table() -> str:
    """README's table of the families: the name `--model` takes, the rule, where it was read."""
    rows = ["| family | `--model` example | scores an (image, caption) pair by | read from | differs from it |"]
    rows.append("| --- | --- | --- | --- | --- |")
    for family in REGISTRY.values():
        rows.append(
            f"| `{family.name}` | `{family.example}` | {family.rule} | {family.source} | {family.differs or '-'} |"
        )
    return "\n".join(rows)
