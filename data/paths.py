"""Where the store and the files it owns live."""

from __future__ import annotations

import os
from pathlib import Path


def db_path() -> Path:
    """The store file: `$FOIL_DB`, else `foil.db` in the working directory (read at call time)."""
    return Path(os.environ.get("FOIL_DB", "foil.db"))


def files_dir(db_file: str | Path) -> Path:
    """Where a store keeps files it owns: demo images, images embedded in imports, tokens."""
    path = Path(db_file)
    return path.parent / f"{path.stem}_files"


def demo_image_root(db_file: str | Path) -> Path:
    """The image root of the demo datasets of a store."""
    return files_dir(db_file) / "demo"


def thumbnail_dir(db_file: str | Path) -> Path:
    """Where the pages keep the small copies of large images they show."""
    return files_dir(db_file) / "thumbnails"


def embedded_image_dir(db_file: str | Path, dataset: str) -> Path:
    """Where images embedded in an imported file (parquet bytes) are written, per dataset."""
    return files_dir(db_file) / "embedded" / dataset
