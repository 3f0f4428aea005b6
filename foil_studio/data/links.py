"""Items of two datasets that are the same test: the same image, caption and negative.

SugarCrepe++ adds a second positive to SugarCrepe items (and rewrote some captions on the way,
e.g. "a man" -> "a person"); when both are in one store, the items whose image, caption and
negative still agree are linked, so a run on one can be compared item by item with a run on the
other. Captions are compared by their words (case, spacing and punctuation aside).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

import sqlite_utils

from foil_studio.data import store

LinkKey = tuple[str, str, str]


def link_key(item: store.ItemRow) -> LinkKey | None:
    """What two linked items share: image file name, caption and negative, by their words.

    >>> link_key({"images": ["val2017/0001.jpg"], "captions": ["A cat, on a mat.", "A mat on a cat", "x"]})
    ('0001.jpg', 'a cat on a mat', 'a mat on a cat')
    """
    if not item["images"] or len(item["captions"]) < 2:
        return None
    image = PurePosixPath(item["images"][0]).name
    return (image, _words(item["captions"][0]), _words(item["captions"][1]))


def _words(caption: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", caption.lower()))


def linked_items(db: sqlite_utils.Database, dataset: str, other: str) -> dict[int, int]:
    """Item id in `other` -> the id of the same test in `dataset` (items without a match left out)."""
    mine: dict[LinkKey, int] = {}
    for item in store.list_items(db, store.get_dataset(db, dataset)["id"], limit=1 << 62):
        key = link_key(item)
        if key is not None:
            mine.setdefault(key, item["id"])
    links = {}
    for item in store.list_items(db, store.get_dataset(db, other)["id"], limit=1 << 62):
        key = link_key(item)
        if key in mine:
            links[item["id"]] = mine[key]
    return links
