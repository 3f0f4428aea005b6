"""Datasets: what is in the store, per category, and an item browser."""

from pathlib import Path

import pandas as pd
import plotly.express as px
import streamlit as st

from foil_studio.analysis import exports
from foil_studio.annotate import browse
from foil_studio.annotate.export import TRAINING_FORMATS, training_archive
from foil_studio.data import formats, paths, store
from foil_studio.data.formats import BadInputError
from foil_studio.data.images import UnsafeImagePathError
from foil_studio.data.loading import attach_images, import_path
from foil_studio.views import registry, text
from foil_studio.views.choices import subset_choice
from foil_studio.views.item_card import draw_item_card
from foil_studio.views.session import session_db

PAGE_SIZE = 10
GRID_PAGE_SIZE = 24


@st.cache_data(max_entries=32, show_spinner=False)
def category_table(_db, db_path: str, dataset: str, fingerprint: str) -> pd.DataFrame:
    """Items per category, counted again only when the dataset's items change (the fingerprint)."""
    return browse.category_table(_db, dataset)


def failed(bar, headline: str, error: Exception) -> None:
    """A failed import or attach: no half-full bar left, the error as exact copyable text (a path in it works)."""
    bar.empty()
    st.error(headline)
    st.code(str(error), language=None, wrap_lines=True)


db_file = paths.db_path()
db = session_db()
st.title("Datasets")
st.caption(
    "Foil Studio keeps benchmarks, model runs, annotation batches and hackability audits in one store. "
    "Start here: browse a dataset's items below; then **Model scores** for how models do, **Annotation batches** "
    "to have people check the negatives, **Hackability audit** for what captions alone give away, **Benchmark "
    "health** for how many negatives are wrong and the leaderboard without them (README.md has the rest)."
)
table = browse.dataset_table(db)

with st.expander("Import a benchmark", expanded=table.empty):
    source_format = st.selectbox(
        "Format",
        formats.IMPORT_FORMATS,
        index=None,
        key="import_format",
        placeholder="choose the benchmark's layout",
        help="the layouts of the import table in docs/formats.md",
    )
    if source_format:
        chosen = formats.REGISTRY[source_format]
        st.caption(f"Reads {chosen.layout}; for example `{chosen.example}`")
    source = st.text_input("File or folder on this machine", key="import_path")
    st.caption(text.md(f"A relative path is read from {Path.cwd()}, the folder the app was started in."))
    images = st.text_input("Image folder (optional)", key="import_images")
    name = st.text_input("Dataset name (optional)", key="import_name").strip() or None
    if st.button("Import", key="import", type="primary", disabled=not (source_format and source.strip())):
        bar = st.progress(0.0, text="reading the file")
        try:
            report = import_path(
                db,
                source_format,
                Path(source.strip()).expanduser(),
                images=Path(images.strip()).expanduser() if images.strip() else None,
                name=name,
                embedded_root=paths.embedded_image_dir(db_file, name or source_format),
                progress=lambda done, total: bar.progress(
                    done / max(total, 1), text=f"checking images: {done}/{total}"
                ),
            )
        except (BadInputError, UnsafeImagePathError, store.StoreError, OSError) as error:
            failed(bar, "Nothing was imported:", error)
        else:
            bar.empty()
            st.success(
                f"{text.md(report.dataset)}: {report.n_new_items} new of {report.n_items} items"
                + (f", run {report.run}" if report.run else "")
                + (f", runs {', '.join(text.md(run) for run in report.runs)}" if report.runs else "")
                + f"; {report.missing_images} images missing. It is shown below."
            )
            if report.warnings:
                st.dataframe(pd.DataFrame(report.warnings), hide_index=True, width="stretch")
            table = browse.dataset_table(db)
            st.session_state["dataset"] = report.dataset  # the selector below opens on the new dataset

if table.empty:
    st.info("No datasets yet. Build the demo with `./foil demo` or import a benchmark above (or see README).")
    st.stop()
st.dataframe(table, hide_index=True, width="stretch")

BOX = registry.page("views/datasets.py").box
dataset = st.selectbox("Dataset", browse.datasets_holding(db, BOX.item_kinds), key=BOX.key)
images_of = table.set_index("dataset").loc[dataset]
if images_of["images missing"] or images_of["images found"] is None:
    with st.expander("Attach an image folder", expanded=bool(images_of["images missing"])):
        st.caption(
            "The dataset's last import is read again with this folder as its image root: no item is added twice, "
            "and every image is checked anew."
        )
        folder = st.text_input("Image folder on this machine", key=f"attach_folder:{dataset}")
        if st.button("Attach", key="attach_images", disabled=not folder.strip()):
            bar = st.progress(0.0, text="checking images")
            try:
                report = attach_images(
                    db,
                    dataset,
                    Path(folder.strip()).expanduser(),
                    progress=lambda done, total: bar.progress(
                        done / max(total, 1), text=f"checking images: {done}/{total}"
                    ),
                )
            except (BadInputError, UnsafeImagePathError, store.StoreError, OSError) as error:
                failed(bar, "No image folder was attached:", error)
            else:
                bar.empty()
                st.success(f"{text.md(dataset)}: {report.missing_images} images still missing.")
                st.rerun()
fingerprint = store.dataset_fingerprint(db, dataset)
categories = category_table(db, str(db_file), dataset, fingerprint)
chart = px.bar(categories, x="category", y="items", title=f"{dataset}: items per category")
chart = text.whole_number_ticks(chart, categories["items"].max())
st.plotly_chart(text.literal_figure(chart), key="category_chart")

with st.expander("Export"):
    fmt = st.selectbox(
        "Format",
        [*exports.FORMATS, *TRAINING_FORMATS],
        key="export_format",
        help="jsonl and parquet carry every run's per-instance results; sugarcrepe holds pairs, bivlc groups; "
        "negclip-csv is NegCLIP's training table of the items whose negatives validate_negative batches validated",
    )
    training = fmt in TRAINING_FORMATS  # the validated items, with absolute image paths: no subset, no copies
    export_subset = None if training else subset_choice(db, dataset, "export_subset")
    files, size = (0, 0) if training else exports.image_totals(db, dataset, subset=export_subset)
    with_images = st.checkbox(
        f"Include the images ({files:,} files, {size / 1e6:,.1f} MB) so the zip imports elsewhere (--images images)",
        key="export_images",
        disabled=not files,
    )
    if st.button("Prepare the download", key="export"):
        folder = paths.output_dir(db_file, "exports", dataset, fmt)
        try:
            if training:
                exported, archive = training_archive(db, dataset, fmt, folder)
            else:
                exported, archive = exports.export_archive(
                    db, dataset, fmt, folder, subset=export_subset, with_images=with_images
                )
        except store.StoreError as error:
            st.error(text.md(error))
        else:
            rows = f"{exported['n_rows']} rows" if training else f"{exported['n_items']} items"
            st.download_button(
                f"{text.md(dataset)} ({fmt}, {rows}, zip)",
                archive,
                f"{dataset}-{fmt}.zip",
                key="export_zip",
            )

st.subheader("Items")
left, middle, right = st.columns([2, 1, 1])
category = left.selectbox("Category", ["all", *categories["category"].tolist()], key="category")
layout = middle.radio(
    "Show", ["list", "grid"], horizontal=True, key="items_layout", help="grid: thumbnails, four per row"
)
page_size = GRID_PAGE_SIZE if layout == "grid" else PAGE_SIZE
page = right.number_input("Page", min_value=1, value=1, step=1, key="page") - 1
cards, total = browse.item_cards(
    db, dataset, category=None if category == "all" else category, page=int(page), page_size=page_size
)
first = page * page_size + 1
st.caption(
    f"{total} items{'' if category == 'all' else ' in ' + text.md(category)}; showing "
    f"{first}-{page * page_size + len(cards)} (numbered within the dataset; # is the store's item id)"
)
thumbs = paths.thumbnail_dir(db_file)
if layout == "grid":
    for row_start in range(0, len(cards), 4):
        for column, (offset, card) in zip(st.columns(4), enumerate(cards[row_start : row_start + 4], start=row_start)):
            with column:
                draw_item_card(
                    card, f"{first + offset}. {card.category}  (#{card.id})", thumbs, width=110, show_truth=True
                )
else:
    for offset, card in enumerate(cards):
        draw_item_card(
            card,
            f"{first + offset} of {total}  {card.category}  {card.source_id}  ({card.kind}, #{card.id})",
            thumbs,
            width=160,
            show_truth=True,
        )
