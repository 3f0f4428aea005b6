"""Loading open_clip models and encoding images and texts: the only module that imports open_clip.

Everything downstream receives NumPy arrays of L2-normalised embeddings.

* ``load_model`` takes any open_clip architecture with a pretrained tag (or ``hf-hub:`` name),
  a local checkpoint, or random weights (``pretrained="none"``, for timing only). With the
  weights absent and no network it raises ``ModelUnavailableError`` naming the model and how to
  provide the weights.
* It uses the activation the weights were trained with: a tag whose pretrained config says
  QuickGELU (OpenAI's weights) gets ``force_quick_gelu`` even when the architecture name lacks
  ``-quickgelu`` (open_clip >= 2.29 otherwise builds GELU silently).
* Texts are encoded with exact trimming: for a causal text tower pooled at the end-of-text token,
  the output does not depend on the padding after it, so each batch is cut to its longest
  caption. Towers where that is not exact fall back to ``model.encode_text``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import pickle
import platform
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from huggingface_hub import snapshot_download
from PIL import Image

from foil_studio.analysis.model_files import file_digest, folder_digests
from foil_studio.analysis.model_spec import (  # noqa: F401  (re-exported: callers name them models.X)
    DEMO_ARCH,
    DEMO_CHECKPOINT,
    DEMO_MODEL_DIR,
    DEMO_RUN,
    PRECISIONS,
    RANDOM_WEIGHTS,
    ModelSpec,
    ModelUnavailableError,
    demo_model_spec,
    mismatched_torch_pair,
)
from foil_studio.data import hub

# The first import of torch and torchvision (through open_clip) for `foil demo`, `foil score` and the
# pages: a torchvision built for another torch fails here, said in one line (the two versions, what to do).
try:
    import open_clip
    import torch
    import torch.nn.functional as F
except (RuntimeError, ImportError, AttributeError) as error:
    mismatch = mismatched_torch_pair(error)
    if mismatch is None:
        raise
    raise ModelUnavailableError(mismatch) from error

log = logging.getLogger(__name__)

# open_clip keeps some weights (embeddings, norms) in fp32 at low precision: inputs follow the precision.
INPUT_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass
class LoadedModel:
    """A ready model with its preprocessing, tokenizer and provenance."""

    spec: ModelSpec
    model: Any
    preprocess: Any
    tokenizer: Any
    device: torch.device
    quick_gelu: bool
    weights_digest: str
    precision_reason: str = ""
    setup_digest: str = ""  # the architecture's config, the image preprocessing and the tokenizer
    exact_trimming: bool = field(init=False)

    def __post_init__(self) -> None:
        self.exact_trimming = supports_exact_trimming(self.model)

    @property
    def identity(self) -> str:
        """A key for cached embeddings: changes whenever the embeddings could."""
        parts = [self.spec.arch, self.spec.pretrained, self.weights_digest, self.spec.precision, self.quick_gelu]
        parts.append(self.setup_digest)
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]

    def stamp(self) -> dict[str, Any]:
        """What every run records about the model that produced it."""
        return {
            **asdict(self.spec),
            "activation": "quick_gelu" if self.quick_gelu else "gelu",
            "random_weights": self.spec.random_weights,
            "weights_digest": self.weights_digest,
            "setup_digest": self.setup_digest,
            "open_clip": open_clip.__version__,
            "torch": torch.__version__,
            "device": str(self.device),
            "exact_text_trimming": self.exact_trimming,
            "model_identity": self.identity,
            "precision_reason": self.precision_reason,
        }


def pick_device(device: str = "auto") -> torch.device:
    """`auto` means CUDA when available, else the CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def resolve_precision(asked: str, device: torch.device) -> tuple[str, str]:
    """The precision to run in, and why: `auto` is bf16 where the device computes bf16 natively
    (bf16 weights run about twice as fast there; emulated, several times slower), fp32 elsewhere.

    >>> resolve_precision("fp16", torch.device("cpu"))
    ('fp16', 'fp16, as asked')
    """
    if asked != "auto":
        return asked, f"{asked}, as asked"
    native, why = native_bf16(device)
    chosen = "bf16" if native else "fp32"
    return chosen, f"auto chose {chosen}: {why}"


def native_bf16(device: torch.device) -> tuple[bool, str]:
    """Whether `device` computes bf16 natively, read at run time (CPUs differ between machines)."""
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        if torch.cuda.is_bf16_supported(including_emulation=False):
            return True, f"{name} computes bf16 natively"
        return False, f"{name} does not compute bf16 natively"
    if device.type != "cpu":
        return False, f"bf16 is not assumed on {device.type}"
    features = cpu_bf16_features()
    if features:
        return True, f"this CPU ({platform.machine()}) has native bf16 ({', '.join(features)})"
    return (
        False,
        f"this CPU ({platform.machine()}) has no native bf16 (no AVX512-BF16, AMX or Arm BF16), where bf16 is emulated "
        "and slower than fp32",
    )


def cpu_bf16_features() -> list[str]:
    """The CPU's native bf16 instruction sets, as torch or the kernel reports them."""
    found = [
        name
        for name, probe in (("AVX512-BF16", "_is_avx512_bf16_supported"), ("AMX", "_is_amx_tile_supported"))
        if getattr(torch.cpu, probe, lambda: False)()
    ]
    if not found and platform.machine() in ("aarch64", "arm64"):
        try:
            flags = Path("/proc/cpuinfo").read_text().split()
        except OSError:
            flags = []
        found = ["Arm BF16"] if "bf16" in flags else []
    return found


def register_demo_config() -> None:
    """Make the demo model's architecture known to open_clip."""
    if DEMO_ARCH not in open_clip.list_models():
        open_clip.add_model_config(DEMO_MODEL_DIR / f"{DEMO_ARCH}.json")


def wants_quick_gelu(arch: str, pretrained: str | None) -> bool:
    """Whether the weights of (arch, tag) were trained with QuickGELU but the arch builds GELU."""
    if not pretrained or arch.endswith("-quickgelu") or pretrained.lower() == RANDOM_WEIGHTS:
        return False
    return bool(open_clip.get_pretrained_cfg(arch, pretrained).get("quick_gelu", False))


def load_model(spec: ModelSpec, device: str = "auto", cache_dir: str | None = None) -> LoadedModel:
    """Build the model `spec` names, with its weights, in the precision `auto` resolves to (the
    loaded spec names it); raise ModelUnavailableError if the weights are absent."""
    if spec.precision not in PRECISIONS:
        raise ValueError(f"precision {spec.precision!r}; expected one of {PRECISIONS}")
    register_demo_config()
    target = pick_device(device)
    precision, reason = resolve_precision(spec.precision, target)
    spec = replace(spec, precision=precision)
    quick_gelu = wants_quick_gelu(spec.arch, spec.pretrained)
    weights = _weights_argument(spec)
    if spec.random_weights:
        torch.manual_seed(0)  # the same random model every time, so timing runs are comparable
    unreachable = (
        not spec.checkpoint and not spec.random_weights and not hub.offline_requested() and not hub.hub_reachable()
    )
    try:
        with hub.cache_only(unreachable):
            model, _, preprocess = open_clip.create_model_and_transforms(
                spec.arch,
                pretrained=weights,
                precision=spec.precision,
                device=target,
                force_quick_gelu=quick_gelu,
                cache_dir=cache_dir,
            )
    except (RuntimeError, OSError, ValueError, KeyError, EOFError, pickle.UnpicklingError) as error:
        # a file that is no checkpoint fails in torch.load (KeyError, UnpicklingError, EOFError): one line too
        raise ModelUnavailableError(_unavailable_message(spec, error, unreachable)) from error
    model.eval()
    tokenizer = open_clip.get_tokenizer(spec.arch)
    quick = quick_gelu or _config_quick_gelu(spec.arch)
    setup, weights = setup_digest(spec.arch, preprocess, tokenizer), weights_digest(spec, cache_dir)
    return LoadedModel(spec, model, preprocess, tokenizer, target, quick, weights, reason, setup)


def weights_digest(spec: ModelSpec, cache_dir: str | None = None) -> str:
    """What names the weights: a checkpoint's contents, an hf-hub: model's cached files (its
    open_clip_config.json included; in `cache_dir` where open_clip was given one), else the
    pretrained tag (open_clip pins each tag's file)."""
    if spec.checkpoint:
        return file_digest(Path(spec.checkpoint))
    if spec.arch.startswith("hf-hub:"):
        repo = spec.arch.removeprefix("hf-hub:")
        folder = snapshot_download(repo, local_files_only=True, cache_dir=cache_dir)  # open_clip fetched it
        return folder_digests(Path(folder))[1]
    return spec.pretrained or RANDOM_WEIGHTS


def setup_digest(arch: str, preprocess: Any, tokenizer: Any) -> str:
    """SHA-256 of what else changes an embedding: the architecture's config (a local JSON registered
    with add_model_config may change), the image preprocessing (size, crop, interpolation, mean and
    standard deviation, as torchvision writes them) and the tokenizer with its context length.

    >>> len(setup_digest("ViT-B-32", None, None))
    24
    """
    parts = [open_clip.get_model_config(arch), repr(preprocess), type(tokenizer).__name__]
    parts.append(getattr(tokenizer, "context_length", None))
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:24]


def _weights_argument(spec: ModelSpec) -> str | None:
    if spec.checkpoint:
        if Path(spec.checkpoint).is_dir():
            raise ModelUnavailableError(f"checkpoint {spec.checkpoint} is a folder: {CHECKPOINT_EXPECTED}")
        if not Path(spec.checkpoint).is_file():
            raise ModelUnavailableError(f"checkpoint file {spec.checkpoint} does not exist")
        return spec.checkpoint
    if spec.random_weights or spec.arch.startswith("hf-hub:"):
        return None
    return spec.pretrained


def _config_quick_gelu(arch: str) -> bool:
    config = open_clip.get_model_config(arch)
    return bool(config and config.get("quick_gelu", False))


# What a checkpoint file must be, said where one is not (a folder, or a file torch cannot read).
CHECKPOINT_EXPECTED = "expected a weights file of the architecture (a state dict saved by torch or open_clip)"


def _unavailable_message(spec: ModelSpec, error: Exception, unreachable: bool) -> str:
    """Why the weights did not load, and how to provide them (in words the page and the CLI share)."""
    name = spec.arch + (f" / {spec.pretrained}" if spec.pretrained else "")
    reason = hub.error_line(error)
    if spec.checkpoint:  # the file is there (checked before): it is not weights open_clip can read for the arch
        said = type(error).__name__ + ("" if reason == type(error).__name__ else f": {reason.rstrip(':')}")
        return f"{spec.checkpoint} is not a checkpoint of {spec.arch} ({said}): {CHECKPOINT_EXPECTED}"
    offline = f" (the Hub at {hub.hub_endpoint()} is out of reach)" if unreachable else ""
    return (
        f"cannot load weights for {name}{offline}: {reason}. Without network access, download them on a connected "
        "machine into the Hugging Face cache (HF_HOME) and copy that folder here, or give a local checkpoint file."
    )


def create_for_training(arch: str, seed: int) -> tuple[Any, Any, Any]:
    """A freshly initialised model, its tokenizer and open_clip's contrastive loss."""
    register_demo_config()
    torch.manual_seed(seed)
    model = open_clip.create_model(arch, pretrained=None)
    return model, open_clip.get_tokenizer(arch), open_clip.loss.ClipLoss()


def image_normalization(loaded_or_model: Any) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The (mean, std) the model's preprocessing normalises images with."""
    visual = getattr(loaded_or_model, "visual", loaded_or_model)
    return tuple(visual.image_mean or open_clip.OPENAI_DATASET_MEAN), tuple(
        visual.image_std or open_clip.OPENAI_DATASET_STD
    )


# --- encoding --------------------------------------------------------------------------------


@torch.inference_mode()
def encode_images(loaded: LoadedModel, images: list[Image.Image] | torch.Tensor) -> np.ndarray:
    """L2-normalised image embeddings (float32), one row per image; `images` are PIL images or a
    batch they were already made into by `preprocess_images`."""
    pixels = images if isinstance(images, torch.Tensor) else preprocess_images(loaded, images)
    features = loaded.model.encode_image(pixels.to(loaded.device, INPUT_DTYPES[loaded.spec.precision]), normalize=True)
    return features.float().cpu().numpy()


@torch.inference_mode()
def preprocess_images(loaded: LoadedModel, images: list[Image.Image]) -> torch.Tensor:
    """The model's preprocessing of each image, stacked on the CPU in fp32 (the part of encoding
    that needs no model: `analysis.scoring` runs it on a loader thread for the next batch); moved
    to the model's device and cast to its precision by `encode_images`."""
    return torch.stack([loaded.preprocess(image) for image in images])


@torch.inference_mode()
def encode_texts(loaded: LoadedModel, texts: list[str], *, trim: bool = True) -> np.ndarray:
    """L2-normalised text embeddings (float32); trimmed to the batch's longest caption when exact."""
    tokens = loaded.tokenizer(texts).to(loaded.device)
    if trim and loaded.exact_trimming:
        features = trimmed_text_features(loaded.model, tokens)
    else:
        features = loaded.model.encode_text(tokens, normalize=True)
    return features.float().cpu().numpy()


def text_embedder(loaded: LoadedModel, batch_size: int = 256) -> Callable[[list[str]], np.ndarray]:
    """The model's text encoder alone as a sentence embedder (for text-only baselines such as
    SugarCrepe++'s TOT): captions in batches of similar length, rows in the order given."""

    def embed(texts: list[str]) -> np.ndarray:
        order = np.argsort(token_lengths(loaded, texts), kind="stable") if texts else np.array([], dtype=int)
        out = np.zeros((len(texts), 0), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            chosen = order[start : start + batch_size]
            vectors = encode_texts(loaded, [texts[i] for i in chosen])
            if out.shape[1] == 0:
                out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            out[chosen] = vectors
        return out

    return embed


def supports_exact_trimming(model: Any) -> bool:
    """Trimming is exact for open_clip's CLIP text tower: causal mask, pooled at end-of-text."""
    mask = getattr(model, "attn_mask", None)
    if not isinstance(model, open_clip.CLIP) or mask is None or getattr(model, "text_pool_type", None) != "argmax":
        return False
    upper = torch.triu(torch.ones_like(mask, dtype=torch.bool), diagonal=1)
    return bool(torch.isinf(mask[upper]).all() and (mask[~upper] == 0).all())


def trimmed_text_features(model: Any, tokens: torch.Tensor) -> torch.Tensor:
    """`model.encode_text(tokens, normalize=True)` computed on tokens cut after the last end-of-text.

    `encode_text` itself refuses shorter inputs (its mask and positions have the full context
    length), so this runs the tower's modules on the slice.
    """
    end = tokens.argmax(dim=-1)  # the end-of-text token has the highest id
    length = int(end.max()) + 1
    tokens = tokens[:, :length]
    cast = model.transformer.get_cast_dtype()
    x = model.token_embedding(tokens).to(cast) + model.positional_embedding[:length].to(cast)
    x = model.transformer(x, attn_mask=model.attn_mask[:length, :length])
    x = model.ln_final(x)
    x = x[torch.arange(x.shape[0], device=x.device), end]
    projection = model.text_projection
    x = projection(x) if isinstance(projection, torch.nn.Linear) else x @ projection
    return F.normalize(x, dim=-1)


def token_lengths(loaded: LoadedModel, texts: list[str]) -> list[int]:
    """Number of tokens of each text up to its end-of-text (to batch similar lengths together)."""
    return [int(i) + 1 for i in loaded.tokenizer(texts).argmax(dim=-1)]
