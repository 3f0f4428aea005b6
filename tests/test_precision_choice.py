"""The precision and device every family runs in: `auto` is bf16 where the device computes bf16
natively and fp32 elsewhere, read from the machine at run time (never assumed), the weights cast
to it and the inputs cast with them; fp16 when asked. The CUDA path is exercised on a machine
without a GPU by making `torch.cuda` report one: the device and precision chosen, the weights'
dtype and the device the model is handed to are checked; no kernel runs on a GPU here.

`tests/test_parity.py::test_auto_runs_bf16_only_where_the_cpu_computes_it_natively` holds
`resolve_precision`'s CPU answers and reasons; this file holds what each family does with them.
"""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np
import open_clip
import pytest
import torch
from PIL import Image

from foil_studio.analysis import models
from foil_studio.analysis.models import ModelSpec, load_model
from foil_studio.analysis.scorers import base, scorer_family
from foil_studio.analysis.scorers.pairwise import load_family
from tests.test_scorer_families import CAPTIONS, FAMILIES

CROSS_ENCODERS = sorted(FAMILIES)  # every family that scores pairs and has a test kit
EVERY_FAMILY = ["open_clip", *CROSS_ENCODERS]
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    """Every cross-encoder family's tiny random model, saved as a user's local copy is."""
    return {name: FAMILIES[name].kit().tiny_model(tmp_path_factory.mktemp(name)) for name in CROSS_ENCODERS}


def cpu_flags() -> set[str]:
    """The CPU's feature flags as the kernel lists them (empty where there is no /proc/cpuinfo)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    return {flag for line in text.splitlines() if line.startswith(("flags", "Features")) for flag in line.split()}


def load_any(family: str, folders: dict[str, Path], precision: str, device: str = "cpu"):
    """(loaded model, the precision it runs in, its device, the weights that take the inputs)."""
    if family == "open_clip":
        loaded = load_model(ModelSpec(models.DEMO_ARCH, "none", precision=precision), device=device)
        return loaded, loaded.spec.precision, loaded.device, loaded.model.visual
    loaded = load_family(scorer_family(family), str(folders[family]), precision, device)
    return loaded, loaded.precision, loaded.device, loaded.scorer.image_encoder()


def weight_dtypes(module: torch.nn.Module) -> set[torch.dtype]:
    """The dtypes of the module's matmul weights (open_clip keeps embeddings and norms in fp32 at
    low precision; what runs the matmuls is what the precision names)."""
    return {m.weight.dtype for m in module.modules() if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d))}


def input_dtypes(module: torch.nn.Module, run) -> list[torch.dtype]:
    """The dtypes of the floating tensors `module` was called with while `run()` ran."""
    seen: list[torch.dtype] = []

    def hook(_module, args, kwargs):
        tensors = [*args, *kwargs.values()]
        seen.extend(t.dtype for t in tensors if isinstance(t, torch.Tensor) and t.is_floating_point())

    handle = module.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        run()
    finally:
        handle.remove()
    return seen


def scores_of(family: str, loaded) -> np.ndarray:
    """Two images against two captions through the family's own path (as `foil score` runs it)."""
    rng = np.random.default_rng(3)
    images = [Image.fromarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)) for _ in range(2)]
    if family == "open_clip":
        return models.encode_images(loaded, images) @ models.encode_texts(loaded, CAPTIONS[:2]).T
    scorer = loaded.scorer
    states, texts = scorer.prepare_images(images), scorer.prepare_texts(CAPTIONS[:2])
    return np.array(scorer.score_pairs([states[0], states[0], states[1]], [texts[0], texts[1], texts[1]]))


def test_this_cpus_native_bf16_is_read_from_the_cpu_not_assumed():
    flags = cpu_flags()
    if not flags:
        pytest.skip("no /proc/cpuinfo to read the CPU's flags from")
    if platform.machine() in ("aarch64", "arm64"):
        native = "bf16" in flags
    else:
        native = bool({"avx512_bf16", "amx_bf16"} & flags)
    assert bool(models.cpu_bf16_features()) == native, (models.cpu_bf16_features(), sorted(flags & {"avx512_bf16"}))
    assert models.resolve_precision("auto", torch.device("cpu"))[0] == ("bf16" if native else "fp32")
    assert models.pick_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.parametrize("features", ["this CPU", "none", "AVX512-BF16"])
@pytest.mark.parametrize("family", EVERY_FAMILY)
def test_auto_runs_every_family_in_bf16_only_where_the_cpu_computes_it(family, features, folders, monkeypatch):
    if features != "this CPU":
        monkeypatch.setattr(models, "cpu_bf16_features", lambda: [] if features == "none" else [features])
    expected = "bf16" if models.cpu_bf16_features() else "fp32"
    loaded, precision, device, vision = load_any(family, folders, "auto")
    assert (precision, device.type) == (expected, "cpu")
    assert weight_dtypes(vision) == {DTYPES[expected]}  # the weights are cast, not autocast per call
    assert loaded.precision_reason.startswith(f"auto chose {expected}")
    scores: list[np.ndarray] = []
    seen = input_dtypes(vision, lambda: scores.append(scores_of(family, loaded)))
    assert seen and set(seen) == {DTYPES[expected]}  # the pixels are cast to the weights' precision
    assert np.isfinite(scores[0]).all() and np.ptp(scores[0]) > 0


@pytest.mark.parametrize("family", EVERY_FAMILY)
def test_fp16_asked_is_what_every_family_runs_in(family, folders):
    loaded, precision, _, vision = load_any(family, folders, "fp16")
    assert precision == "fp16" and loaded.precision_reason == "fp16, as asked"
    assert weight_dtypes(vision) == {torch.float16}
    scores: list[np.ndarray] = []
    seen = input_dtypes(vision, lambda: scores.append(scores_of(family, loaded)))
    assert seen and set(seen) == {torch.float16}
    assert np.isfinite(scores[0]).all()


@pytest.fixture
def fake_gpu(monkeypatch):
    """`torch.cuda` reporting one GPU (bf16-capable as `set` says); the device each model is handed
    to is recorded, and the model left on the CPU (this machine has no GPU to put it on)."""
    state = {"bf16": True, "handed_to": []}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Fake GPU")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: state["bf16"])

    def place(model, device):
        state["handed_to"].append(torch.device(device))

    monkeypatch.setattr(base, "place", place)  # every family hands its model over through `base.place`
    create = open_clip.create_model_and_transforms

    def create_on_cpu(*args, device=None, **kwargs):
        state["handed_to"].append(torch.device(device))
        return create(*args, device="cpu", **kwargs)

    monkeypatch.setattr(models.open_clip, "create_model_and_transforms", create_on_cpu)
    return state


@pytest.mark.parametrize("gpu_bf16", [True, False], ids=["bf16-gpu", "no-bf16-gpu"])
@pytest.mark.parametrize("family", EVERY_FAMILY)
def test_on_a_gpu_auto_picks_cuda_and_bf16_where_the_gpu_computes_it(family, gpu_bf16, folders, fake_gpu, monkeypatch):
    fake_gpu["bf16"] = gpu_bf16
    monkeypatch.setattr(models, "cpu_bf16_features", lambda: ["AVX512-BF16"])  # the CPU's answer must not leak in
    expected = "bf16" if gpu_bf16 else "fp32"
    loaded, precision, device, vision = load_any(family, folders, "auto", device="auto")
    assert device == torch.device("cuda") and fake_gpu["handed_to"] == [torch.device("cuda")]
    assert precision == expected and weight_dtypes(vision) == {DTYPES[expected]}
    why = "Fake GPU computes bf16 natively" if gpu_bf16 else "Fake GPU does not compute bf16 natively"
    assert loaded.precision_reason == f"auto chose {expected}: {why}"
    assert loaded.stamp()["device"] == "cuda"
    if family != "open_clip":
        assert loaded.scorer.device == torch.device("cuda")  # where the scorer sends its inputs
        assert loaded.run_name.endswith("-bf16") == gpu_bf16


@pytest.mark.parametrize("family", EVERY_FAMILY)
def test_on_a_gpu_a_precision_asked_for_is_kept(family, folders, fake_gpu):
    _, precision, device, vision = load_any(family, folders, "fp16", device="auto")
    assert device.type == "cuda" and precision == "fp16" and weight_dtypes(vision) == {torch.float16}
