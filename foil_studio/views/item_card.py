"""The one way a page draws an item: a bordered card with a heading line, the item's images
(thumbnails, or why an image is absent) and its captions under their roles, as plain text."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import streamlit as st

from foil_studio.annotate.browse import ItemCard, candidate_marks, card_thumbnails, truth_in_words


def draw_item_card(
    card: ItemCard,
    heading: str,
    thumbnails: Path,
    *,
    captions: Sequence[str] | None = None,
    lines: Sequence[str] = (),
    enlarge: Callable[[str, str, list[str]], None] | None = None,
    width: int = 150,
    show_truth: bool = False,
) -> None:
    """Draw `card` in a bordered container.

    `captions` replaces the caption texts (say, with the differing words marked); `lines` are
    further plain-text lines (human labels); `enlarge` adds an "Enlarge" button per image that
    calls it with the file, a title and the caption lines.
    """
    with st.container(border=True):
        st.text(heading)
        texts = captions if captions is not None else [caption for _, caption in card.captions]
        said = [f"{role}: {caption}" for (role, _), caption in zip(card.captions, texts)]
        images = card_thumbnails(card, thumbnails)
        marks = candidate_marks(card) if show_truth else {}
        for column, (role, path, small) in zip(st.columns(max(len(images), 1)), images):
            label = f"{role} ({marks[role]})" if role in marks else role
            if small is None:
                column.caption(f"{label}: image file {'missing' if path is None else 'unreadable'}")
                continue
            column.image(str(small), caption=label, width=width)
            if enlarge is not None and column.button("Enlarge", key=f"enlarge:{card.id}:{role}"):
                enlarge(str(path), f"#{card.id} {role}", said)
        for line in said:
            st.text(line)  # st.text: captions are shown as text, never as markup
        for line in lines:
            st.text(line)
        if show_truth:
            for line in truth_in_words(card) or ["Ground truth: not known for this item."]:
                st.text(line)
