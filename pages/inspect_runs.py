"""Inspect runs: score-gap histograms, model against model, and the failure browser."""

import pandas as pd
import plotly.express as px
import streamlit as st

from analysis import inspection
from annotate import batches, store
from data import browse, paths

PAGE_SIZE = 10


@st.cache_data(max_entries=16, show_spinner=False)
def item_table(db_path: str, dataset: str, run: str, fingerprint: str) -> pd.DataFrame:
    return inspection.item_table(store.open_db(db_path), dataset, run)


@st.cache_data(max_entries=16, show_spinner=False)
def compare_runs(db_path: str, dataset: str, run_a: str, run_b: str, fingerprint: str) -> pd.DataFrame:
    return inspection.compare_runs(store.open_db(db_path), dataset, run_a, run_b)

db = store.open_db(paths.db_path())
st.title("Inspect runs")
with_runs = [d["name"] for d in store.list_datasets(db) if store.list_runs(db, d["name"])]
if not with_runs:
    st.info("No runs yet.")
    st.stop()
dataset = st.selectbox("Dataset", with_runs, key="inspect_dataset")
runs = [r["run"] for r in store.list_runs(db, dataset)]
left, right = st.columns(2)
run_a = left.selectbox("Run A", runs, key=f"run_a:{dataset}")
run_b = right.selectbox("Run B (optional)", ["(none)", *[r for r in runs if r != run_a]], key=f"run_b:{dataset}")
run_b = None if run_b == "(none)" else run_b

db_path, fingerprint = str(paths.db_path()), store.dataset_fingerprint(db, dataset)
table_a = item_table(db_path, dataset, run_a, fingerprint)
table_b = item_table(db_path, dataset, run_b, fingerprint) if run_b else None
gap_columns = [c for c in table_a.columns if c not in ("item", "category", "correct")]
st.subheader("Score gaps")
if not gap_columns:
    st.info(f"{run_a} holds imported decisions, not scores: no gaps to plot.")
else:
    gap = st.selectbox("Gap", gap_columns, key=f"gap:{dataset}")
    frames = [table_a.assign(run=run_a)]
    if table_b is not None and gap in table_b.columns:
        frames.append(table_b.assign(run=run_b))
    both = pd.concat(frames)
    figure = px.histogram(both, x=gap, color="run", facet_col="category", facet_col_wrap=4, barmode="overlay", nbins=40, height=600)
    figure.add_vline(x=0, line_dash="dash")
    st.plotly_chart(figure, key="gap_hist")
    shares = both.groupby(["run", "category"])[gap].apply(inspection.share_below_zero).rename("% at or below zero").reset_index()
    st.dataframe(shares, hide_index=True, width="stretch")
    low, high = st.slider("List the items with a gap in", float(both[gap].min()), float(both[gap].max()),
                          (float(both[gap].min()), 0.0), key=f"gap_range:{dataset}")
    st.dataframe(table_a[(table_a[gap] >= low) & (table_a[gap] <= high)].sort_values(gap), hide_index=True, width="stretch")

if run_b:
    st.subheader(f"{run_a} against {run_b}")
    st.dataframe(compare_runs(db_path, dataset, run_a, run_b, fingerprint), hide_index=True, width="stretch")

st.subheader("Failures")
patterns = inspection.PATTERNS if run_b else inspection.PATTERNS[:1]
pattern = st.selectbox("Pattern (A and B as chosen above)", patterns, key="pattern")
categories = ["all", *sorted(table_a["category"].unique())]
category = st.selectbox("Category", categories, key=f"fail_category:{dataset}")
page = st.number_input("Page", min_value=1, value=1, key="fail_page") - 1
in_category = None if category == "all" else category
chosen, total = inspection.failures(table_a, table_b, pattern=pattern, category=in_category, page=int(page), page_size=PAGE_SIZE)
st.caption(f"{total} items, worst margin first")
cards = {card.id: card for card in browse.cards_for(db, dataset, chosen["item"].tolist())}
for row in chosen.to_dict("records"):
    card = cards[row["item"]]
    with st.container(border=True):
        st.text(f"#{card.id}  {card.category}  {card.source_id}  " + ", ".join(f"{c} {row[c]:.3f}" for c in gap_columns))
        images = [(label, path) for label, path in card.images if path is not None]
        for column, (label, path) in zip(st.columns(max(len(images), 1)), images):
            column.image(str(path), caption=label, width=140)
        texts = [text for _, text in card.captions]
        marked = list(inspection.marked_difference(texts[0], texts[1])) + texts[2:] if len(texts) >= 2 else texts
        for (role, _), text in zip(card.captions, marked):
            st.text(f"{role}: {text}")  # differing words in [brackets]; plain text, never markup
if total and st.button(f"Send these {total} items to a validate_negative batch", key="send_to_annotation"):
    everyone = tuple(a["name"] for a in store.list_annotators(db))
    all_ids = inspection.failures(table_a, table_b, pattern=pattern, category=in_category, page_size=total)[0]["item"]
    try:
        created = batches.create_batch(db, batches.BatchSpec(dataset, "validate_negative", everyone, min(2, len(everyone)), item_ids=tuple(int(i) for i in all_ids)))
    except store.StoreError as error:
        st.error(str(error))
    else:
        st.success(f"Created {created['batch']} with {created['n_items']} items.")
