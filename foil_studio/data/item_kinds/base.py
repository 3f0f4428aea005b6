"""What an item kind is: the meaning of an item's caption and image lists, and what its scores give.

Every item stores its images and captions as ordered lists; its kind says how many there are,
what each one is (its role, shown on cards and in exports), how a model's image-by-caption
similarities become the item's stored scores, which score gaps the inspection pages plot, and
which metric family (``analysis.metric_families.METRIC_FAMILIES``) turns a run of such items into benchmark metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Gap:
    """A named per-item score difference; above zero the model prefers the right answer."""

    name: str
    of: Callable[[np.ndarray], np.ndarray]  # a run's stacked scores -> one gap per item


@dataclass(frozen=True)
class Shown:
    """What a truth sentence may refer to: the captions' roles as the item's card lists them, and
    the crowd votes shipped with the item (VALSE's)."""

    caption_roles: tuple[str, ...] = ()
    votes: Mapping[str, int] | None = None


@dataclass(frozen=True)
class TruthKey:
    """One key of an item's ``truth``: ``said(value, shown)`` is its sentence for a newcomer (None:
    said elsewhere, as candidates' validity on their images); ``verdict(value)``, for a key that
    judges the item's negative, is that judgement: "valid", "invalid" or "ambiguous". ``measures``
    says which share its verdicts give, each as (the outcomes of a validation it counts, joined by
    "+", the source's definition in words): a source that does not set ambiguous items apart
    counts "invalid+ambiguous" (VALSE's "not valid")."""

    name: str
    said: Callable[[Any, Shown], str | None]
    verdict: Callable[[Any], str | None] | None = None
    measures: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ItemKind:
    """One kind of benchmark item.

    ``n_captions``/``n_images`` are exact counts (None: any number from ``min_captions``/
    ``min_images``; images may be absent in result-only files). ``scores_from`` reads the item's
    scores off its image-by-caption similarity matrix (rows: images, columns: captions).
    ``metric_family`` names the family of ``analysis.metric_families.METRIC_FAMILIES`` (None: no
    benchmark metric, and ``no_metric_because`` says what to do instead). ``text_scores_from``,
    where set, reads text-only scores off the captions' cosine matrix; they follow the image
    scores (SugarCrepe++'s TOT). ``example`` is a small item of the kind as the store returns it
    (``store.list_items`` row: id, kind, captions, images, truth): the item task-type tests and
    the task table of docs/annotation.md lay out. ``truth_keys`` are the keys of ``truth`` its items carry, each
    with what it means in words (``data.item_kinds.truth``). ``caption_pair``: its captions 0 and 1
    are a positive and its negative (what validations and blind audits read); ``audited``: a blind
    audit reads it (a caption pair, or each negative against the positive, as retrieval items).
    """

    name: str
    images: str  # what the image list holds, in words (docs and error messages)
    captions: str
    n_captions: int | None
    n_images: int | None
    caption_roles: Callable[[int], list[str]]
    image_roles: Callable[[int], list[str]]
    scores_from: Callable[[np.ndarray], Any]
    gaps: tuple[Gap, ...] = ()
    metric_family: str | None = None
    no_metric_because: str = ""  # said when a run of this kind is asked for metrics
    min_captions: int = 1
    min_images: int = 0
    text_scores_from: Callable[[np.ndarray], list[float]] | None = None
    example: Mapping[str, Any] = field(default_factory=dict)
    truth_keys: tuple[TruthKey, ...] = ()
    caption_pair: bool = False
    audited: bool = False

    def scores_shape(self, n_images: int, n_captions: int) -> tuple[int, ...]:
        """The shape of the scores a run stores for an item of this kind with so many images and
        captions: what `scores_from` reads off a similarity matrix of that size, followed, where the
        kind has them, by its text scores (one flat list)."""
        scores = self.scores_from(np.zeros((n_images, n_captions)))
        if self.text_scores_from is None:
            return tuple(np.shape(scores))
        return (len([*scores, *self.text_scores_from(np.zeros((n_captions, n_captions)))]),)

    def truth_key(self, name: str) -> TruthKey | None:
        """The record of one truth key of this kind's items (None: a key it does not know)."""
        return next((key for key in self.truth_keys if key.name == name), None)


def one_image(n: int) -> list[str]:
    """Roles of the images of a kind with one image."""
    return ["image"] * n


def first_image_row(similarity: np.ndarray) -> list[float]:
    """s(caption_k, I) for each caption of a one-image item."""
    return similarity[0].tolist()
