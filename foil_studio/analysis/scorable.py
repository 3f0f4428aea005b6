"""Which of a dataset's items can be scored (every image file they name was found), said before a
model loads: without torch, so that a page can say it at once."""

from __future__ import annotations

from dataclasses import dataclass

import sqlite_utils

from foil_studio.data import store


class NothingToScoreError(store.StoreError):
    """A dataset none of whose (first `limit`) items has every image file it names."""


@dataclass(frozen=True)
class Scorable:
    """How many of a dataset's items can be scored: those whose every image file was found."""

    dataset: str
    n_items: int
    n_scorable: int

    @property
    def n_skipped(self) -> int:
        """Items left out for a missing or unreadable image file."""
        return self.n_items - self.n_scorable

    def skipped_sentence(self) -> str:
        """What is left out, said before scoring ("" when nothing is)."""
        if not self.n_skipped:
            return ""
        return (
            f"{self.n_skipped:,} of the {self.n_items:,} items of {self.dataset} lack an image file and will be "
            f"skipped; {self.n_scorable:,} will be scored."
        )


ATTACH_HINT = (
    'attach its image folder (Datasets page: "Attach an image folder"; or import the benchmark again with '
    "--images DIR), then score again"
)


def scorable(db: sqlite_utils.Database, dataset: str, *, limit: int | None = None) -> Scorable:
    """How many of the dataset's (first `limit`) items have every image file they name, counted by
    the store without decoding an item."""
    dataset_id = store.get_dataset(db, dataset)["id"]
    held = store.count_items(db, dataset_id)
    n_items = held if limit is None else min(held, limit)
    return Scorable(dataset, n_items, store.scorable_count(db, dataset_id, limit=limit))


def require_scorable(db: sqlite_utils.Database, dataset: str, *, limit: int | None = None) -> Scorable:
    """`scorable`, refused by `refuse_nothing` when no item can be scored."""
    return refuse_nothing(scorable(db, dataset, limit=limit))


def refuse_nothing(found: Scorable) -> Scorable:
    """`found`, or NothingToScoreError (what is missing, how to attach it) where no item can be
    scored: no run is made of nothing, and no model loaded for it."""
    if found.n_items == 0:
        raise NothingToScoreError(f"{found.dataset} has no items to score")
    if found.n_scorable == 0:
        raise NothingToScoreError(
            f"none of the {found.n_items:,} items of {found.dataset} has its image files, so nothing can be "
            f"scored: {ATTACH_HINT}"
        )
    return found
