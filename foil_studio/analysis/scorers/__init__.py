"""Model families, one record each (``base.ScorerFamily``): how a family loads, the rule it scores
an (image, caption) pair by, and where that rule was read.

A new family is one module defining ``FAMILY`` and one line here; ``--model FAMILY:NAME`` then
reaches it (its name also goes in ``model_spec.FAMILY_NAMES``, which the CLI's help reads without
importing torch; a test keeps the two equal).
"""

from __future__ import annotations

from dataclasses import dataclass

from foil_studio.analysis.scorers import blip2_itm, blip_itm, flava_itm, open_clip_family, vqascore
from foil_studio.analysis.scorers.base import ScorerFamily

REGISTRY: dict[str, ScorerFamily] = {
    family.name: family
    for family in (
        open_clip_family.FAMILY,
        blip_itm.FAMILY,
        flava_itm.FAMILY,
        blip2_itm.FAMILY,
        vqascore.FAMILY,
    )
}


class UnknownFamilyError(ValueError):
    """A ``FAMILY:`` prefix no record has."""


def scorer_family(name: str) -> ScorerFamily:
    """The record of family `name`."""
    if name not in REGISTRY:
        raise UnknownFamilyError(f"unknown model family {name!r}; known: {', '.join(REGISTRY)}")
    return REGISTRY[name]


@dataclass(frozen=True)
class FamilyChoice:
    """A family as a form offers it: its name, what it is, its rule and source, and an example of
    the name or folder it takes (what follows `FAMILY:` in its `--model` example)."""

    name: str
    summary: str
    rule: str
    source: str
    example: str


def family_choices() -> list[FamilyChoice]:
    """The families that score pairs (every one but open_clip, which has its own form), in registry order.

    >>> [(c.name, c.example) for c in family_choices()][:1]
    [('blip-itm', 'Salesforce/blip-itm-base-coco')]
    """
    return [
        FamilyChoice(f.name, f.summary, f.rule, f.source, f.example.removeprefix(f"{f.name}:"))
        for f in REGISTRY.values()
        if f.load is not None
    ]


def family_table() -> str:
    """The family table of docs/scoring.md: the name `--model` takes, the rule, where it was read."""
    rows = ["| family | `--model` example | scores an (image, caption) pair by | read from | differs from it |"]
    rows.append("| --- | --- | --- | --- | --- |")
    for family in REGISTRY.values():
        rows.append(
            f"| `{family.name}` | `{family.example}` | {family.rule} | {family.source} | {family.differs or '-'} |"
        )
    return "\n".join(rows)
