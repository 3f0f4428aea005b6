"""Photographs of the size benchmarks use (COCO: 640x480 JPEG, about 100 KB), generated, for
timing what an annotator sees: the demo's 128-pixel PNGs load too fast to tell anything.

`photo_dataset` writes `n` such images and a SugarCrepe-style pair per image, imported as a
dataset like any other; nothing large is shipped.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import sqlite_utils
from PIL import Image, ImageDraw, ImageFilter

SIZE = (640, 480)
COLOURS = ["red", "green", "blue", "yellow", "purple", "orange"]
SHAPES = ["circle", "square"]


def photo(seed: int) -> Image.Image:
    """A 640x480 picture with the texture of a photograph (smooth light, fine noise, two objects),
    so JPEG compresses it as it would a real one (about 100 KB at quality 85)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0 : SIZE[1], 0 : SIZE[0]]
    base = rng.uniform(60, 200, 3)
    light = (np.sin(x / rng.uniform(40, 120)) + np.cos(y / rng.uniform(40, 120))) * 30
    pixels = np.clip(base[None, None, :] + light[..., None] + rng.normal(0, 34, (SIZE[1], SIZE[0], 3)), 0, 255).astype(
        np.uint8
    )
    image = Image.fromarray(pixels).filter(ImageFilter.GaussianBlur(0.5))
    draw = ImageDraw.Draw(image)
    for colour, box in zip(rng.choice(COLOURS, 2, replace=False), ((80, 140, 260, 320), (380, 140, 560, 320))):
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)(box, fill=str(colour))
    return image


def photo_dataset(db: sqlite_utils.Database, folder: Path, n: int, *, name: str = "photos", seed: int = 0) -> str:
    """Write `n` photographs under `folder` and import one caption pair per image as dataset `name`."""
    from foil_studio.data.loading import import_path

    rng = random.Random(seed)
    images = folder / "images"
    images.mkdir(parents=True, exist_ok=True)
    records = []
    for index in range(n):
        left, right = rng.sample(COLOURS, 2)
        photo(seed * 100_000 + index).save(images / f"{index:05d}.jpg", quality=85)
        caption = f"a {left} object to the left of a {right} object, photo {index}"
        records.append(
            {
                "kind": "pair",
                "category": "swap_att",
                "id": str(index),
                "images": [f"{index:05d}.jpg"],
                "captions": [caption, caption.replace(left, "#").replace(right, left).replace("#", right)],
                "truth": {"negative": "false"},
            }
        )
    source = folder / f"{name}.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    import_path(db, "jsonl", source, images=images, name=name)
    return name
