"""What a loaded model family shares: where its weights are, their digest, its dtype, what its runs
record (``LoadedFamily``). The record itself (``ScorerFamily``, ``PairScorer``) is ``scorers.record``.

A family whose models embed images and captions apart (open_clip) is scored by
``analysis.scoring``; the others here are cross-encoders: they read an image and a caption together,
so a family gives three steps that the dataset path (``scorers.pairwise``) batches: prepare each
distinct image once, prepare each distinct caption once, then score batches of (image, caption)
pairs from those prepared states.
"""

from __future__ import annotations

import hashlib
import json
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import transformers
from huggingface_hub import snapshot_download

from foil_studio.analysis.model_spec import ModelUnavailableError
from foil_studio.analysis.scorers.record import PairScorer, ScorerFamily
from foil_studio.data import hub

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class LoadedFamily:
    """A family's loaded model with what its runs record."""

    family: ScorerFamily
    ref: str
    scorer: PairScorer
    precision: str
    precision_reason: str
    device: torch.device
    weights_digest: str
    files_digest: str

    @property
    def identity(self) -> str:
        """A key for cached pair scores: changes whenever the scores could (any file of the model's
        folder but its documentation, the precision, the family's rule, and what the scorer read
        from the files: its question, answer token, caption length limit)."""
        parts = [self.family.name, self.ref, self.files_digest, self.precision, self.family.rule, self.scorer.stamp()]
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]

    @property
    def run_name(self) -> str:
        """`family-name` (the folder's or hub name's last part), with the precision when not fp32."""
        name = f"{self.family.name}-{Path(self.ref.rstrip('/')).name}"
        return name if self.precision == "fp32" else f"{name}-{self.precision}"

    def stamp(self) -> dict[str, Any]:
        """What every run of this model records: family, rule, source, weights, libraries, device."""
        return {
            "family": self.family.name,
            "model": self.ref,
            "rule": self.family.rule,
            "rule_source": self.family.source,
            "rule_differs": self.family.differs,
            "precision": self.precision,
            "precision_reason": self.precision_reason,
            "weights_digest": self.weights_digest,
            "files_digest": self.files_digest,
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "python": platform.python_version(),
            "device": str(self.device),
            "model_identity": self.identity,
            **self.scorer.stamp(),
        }


def weights_folder(ref: str) -> Path:
    """The folder holding `ref`'s files: `ref` itself when it is a folder, else its snapshot in the
    Hugging Face cache (ModelUnavailableError, at once, when neither holds it and the Hub is out of
    reach or the cache only was asked for)."""
    folder = Path(ref).expanduser()
    if folder.is_dir():
        return folder
    if _looks_like_path(ref):
        raise ModelUnavailableError(f"model folder {ref} does not exist")
    unreachable = hub.offline_requested() or not hub.hub_reachable()
    try:
        with hub.cache_only(unreachable):
            return Path(snapshot_download(ref, local_files_only=unreachable))
    except Exception as error:  # the Hub client raises many types; each means the same here
        raise ModelUnavailableError(unavailable_message(ref, error, unreachable)) from error


def _looks_like_path(ref: str) -> bool:
    return ref.startswith(("/", ".", "~")) or ref.count("/") > 1


def unavailable_message(ref: str, error: Exception, unreachable: bool) -> str:
    """One line: why `ref` did not load, and how to provide its weights."""
    reason = hub.error_line(error)
    offline = f" (the Hub at {hub.hub_endpoint()} is out of reach)" if unreachable else ""
    return (
        f"cannot load {ref}{offline}: {reason}. Give a local folder made by save_pretrained "
        "(model and processor), or download it on a connected machine into the Hugging Face cache (HF_HOME) "
        "and copy that folder here."
    )


# transformers fills weights a folder lacks at random and goes on; a few may be left out on
# purpose (tied or unused heads), a folder saved from another model lacks a large part
MOST_MISSING = 0.05


class IncompleteWeightsError(ValueError):
    """A folder lacks much of the model's weights: it was saved from another model."""


def load_whole(model_class: Any, folder: Path, precision: str) -> Any:
    """`model_class` from `folder` in `precision`, in eval mode; ValueError where the folder lacks
    more than `MOST_MISSING` of the model's tensors (saved from another model: scored, it would
    score with random weights: IncompleteWeightsError)."""
    model, info = model_class.from_pretrained(folder, dtype=model_dtype(precision), output_loading_info=True)
    missing, total = len(info["missing_keys"]), len(model.state_dict())
    if missing > MOST_MISSING * total:
        saved_as = getattr(model.config, "model_type", "another model")
        raise IncompleteWeightsError(
            f"its weights lack {missing} of the {total} tensors of {type(model).__name__}, which would be random "
            f"(config.json says {saved_as})"
        )
    return model.eval()


def model_dtype(precision: str) -> torch.dtype:
    """The torch dtype a precision name stands for."""
    return DTYPES[precision]


def place(model: torch.nn.Module, device: torch.device) -> None:
    """Move a loaded model to `device` (torch's own `to`: transformers' typed wrapper of it confuses mypy)."""
    torch.nn.Module.to(model, device)
