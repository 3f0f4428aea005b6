"""Choices several pages offer the same way."""

from __future__ import annotations

import sqlite_utils
import streamlit as st

from foil_studio.data import paths, store, subsets


@st.cache_data(max_entries=32, show_spinner=False)
def offered_subsets(_db: sqlite_utils.Database, db_path: str, dataset: str, fingerprint: str) -> list[str]:
    """The dataset's subsets, looked for again only when its items change (the fingerprint): looking
    scans every item's truth, a second at a million items, on every render."""
    return subsets.available_subsets(_db, dataset)


def subset_choice(db: sqlite_utils.Database, dataset: str, key: str) -> str | None:
    """A choice between every item and the subsets the dataset's source defines (shown only when
    it has one); None means every item."""
    offered = offered_subsets(db, str(paths.db_path()), dataset, store.dataset_fingerprint(db, dataset))
    if len(offered) < 2:
        return None
    chosen = st.radio(
        "Items",
        offered,
        horizontal=True,
        key=f"{key}:{dataset}",
        help="; ".join(f"{s.name}: {s.meaning}" for s in subsets.SUBSETS.values() if s.name in offered),
    )
    return None if chosen == "all" else chosen
