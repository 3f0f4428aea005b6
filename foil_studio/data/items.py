"""One item model for every kind of benchmark item.

An item stores its images and captions as ordered lists whose meaning its kind gives
(``data.item_kinds``: ``pair`` is ``[I]`` and ``[c, c_n]``, ``group`` ``[I0, I1]`` and
``[C0, C1]``...). Image references are paths relative to the dataset's declared image root, or
empty when the source does not name the image (per-instance result files). ``truth`` holds what
is known to be true (demo ground truth, or which candidate is valid); ``meta`` holds anything
else the source carries (a candidate set's positive caption and source image, ARO bounding
boxes...).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

from foil_studio.data.item_kinds import ITEM_KINDS, REGISTRY


class ItemShapeError(ValueError):
    """An item's images or captions do not fit its kind."""


@dataclass(frozen=True)
class Item:
    """One benchmark item; see the module docstring for the meaning of the lists."""

    kind: str
    category: str
    source_id: str
    captions: tuple[str, ...]
    images: tuple[str, ...] = ()
    truth: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_shape(self.kind, self.captions, self.images)

    @property
    def text_key(self) -> str:
        """Identity from kind, category and captions alone (for sources without images)."""
        return _digest([self.kind, self.category, *map(normalize_caption, self.captions)])

    @property
    def content_key(self) -> str:
        """Identity from text and image file names; equal items from two files share it."""
        return self.keys()[0]

    def keys(self) -> tuple[str, str]:
        """(content key, text key), each hashed once: an import needs both of every item, and hashing
        them again was most of a large import's time (not cached: a million items held the keys in 0.5 GB)."""
        text = self.text_key
        names = [image.rsplit("/", 1)[-1] for image in self.images]
        return _digest([text, *names]), text


def check_shape(kind: str, captions: tuple[str, ...], images: tuple[str, ...]) -> None:
    """Raise ItemShapeError unless the lists have the lengths the kind requires."""
    if kind not in REGISTRY:
        raise ItemShapeError(f"unknown item kind {kind!r}; expected one of {ITEM_KINDS}")
    shape = REGISTRY[kind]
    if shape.n_captions is not None and len(captions) != shape.n_captions:
        raise ItemShapeError(f"a {kind} needs {shape.n_captions} captions {shape.captions}, got {len(captions)}")
    if len(captions) < shape.min_captions:
        raise ItemShapeError(
            f"a {kind} needs at least {shape.min_captions} captions {shape.captions}, got {len(captions)}"
        )
    if any(not isinstance(c, str) or not c.strip() for c in captions):
        raise ItemShapeError("every caption must be a non-empty string")
    if images and shape.n_images is not None and len(images) != shape.n_images:
        raise ItemShapeError(f"a {kind} needs {shape.n_images} image(s) {shape.images}, got {len(images)}")
    if len(images) < shape.min_images:
        raise ItemShapeError(f"a {kind} needs at least {shape.min_images} images {shape.images}, got {len(images)}")


def normalize_caption(caption: str) -> str:
    """Collapse whitespace so that "a cat. " and "a cat." are the same caption (`str.split` splits
    where the regular expression `\\s+` matches, at a fraction of its cost)."""
    return " ".join(caption.split())


def category_key(type_: str, subtype: str) -> str:
    """The `{type}_{subtype}` category key (README, Command line), in lower case."""
    return f"{type_.strip().lower()}_{subtype.strip().lower()}"


def texts_json(texts: Iterable[str]) -> str:
    """`json.dumps(list(texts))`'s exact text, built from the C string encoder: the whole encoder,
    six times per item (its keys and its stored lists), took a fifth of a large import's time."""
    return "[" + ", ".join(map(encode_basestring_ascii, texts)) + "]"


def _digest(parts: list[str]) -> str:
    """The key of a list of texts: SHA-1 of its JSON."""
    return hashlib.sha1(texts_json(parts).encode()).hexdigest()[:20]
