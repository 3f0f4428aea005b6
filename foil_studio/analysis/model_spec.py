"""Which model to score with: names and specs, without importing torch or open_clip.

Pages import this to draw their forms quickly; ``analysis.models`` does the loading.
"""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

# `auto`: bf16 where the device computes it natively, fp32 elsewhere (`analysis.models.resolve_precision`).
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
RANDOM_WEIGHTS = "none"
DEMO_MODEL_DIR = Path(__file__).resolve().parent / "demo_model"
DEMO_ARCH = "foil-demo-clip"
DEMO_CHECKPOINT = DEMO_MODEL_DIR / f"{DEMO_ARCH}.pt"
DEMO_RUN = "demo-clip"


class ModelUnavailableError(RuntimeError):
    """The model's weights cannot be had here; the message says how to provide them."""


def mismatched_torch_pair(error: BaseException) -> str | None:
    """What to say when importing open_clip failed because torchvision was built for another torch
    (RuntimeError "operator torchvision::nms does not exist", or an ImportError or AttributeError
    raised inside torchvision): one line naming both installed versions and what to do; None for a
    failure that has nothing to do with torchvision.

    >>> mismatched_torch_pair(ImportError("No module named 'open_clip'")) is None
    True
    """
    where = [frame.filename for frame in traceback.extract_tb(error.__traceback__)]
    if "torchvision" not in str(error) and not any(f"{os.sep}torchvision{os.sep}" in name for name in where):
        return None
    versions = {}
    for package in ("torch", "torchvision"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "(not installed)"
    said = " ".join(str(error).split()) or type(error).__name__
    return (
        f"torch {versions['torch']} and torchvision {versions['torchvision']} are installed here, and they are not "
        f"a matching pair (importing them failed: {said}); reinstall a matching pair, torch with the torchvision "
        "release made for it (pip install --force-reinstall torch torchvision, or `make run` in a checkout)"
    )


@dataclass(frozen=True)
class ModelSpec:
    """Which model to load: an architecture plus a pretrained tag or a local checkpoint."""

    arch: str
    pretrained: str | None = None
    checkpoint: str | None = None
    precision: str = "fp32"  # the CLI and the page default to `auto`; code that asks for a model gets what it names

    @property
    def random_weights(self) -> bool:
        """True when the spec asks for untrained weights (timing only)."""
        return (
            self.checkpoint is None
            and (self.pretrained or RANDOM_WEIGHTS).lower() == RANDOM_WEIGHTS
            and not self.arch.startswith("hf-hub:")
        )

    @property
    def run_name(self) -> str:
        """The default run name: `arch`, `arch-tag` or `arch-checkpointstem` (the stem once when it
        is the architecture's name), with the precision when not fp32 (a loaded model's spec names
        the precision `auto` resolved to, so its runs say what they ran in).

        >>> ModelSpec("ViT-B-32", "openai", precision="fp32").run_name, demo_model_spec().run_name, ModelSpec("RN50", precision="bf16").run_name
        ('ViT-B-32-openai', 'foil-demo-clip', 'RN50-bf16')
        """  # noqa: E501
        suffix = Path(self.checkpoint).stem if self.checkpoint else self.pretrained
        name = self.arch + (f"-{suffix}" if suffix and suffix != self.arch else "")
        return name if self.precision in ("fp32", "auto") else f"{name}-{self.precision}"


def demo_model_spec() -> ModelSpec:
    """The small CLIP trained on the synthetic world that ships with the repository (in fp32 on
    every machine: the demo's tables are the same everywhere)."""
    return ModelSpec(DEMO_ARCH, checkpoint=str(DEMO_CHECKPOINT))
