"""Datasets: what is in the store, per category, and an item browser."""

import plotly.express as px
import streamlit as st

from annotate import store
from data import browse, exporters, paths
from data.images import thumbnail

PAGE_SIZE = 10

db_file = paths.db_path()
db = store.open_db(db_file)
st.title("Datasets")
table = browse.dataset_table(db)
if table.empty:
    st.info("No datasets yet. Build the demo with `python cli.py demo` or import a benchmark (see README).")
    st.stop()
st.dataframe(table, hide_index=True, width="stretch")

dataset = st.selectbox("Dataset", table["dataset"].tolist(), key="dataset")
categories = browse.category_table(db, dataset)
chart = px.bar(categories, x="category", y="items", title=f"{dataset}: items per category")
st.plotly_chart(chart, key="category_chart")

with st.expander("Export"):
    fmt = st.selectbox("Format", exporters.FORMATS, key="export_format",
                       help="jsonl and parquet carry every run's per-instance results; sugarcrepe holds pairs, bivlc groups")
    if st.button("Prepare the download", key="export"):
        try:
            exported, archive = exporters.export_archive(db, dataset, fmt, paths.files_dir(db_file) / "exports" / dataset / fmt)
        except store.StoreError as error:
            st.error(str(error))
        else:
            st.download_button(f"{dataset} ({fmt}, {exported['n_items']} items, zip)", archive, f"{dataset}-{fmt}.zip", key="export_zip")

st.subheader("Items")
category = st.selectbox("Category", ["all", *categories["category"].tolist()], key="category")
page = st.number_input("Page", min_value=1, value=1, step=1, key="page") - 1
cards, total = browse.item_cards(db, dataset, category=None if category == "all" else category, page=int(page), page_size=PAGE_SIZE)
st.caption(f"{total} items; showing {page * PAGE_SIZE + 1}-{page * PAGE_SIZE + len(cards)}")

for card in cards:
    with st.container(border=True):
        st.text(f"#{card.id}  {card.category}  {card.source_id}  ({card.kind})")
        if card.images:
            columns = st.columns(len(card.images))
            for column, (role, path) in zip(columns, card.images):
                if path is None:
                    column.caption(f"{role}: image file missing")
                else:
                    column.image(str(thumbnail(path, paths.thumbnail_dir(db_file))), caption=role, width=160)
        for role, caption in card.captions:
            st.text(f"{role}: {caption}")  # st.text: captions are shown as text, never as markup
        if card.truth:
            st.json(card.truth, expanded=False)
