"""Train the small CLIP that ships with the demo, on scenes of the synthetic world.

    python -m foil_studio.analysis.train_demo_model   # writes foil_studio/analysis/demo_model/foil-demo-clip.pt

Seeded and deterministic on one machine (CPU). Training scenes come from their own seed, so the
demo datasets the model is evaluated on are unseen. Plain contrastive CLIP training with
open_clip's loss on (image, true caption) pairs: no hard negatives, nothing tuned to the
benchmark categories, so whatever the model learns or fails to learn is honest.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from foil_studio.analysis.models import DEMO_ARCH, DEMO_CHECKPOINT, create_for_training, image_normalization
from foil_studio.data import demo_world as w

log = logging.getLogger(__name__)

CHECKPOINT = DEMO_CHECKPOINT
TRAINING_SEED = "foil-demo-training"


@dataclass(frozen=True)
class TrainConfig:
    """Size of the training run; the defaults produce the shipped checkpoint."""

    n_images: int = 40_000
    epochs: int = 6
    batch_size: int = 256
    learning_rate: float = 1e-3
    weight_decay: float = 0.1
    warmup_steps: int = 100
    seed: int = 0
    image_size: int = 64


def training_scenes(n: int, seed: int) -> list[w.Scene]:
    """Random scenes of 2-3 objects, from a seed the demo datasets do not use."""
    rng = random.Random(f"{TRAINING_SEED}:{seed}")
    return [w.random_scene(rng, rng.choice((2, 3))) for _ in range(n)]


def render_images(scenes: list[w.Scene], size: int) -> torch.Tensor:
    """All scenes drawn as a uint8 tensor (N, 3, size, size)."""
    pixels = np.empty((len(scenes), size, size, 3), dtype=np.uint8)
    for i, scene in enumerate(scenes):
        pixels[i] = np.asarray(w.draw(scene).resize((size, size), Image.Resampling.BICUBIC))
    return torch.from_numpy(pixels).permute(0, 3, 1, 2).contiguous()


def true_caption(scene: w.Scene, rng: random.Random) -> str:
    """A random true description of the scene: objects with or without attributes, maybe a relation."""
    pair = rng.sample(scene, 2)
    descs = tuple(w.Desc(t.shape, rng.choice([t.colour, t.colour, None]), rng.choice([t.size, None])) for t in pair)
    relations = [r for r in w.RELATIONS if w.relation_verdict(pair[0], r, pair[1]) == "true"]
    if relations and rng.random() < 0.5:
        return w.render(w.Claim(descs, (0, rng.choice(relations), 1)), rng.randrange(3), rng.random() < 0.2)
    if len(scene) == 3 and rng.random() < 0.3:
        descs = tuple(w.Desc(t.shape, t.colour) for t in rng.sample(scene, 3))
    return w.render(w.Claim(descs), rng.randrange(3), rng.random() < 0.2)


def train(
    config: TrainConfig = TrainConfig(), out: Path = CHECKPOINT, max_steps: int | None = None
) -> dict[str, float]:
    """Train, save the weights in fp16 with a checksum, return the final loss and timings."""
    torch.manual_seed(config.seed)
    started = time.perf_counter()
    scenes = training_scenes(config.n_images, config.seed)
    images = render_images(scenes, config.image_size)
    model, tokenizer, loss_fn = create_for_training(DEMO_ARCH, config.seed)
    mean, std = (torch.tensor(v).view(1, 3, 1, 1) for v in image_normalization(model))
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)
    steps_per_epoch = len(scenes) // config.batch_size
    total = min(max_steps or 1 << 62, steps_per_epoch * config.epochs)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / config.warmup_steps) * 0.5 * (1 + np.cos(np.pi * s / total))
    )
    rng = random.Random(config.seed)
    model.train()
    loss = torch.tensor(0.0)
    for step in range(total):
        if step % steps_per_epoch == 0:
            order = torch.randperm(len(scenes)).tolist()
        index = order[(step % steps_per_epoch) * config.batch_size :][: config.batch_size]
        batch = (images[index].float() / 255 - mean) / std
        texts = tokenizer([true_caption(scenes[i], rng) for i in index])
        image_features, text_features, logit_scale = model(batch, texts)
        loss = loss_fn(image_features, text_features, logit_scale)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        with torch.no_grad():
            model.logit_scale.clamp_(0, np.log(100))
        if step % 50 == 0 or step == total - 1:
            print(
                f"step {step + 1}/{total} loss {loss.item():.3f} ({time.perf_counter() - started:.0f}s)",
                file=sys.stderr,
            )
    save_checkpoint(model, out)
    return {"loss": float(loss.item()), "steps": total, "seconds": time.perf_counter() - started}


def save_checkpoint(model: torch.nn.Module, out: Path) -> str:
    """Write the state dict in fp16 and its sha256 beside it; return the digest."""
    out.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.half() if v.is_floating_point() else v for k, v in model.state_dict().items()}
    torch.save(state, out)
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    out.with_suffix(".sha256").write_text(f"{digest}  {out.name}\n")
    return digest


def verify_checkpoint(path: Path = CHECKPOINT) -> bool:
    """Whether the shipped checkpoint matches its recorded checksum."""
    recorded = path.with_suffix(".sha256").read_text().split()[0]
    return hashlib.sha256(path.read_bytes()).hexdigest() == recorded


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: train with the default config (or fewer steps for a smoke test)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=CHECKPOINT)
    parser.add_argument("--images", type=int, default=TrainConfig.n_images)
    parser.add_argument("--epochs", type=int, default=TrainConfig.epochs)
    parser.add_argument("--max-steps", type=int)
    args = parser.parse_args(argv)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    result = train(TrainConfig(n_images=args.images, epochs=args.epochs), args.out, args.max_steps)
    print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
