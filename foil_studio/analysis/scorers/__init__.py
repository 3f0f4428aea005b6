"""Model families, one record each (``record.ScorerFamily``): what a family is, the rule it scores
an (image, caption) pair by and where that rule was read, and the function that loads its models.

``REGISTRY`` holds foil's own families (``built_in``) and each installed plugin's (entry-point
group ``foil_studio.scorers``, docs/plugins.md). Nothing here imports torch: ``--help``, the forms
and ``split_family`` read the records; a model's loader is imported when it loads
(``ScorerFamily.loader``, ``scorers.pairwise.load_family``).
"""

from __future__ import annotations

from dataclasses import dataclass

from foil_studio.analysis.scorers import built_in
from foil_studio.analysis.scorers.record import ScorerFamily
from foil_studio.data import plugins

REGISTRY: plugins.Registry[ScorerFamily] = plugins.Registry(
    plugins.SCORERS,
    ScorerFamily,
    built_in.BUILT_INS,
)


class UnknownFamilyError(ValueError):
    """A ``FAMILY:`` prefix no record has."""


def pair_families() -> list[ScorerFamily]:
    """The families that score pairs (every one but open_clip), in registry order: the names
    `--model FAMILY:NAME` takes."""
    return [family for family in REGISTRY.values() if family.scores_pairs]


def split_family(model: str) -> tuple[str, str] | None:
    """(family, name or folder) when `model` is `FAMILY:NAME` for a family other than open_clip, else None.

    >>> split_family("blip-itm:/models/blip"), split_family("hf-hub:timm/ViT-B-16"), split_family("ViT-B-32")
    (('blip-itm', '/models/blip'), None, None)
    """
    family, sep, ref = model.partition(":")
    return (family, ref) if sep and ref and family in REGISTRY and REGISTRY[family].scores_pairs else None


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
        FamilyChoice(f.name, f.summary, f.rule, f.source, f.example.removeprefix(f"{f.name}:")) for f in pair_families()
    ]


def family_table() -> str:
    """The family table of docs/scoring.md: the name `--model` takes, the rule, where it was read."""
    rows = ["| family | `--model` example | scores an (image, caption) pair by | read from | differs from it |"]
    rows.append("| --- | --- | --- | --- | --- |")
    for family in REGISTRY.values():
        name = plugins.marked(plugins.SCORERS, family.name)
        rows.append(f"| {name} | `{family.example}` | {family.rule} | {family.source} | {family.differs or '-'} |")
    return "\n".join(rows)
