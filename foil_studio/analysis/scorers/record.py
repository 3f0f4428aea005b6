"""What a model family is, as the forms, `--help` and the docs read it: the ``ScorerFamily``
record, without importing torch. Its ``load`` names the function that loads a model
(``module:function``, imported only when a model is loaded), so the help path stays light
however many families are installed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, cast

from foil_studio.analysis.model_spec import PRECISIONS

if TYPE_CHECKING:
    import torch
    from PIL import Image


class PairScorer(Protocol):
    """A loaded cross-encoder: prepared states per image and per caption, a score per pair."""

    def prepare_images(self, images: list[Image.Image]) -> list[Any]:
        """One state per image (kept on the CPU between batches)."""
        ...

    def prepare_texts(self, texts: list[str]) -> list[Any]:
        """One state per caption."""
        ...

    def score_pairs(self, images: Sequence[Any], texts: Sequence[Any]) -> list[float]:
        """The score of each (image state, caption state) pair, in order; higher means a better match."""
        ...

    def stamp(self) -> dict[str, Any]:
        """Family-specific facts a run records (tokens used, lengths)."""
        ...

    def image_encoder(self) -> torch.nn.Module:
        """The module that takes the images: its weights' dtype is the run's precision."""
        ...


Loader = Callable[[str, str, "torch.device"], PairScorer]


class LoaderError(ValueError):
    """A family's ``load`` names no importable function."""


@dataclass(frozen=True)
class ScorerFamily:
    """One model family: its name (the prefix of ``--model FAMILY:NAME``), what it is (`summary`),
    the rule it scores a pair by and where that rule was read (`source`), how the rule differs from
    the paper's (if it does), an example ``--model`` value, the precisions it runs in, ``load``: the
    function loading a model, as ``module:function`` taking ``(ref, precision, device)`` and
    returning a ``PairScorer`` (None: open_clip's embedding path in ``analysis.scoring``), and
    whether its score is a probability that the caption fits the image (``probability``: its runs
    can serve benchmark health as predictions). ``test_kit`` names the module holding the family's
    test kit, ``tiny_model(folder) -> Path`` (a random model of its architecture saved as a user's
    copy is) and ``reference_score(folder, image, caption) -> float`` (one pair scored by a loop
    written from the library's documented API): the generic tests test every family that has one
    (``analysis.scorers.tiny``)."""

    name: str
    summary: str
    rule: str
    source: str
    example: str
    load: str | None = None
    differs: str = ""
    precisions: tuple[str, ...] = PRECISIONS
    probability: bool = False
    test_kit: str | None = None

    @property
    def scores_pairs(self) -> bool:
        """True for a cross-encoder (scored pair by pair), False for open_clip."""
        return self.load is not None

    def kit(self) -> ModuleType:
        """The module of the family's test kit (``test_kit``), imported now."""
        if self.test_kit is None:
            raise LoaderError(f"family {self.name} has no test kit (its record's test_kit)")
        return importlib.import_module(self.test_kit)

    def loader(self) -> Loader:
        """The function ``load`` names, imported now (with torch and whatever the family needs).

        >>> ScorerFamily("x", "", "", "", "", "json:no_such_function").loader()
        Traceback (most recent call last):
        ...
        foil_studio.analysis.scorers.record.LoaderError: family x: load 'json:no_such_function' names nothing importable (AttributeError: module 'json' has no attribute 'no_such_function')
        """  # noqa: E501
        module, _, function = (self.load or "").partition(":")
        try:
            return cast(Loader, getattr(importlib.import_module(module), function))
        except (ImportError, AttributeError, ValueError) as error:
            raise LoaderError(
                f"family {self.name}: load {self.load!r} names nothing importable ({type(error).__name__}: {error})"
            ) from error
