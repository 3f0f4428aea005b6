"""Image references: keep paths inside their image root, hash and probe files."""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from PIL import Image, ImageOps, UnidentifiedImageError


class UnsafeImagePathError(ValueError):
    """A dataset named an image outside its image root."""


@dataclass(frozen=True)
class ImageInfo:
    """What the store records of one referenced image file."""

    path: str
    status: str  # "ok", "missing", "unreadable" or "too_large" (over FOIL_MAX_IMAGE_PIXELS)
    sha256: str | None = None
    size: int | None = None
    width: int | None = None
    height: int | None = None
    pixels: int | None = None  # width x height, known even where the image was refused before its size was read


def clean_relative_path(reference: str) -> str:
    """Return `reference` as a normalized relative POSIX path, or raise UnsafeImagePathError.

    >>> clean_relative_path("val2017/./000001.jpg")
    'val2017/000001.jpg'
    """
    text = reference.replace("\\", "/").strip()
    path = PurePosixPath(text)
    if not text or path.is_absolute() or ".." in path.parts or ":" in path.parts[0]:
        raise UnsafeImagePathError(f"image path {reference!r} leaves the image root")
    return str(path)


def resolve_image(root: Path, reference: str) -> Path:
    """The file `reference` names under `root`; symlinks may not lead outside the root (nor loop)."""
    root = root.resolve()
    try:
        target = (root / clean_relative_path(reference)).resolve()
    except (RuntimeError, OSError) as error:  # a symlink loop
        raise UnsafeImagePathError(f"image path {reference!r} cannot be resolved ({error})") from None
    if not target.is_relative_to(root):
        raise UnsafeImagePathError(f"image path {reference!r} leaves the image root {root}")
    return target


def probe_image(root: Path | None, reference: str) -> ImageInfo:
    """Hash and measure one image file; a missing or broken file is reported, not raised."""
    if root is None:
        return ImageInfo(reference, "missing")
    target = resolve_image(root, reference)
    if not target.is_file():
        return ImageInfo(reference, "missing")
    payload = target.read_bytes()
    limit = max_image_pixels()
    try:
        with Image.open(target) as image:
            width, height = image.size
            if width * height > limit:
                return ImageInfo(reference, "too_large", _sha256(payload), len(payload), width, height, width * height)
            image.load()
    except Image.DecompressionBombError as error:  # Pillow refuses before telling the size: take it from its message
        pixels = re.search(r"\((\d+) pixels\)", str(error))
        return ImageInfo(
            reference, "too_large", _sha256(payload), len(payload), pixels=int(pixels.group(1)) if pixels else None
        )
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
        return ImageInfo(reference, "unreadable", _sha256(payload), len(payload))
    return ImageInfo(reference, "ok", _sha256(payload), len(payload), width, height)


def max_image_pixels() -> int:
    """The largest image (width x height) Foil Studio decodes (``FOIL_MAX_IMAGE_PIXELS``);
    Pillow's own decompression-bomb check is set to the same figure."""
    from foil_studio.data.reading import limits

    Image.MAX_IMAGE_PIXELS = limits().image_pixels
    return limits().image_pixels


def _sha256(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()


THUMBNAIL_SIDE = 448


def thumbnail(path: Path, cache_dir: Path, max_side: int = THUMBNAIL_SIDE) -> Path | None:
    """A JPEG no larger than `max_side` of the image at `path`, made once and cached; None if
    the file cannot be read as an image (pages then say so instead of failing).

    Small images are returned as they are. The cache name changes with the file's size and
    modification time, so an edited image gets a fresh thumbnail. Each answer is also remembered
    in this process for that size and time: the annotator page asks for every image on every
    rerun, and a stat is all it then costs.
    """
    try:
        stat = path.stat()
    except OSError:
        return None
    made = _thumbnail_of_version(path, stat.st_size, stat.st_mtime_ns, cache_dir, max_side)
    if made is not None and made != path and not made.exists():  # the cache folder was emptied meanwhile
        _thumbnail_of_version.cache_clear()
        made = _thumbnail_of_version(path, stat.st_size, stat.st_mtime_ns, cache_dir, max_side)
    return made


@functools.lru_cache(maxsize=4096)
def _thumbnail_of_version(path: Path, size: int, mtime_ns: int, cache_dir: Path, max_side: int) -> Path | None:
    try:
        with Image.open(path) as image:
            if max(image.size) <= max_side:
                return path
            key = hashlib.sha1(f"{path.resolve()}:{size}:{mtime_ns}:{max_side}".encode()).hexdigest()
            target = cache_dir / f"{key}.jpg"
            if not target.exists():
                cache_dir.mkdir(parents=True, exist_ok=True)
                small = ImageOps.exif_transpose(image).convert("RGB")
                small.thumbnail((max_side, max_side))
                partial = target.with_name(f"{key}.{os.getpid()}.{threading.get_ident()}.part")
                small.save(partial, format="JPEG", quality=88)
                partial.replace(target)  # atomic: two sessions never show a half-written file
    except (UnidentifiedImageError, OSError, SyntaxError, Image.DecompressionBombError):
        return None
    return target


def data_uri(path: Path) -> str:
    """An image file as a `data:` URI, for a page that must have every byte before it shows anything.
    Remembered per file version: the annotator page asks for the same few images on every rerun."""
    stat = path.stat()
    return _data_uri_of_version(path, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _data_uri_of_version(path: Path, size: int, mtime_ns: int) -> str:
    subtype = {".jpg": "jpeg", ".jpeg": "jpeg", ".png": "png", ".gif": "gif", ".webp": "webp"}.get(
        path.suffix.lower(), "jpeg"
    )
    return f"data:image/{subtype};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def existing_image(root: Path | None, reference: str) -> Path | None:
    """The file an image reference names under `root`, or None if unsafe or absent."""
    if root is None:
        return None
    try:
        path = resolve_image(root, reference)
    except UnsafeImagePathError:
        return None
    return path if path.is_file() else None
