"""Named subsets of a dataset's items that its source defines (VALSE's valid foils).

A subset is the items whose ``truth`` holds a flag set to true by the importer, so every place
that reads items (metrics, inspection, exports, pages) filters the same way, in the store.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlite_utils

from foil_studio.data import store


@dataclass(frozen=True)
class Subset:
    """Items whose ``truth[flag]`` is true; ``meaning`` says which, in words."""

    name: str
    flag: str
    meaning: str


SUBSETS = {
    s.name: s
    for s in (
        Subset(
            "valid",
            "valid_foil",
            "items the source's own crowd validation kept (VALSE: at least 2 of 3 annotators chose the caption)",
        ),
    )
}


def truth_flag(subset: str | None) -> str | None:
    """The truth flag of a named subset (None: every item); KeyError names the known subsets."""
    if subset is None or subset == "all":
        return None
    if subset not in SUBSETS:
        raise KeyError(f"unknown subset {subset!r}; expected all or one of {sorted(SUBSETS)}")
    return SUBSETS[subset].flag


def available_subsets(db: sqlite_utils.Database, dataset: str) -> list[str]:
    """ "all", then every named subset some item of the dataset belongs to or is judged for."""
    flags = store.truth_flags(db, store.get_dataset(db, dataset)["id"], [s.flag for s in SUBSETS.values()])
    return ["all", *(s.name for s in SUBSETS.values() if s.flag in flags)]
