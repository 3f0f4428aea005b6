"""colour-match: a caption scores by how close the colour it names is to the image's mean colour.

The model is a folder holding ``colours.pt``, a table of colour words and their RGB values
(``save_colours`` writes one): a pair scores minus the distance, in RGB scaled to [0, 1], from the
image's mean colour to the nearest colour the caption names, and -2 (below any distance) when the
caption names none. A rule, not a network: it shows what a family's record and loader are. The
record is read without importing torch (``--help`` stays light); ``load`` imports it when asked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from foil_studio.analysis.scorers.record import ScorerFamily

TABLE = "colours.pt"
NO_COLOUR = -2.0


class ColourScorer:
    """Scores (image, caption) pairs by the colour table it was loaded with."""

    def __init__(self, colours: Mapping[str, np.ndarray]) -> None:
        self.colours = dict(colours)

    def prepare_images(self, images: list[Image.Image]) -> list[np.ndarray]:
        """Each image's mean colour."""
        return [np.asarray(image.convert("RGB"), dtype=float).reshape(-1, 3).mean(axis=0) / 255 for image in images]

    def prepare_texts(self, texts: list[str]) -> list[np.ndarray]:
        """The colours each caption names (rows of RGB), in the order named."""
        named = [[self.colours[word] for word in text.lower().split() if word in self.colours] for text in texts]
        return [np.array(colours).reshape(-1, 3) for colours in named]

    def score_pairs(self, images: Sequence[np.ndarray], texts: Sequence[np.ndarray]) -> list[float]:
        """Minus the distance to the nearest named colour, per pair."""
        return [
            float(-np.linalg.norm(named - mean, axis=1).min()) if len(named) else NO_COLOUR
            for mean, named in zip(images, texts)
        ]

    def stamp(self) -> dict[str, Any]:
        """The colour words the table holds."""
        return {"colour_words": sorted(self.colours)}


def save_colours(folder: Path, colours: Mapping[str, tuple[int, int, int]]) -> Path:
    """A colour-match model: `folder/colours.pt` holding each word's RGB (0-255)."""
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    torch.save({word: torch.tensor(rgb, dtype=torch.float32) / 255 for word, rgb in colours.items()}, folder / TABLE)
    return folder


def load(ref: str, precision: str, device: Any) -> ColourScorer:
    """The colour table of the folder `ref` (precision and device change nothing: numpy on the CPU)."""
    import torch

    from foil_studio.analysis.model_spec import ModelUnavailableError
    from foil_studio.analysis.scorers.base import weights_folder

    table = weights_folder(ref) / TABLE
    if not table.is_file():
        raise ModelUnavailableError(f"{ref} holds no {TABLE}; make one with foil_plugin_example.colour.save_colours")
    return ColourScorer({word: rgb.numpy() for word, rgb in torch.load(table).items()})


FAMILY = ScorerFamily(
    "colour-match",
    "a colour table scoring a caption by the colour it names",
    "minus the RGB distance from the image's mean colour to the nearest colour the caption names; "
    "-2 when it names none",
    "foil-plugin-example, foil_plugin_example/colour.py (an example rule, no paper)",
    "colour-match:./colour-model",
    "foil_plugin_example.colour:load",
)
