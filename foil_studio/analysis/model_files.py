"""Digests of a model's files, which key its cached scores and embeddings: a cached value is reused
only by a model whose every file that can change it is the same."""

from __future__ import annotations

import hashlib
from pathlib import Path

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


def folder_digests(folder: Path) -> tuple[str, str]:
    """(weights digest, files digest): SHA-256 over the folder's weight files, and over every file
    that can change a score (weights, configuration, processor, tokenizer, chat template: all but
    documentation and hidden bookkeeping folders), names and contents in name order; one pass."""
    weights, files = hashlib.sha256(), hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and can_change_scores(p.relative_to(folder))):
        name = path.relative_to(folder).as_posix().encode()
        is_weights = path.name.endswith(WEIGHT_SUFFIXES)
        files.update(name)
        if is_weights:
            weights.update(name)
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                files.update(block)
                if is_weights:
                    weights.update(block)
    return weights.hexdigest()[:24], files.hexdigest()[:24]


def can_change_scores(relative: Path) -> bool:
    """False for a model card, a licence, git's attributes and files in hidden folders (the Hub's
    and git's bookkeeping); True for every other file of a model folder.

    >>> [can_change_scores(Path(p)) for p in ("vocab.txt", "README.md", ".cache/huggingface/x.lock", "LICENSE")]
    [True, False, False, False]
    """
    hidden = any(part.startswith(".") for part in relative.parts[:-1])
    prose = relative.suffix.lower() == ".md" or relative.name.upper().startswith(("LICENSE", "NOTICE"))
    return not (hidden or prose or relative.name == ".gitattributes")


def file_digest(path: Path) -> str:
    """SHA-256 of one file's contents (a checkpoint)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:24]
