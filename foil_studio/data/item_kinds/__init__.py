"""The item kinds: one module each, listed once in ``REGISTRY``.

Item validation, scoring, inspection, metrics, cards and exports read a kind's record instead of
branching on its name; a new kind is a new module defining ``ITEM_KIND`` and one line below, or an
installed package's entry point in group ``foil_studio.item_kinds`` (docs/plugins.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from foil_studio.data import plugins
from foil_studio.data.item_kinds import candidates, group, pair, paraphrase, retrieval, triple
from foil_studio.data.item_kinds.base import Gap, ItemKind, TruthKey
from foil_studio.data.item_kinds.truth import negative_verdict

# The built-in kinds, then each installed plugin's (`data.plugins`, entry-point group foil_studio.item_kinds).
REGISTRY: plugins.Registry[ItemKind] = plugins.Registry(
    plugins.ITEM_KINDS,
    ItemKind,
    (
        pair.ITEM_KIND,
        triple.ITEM_KIND,
        paraphrase.ITEM_KIND,
        group.ITEM_KIND,
        retrieval.ITEM_KIND,
        candidates.ITEM_KIND,
    ),
)
if TYPE_CHECKING:  # computed on first use, with the registry (`__getattr__` below)
    ITEM_KINDS: tuple[str, ...]
    # Kinds whose captions 0 and 1 are a positive and its negative (blind audits, validate_negative).
    CAPTION_PAIR_KINDS: tuple[str, ...]
    # Kinds a blind audit reads: the caption pairs, and retrieval items as one pair per negative.
    AUDITED_KINDS: tuple[str, ...]
    # Every truth key that judges an item's negative, whichever kind carries it (a key means one thing).
    VERDICT_KEYS: tuple[TruthKey, ...]


@cache
def verdict_keys() -> tuple[TruthKey, ...]:
    """`VERDICT_KEYS`: the truth keys judging a negative, over every registered kind."""
    return tuple(dict.fromkeys(key for kind in REGISTRY.values() for key in kind.truth_keys if key.verdict is not None))


__getattr__ = plugins.lazy_names(
    globals(),
    ITEM_KINDS=lambda: tuple(REGISTRY),
    CAPTION_PAIR_KINDS=lambda: tuple(name for name, kind in REGISTRY.items() if kind.caption_pair),
    AUDITED_KINDS=lambda: tuple(name for name, kind in REGISTRY.items() if kind.audited),
    VERDICT_KEYS=verdict_keys,
)

__all__ = [
    "REGISTRY",
    "ITEM_KINDS",
    "CAPTION_PAIR_KINDS",
    "VERDICT_KEYS",
    "Gap",
    "ItemKind",
    "item_kind",
    "negative_captions",
    "source_verdict",
]


def negative_captions(item: Mapping[str, Any]) -> tuple[int, ...]:
    """The positions of an item's negative captions, each set against caption 0 (validate_negative
    asks once per negative, the audit scores one pair per negative), read off its kind's caption roles.

    >>> negative_captions({"kind": "triple", "captions": ["c", "n", "p"]})
    (1,)
    >>> negative_captions({"kind": "retrieval", "captions": ["c", "n1", "n2", "n3"]})
    (1, 2, 3)
    """
    roles = item_kind(item["kind"]).caption_roles(len(item["captions"]))
    return tuple(i for i, role in enumerate(roles) if "negative" in role)


def source_verdict(truth: Mapping[str, Any] | None) -> str | None:
    """How an item's source judged its negative ("valid", "invalid", "ambiguous"; None: it says
    nothing), from the truth keys that judge one (`TruthKey.verdict`).

    >>> source_verdict({"negative": "true"}), source_verdict({"valid_foil": True}), source_verdict({})
    ('invalid', 'valid', None)
    """
    return negative_verdict(verdict_keys(), truth or {})


def item_kind(name: str) -> ItemKind:
    """The registered kind called `name` (KeyError names the known ones)."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown item kind {name!r}; expected one of {tuple(REGISTRY)}") from None
