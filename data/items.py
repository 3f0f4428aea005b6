"""One item model for the five kinds of benchmark item.

Every item stores its images and captions as ordered lists whose meaning depends on its kind:

=============  =====================================  ==============================
kind           images                                  captions
=============  =====================================  ==============================
``pair``       ``[I]``                                 ``[c, c_n]``
``triple``     ``[I]``                                 ``[c, c_n, c_p]``
``group``      ``[I0, I1]``                            ``[C0, C1]``
``retrieval``  ``[I]``                                 ``[c, c_n1, ..., c_nk]``
``candidates`` ``[img_1, ..., img_N]``                 ``[caption]``
=============  =====================================  ==============================

Image references are paths relative to the dataset's declared image root, or empty when
the source does not name the image (per-instance result files). ``truth`` holds what is known
to be true (demo ground truth, or which candidate is valid); ``meta`` holds anything else the
source carries (a candidate set's positive caption and source image, ARO bounding boxes...).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

ITEM_KINDS = ("pair", "triple", "group", "retrieval", "candidates")

_CAPTION_SHAPE = {"pair": 2, "triple": 3, "group": 2, "candidates": 1}
_IMAGE_SHAPE = {"pair": 1, "triple": 1, "group": 2, "retrieval": 1}


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
        names = [image.rsplit("/", 1)[-1] for image in self.images]
        return _digest([self.text_key, *names])


def check_shape(kind: str, captions: tuple[str, ...], images: tuple[str, ...]) -> None:
    """Raise ItemShapeError unless the lists have the lengths the kind requires."""
    if kind not in ITEM_KINDS:
        raise ItemShapeError(f"unknown item kind {kind!r}; expected one of {ITEM_KINDS}")
    n_captions = _CAPTION_SHAPE.get(kind)
    if n_captions is not None and len(captions) != n_captions:
        raise ItemShapeError(f"a {kind} needs {n_captions} captions, got {len(captions)}")
    if kind == "retrieval" and len(captions) < 2:
        raise ItemShapeError("a retrieval set needs a caption and at least one negative")
    if any(not isinstance(c, str) or not c.strip() for c in captions):
        raise ItemShapeError("every caption must be a non-empty string")
    n_images = _IMAGE_SHAPE.get(kind)
    if images and n_images is not None and len(images) != n_images:
        raise ItemShapeError(f"a {kind} needs {n_images} image(s), got {len(images)}")
    if kind == "candidates" and len(images) < 2:
        raise ItemShapeError("a candidate set needs at least two images")


def normalize_caption(caption: str) -> str:
    """Collapse whitespace so that "a cat. " and "a cat." are the same caption."""
    return re.sub(r"\s+", " ", caption).strip()


def category_key(type_: str, subtype: str) -> str:
    """The `{type}_{subtype}` category key of cli.md, in lower case."""
    return f"{type_.strip().lower()}_{subtype.strip().lower()}"


def _digest(parts: list[str]) -> str:
    return hashlib.sha1(json.dumps(parts).encode()).hexdigest()[:20]


def caption_roles(kind: str, n: int) -> list[str]:
    """What each caption of an item of `kind` is, for display and export."""
    if kind == "pair":
        return ["positive", "negative"]
    if kind == "triple":
        return ["positive", "negative", "hard positive"]
    if kind == "group":
        return ["C0 (positive)", "C1 (negative)"]
    if kind == "retrieval":
        return ["positive"] + [f"negative {i}" for i in range(1, n)]
    return ["caption"]


def image_roles(kind: str, n: int) -> list[str]:
    """What each image of an item of `kind` is."""
    if kind == "group":
        return ["I0 (positive)", "I1 (negative)"]
    if kind == "candidates":
        return [f"candidate {chr(ord('A') + i)}" for i in range(n)]
    return ["image"] * n
