"""Datasets: what is in the store, per category, and an item browser."""

from pathlib import Path

import pandas as pd
import plotly.express as px
import streamlit as st

from analysis import exports
from annotate import browse
from data import formats, paths, store, text
from data.formats import BadInputError
from data.images import UnsafeImagePathError
from data.loading import import_path
from views.choices import subset_choice
from views.item_card import draw_item_card
from views.session import session_db

PAGE_SIZE = 10

db_file = paths.db_path()
db = session_db()
st.title("Datasets")
table = browse.dataset_table(db)

with st.expander("Import a benchmark", expanded=table.empty):
    kind = st.selectbox("Kind", formats.IMPORT_KINDS, key="import_kind", help="the layouts of README's import table")
    st.caption(f"Reads {formats.REGISTRY[kind].layout}; for example `{formats.REGISTRY[kind].example}`")
    source = st.text_input("File or folder on this machine", key="import_path")
    images = st.text_input("Image folder (optional)", key="import_images")
    name = st.text_input("Dataset name (optional)", key="import_name").strip() or None
    if st.button("Import", key="import", type="primary", disabled=not source.strip()):
        bar = st.progress(0.0, text="reading the file")
        try:
            report = import_path(
                db, kind, Path(source.strip()).expanduser(), images=Path(images.strip()).expanduser() if images.strip() else None,
                name=name, embedded_root=paths.embedded_image_dir(db_file, name or kind),
                progress=lambda done, total: bar.progress(done / max(total, 1), text=f"checking images: {done}/{total}"),
            )
        except (BadInputError, UnsafeImagePathError, store.StoreError, OSError) as error:
            st.error(text.md(error))
        else:
            st.success(f"{text.md(report.dataset)}: {report.n_new_items} new of {report.n_items} items"
                       + (f", run {report.run}" if report.run else "") + f"; {report.missing_images} images missing.")
            if report.warnings:
                st.dataframe(pd.DataFrame(report.warnings), hide_index=True, width="stretch")
            table = browse.dataset_table(db)

if table.empty:
    st.info("No datasets yet. Build the demo with `./foil demo` or import a benchmark above (or see README).")
    st.stop()
st.dataframe(table, hide_index=True, width="stretch")

dataset = st.selectbox("Dataset", table["dataset"].tolist(), key="dataset")
categories = browse.category_table(db, dataset)
chart = px.bar(categories, x="category", y="items", title=f"{dataset}: items per category")
st.plotly_chart(text.literal_figure(chart), key="category_chart")

with st.expander("Export"):
    fmt = st.selectbox("Format", exports.FORMATS, key="export_format",
                       help="jsonl and parquet carry every run's per-instance results; sugarcrepe holds pairs, bivlc groups")
    export_subset = subset_choice(db, dataset, "export_subset")
    if st.button("Prepare the download", key="export"):
        try:
            exported, archive = exports.export_archive(db, dataset, fmt, paths.output_dir(db_file, "exports", dataset, fmt), subset=export_subset)
        except store.StoreError as error:
            st.error(text.md(error))
        else:
            st.download_button(f"{text.md(dataset)} ({fmt}, {exported['n_items']} items, zip)", archive, f"{dataset}-{fmt}.zip", key="export_zip")

st.subheader("Items")
category = st.selectbox("Category", ["all", *categories["category"].tolist()], key="category")
page = st.number_input("Page", min_value=1, value=1, step=1, key="page") - 1
cards, total = browse.item_cards(db, dataset, category=None if category == "all" else category, page=int(page), page_size=PAGE_SIZE)
st.caption(f"{total} items; showing {page * PAGE_SIZE + 1}-{page * PAGE_SIZE + len(cards)}")

for card in cards:
    draw_item_card(card, f"#{card.id}  {card.category}  {card.source_id}  ({card.kind})", paths.thumbnail_dir(db_file), width=160, show_truth=True)
