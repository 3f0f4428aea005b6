"""The item kinds: one module each, listed once in ``REGISTRY``.

Item validation, scoring, inspection, metrics, cards and exports read a kind's record instead of
branching on its name; a new kind is a new module defining ``ITEM_KIND`` and one line below.
"""

from __future__ import annotations

from data.item_kinds import candidates, group, pair, paraphrase, retrieval, triple
from data.item_kinds.base import Gap, ItemKind

REGISTRY: dict[str, ItemKind] = {
    k.name: k
    for k in (
        pair.ITEM_KIND,
        triple.ITEM_KIND,
        paraphrase.ITEM_KIND,
        group.ITEM_KIND,
        retrieval.ITEM_KIND,
        candidates.ITEM_KIND,
    )
}
ITEM_KINDS = tuple(REGISTRY)
# Kinds whose captions 0 and 1 are a positive and its negative (blind audits, validate_negative).
CAPTION_PAIR_KINDS = ("pair", "triple", "paraphrase", "group")

__all__ = ["REGISTRY", "ITEM_KINDS", "CAPTION_PAIR_KINDS", "Gap", "ItemKind", "item_kind"]


def item_kind(name: str) -> ItemKind:
    """The registered kind called `name` (KeyError names the known ones)."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown item kind {name!r}; expected one of {ITEM_KINDS}") from None
