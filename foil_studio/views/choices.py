"""Choices several pages offer the same way."""

from __future__ import annotations

import sqlite_utils
import streamlit as st

from foil_studio.data import subsets


def subset_choice(db: sqlite_utils.Database, dataset: str, key: str) -> str | None:
    """A choice between every item and the subsets the dataset's source defines (shown only when
    it has one); None means every item."""
    offered = subsets.available_subsets(db, dataset)
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
