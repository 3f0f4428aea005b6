"""Inspect runs: score-gap histograms, model against model, and the failure browser."""

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import sqlite_utils
import streamlit as st
from PIL import Image

from foil_studio.analysis import inspection, parity
from foil_studio.analysis.results import UnsupportedRunError
from foil_studio.annotate import baselines, batches, browse
from foil_studio.annotate.task_types import negative_validation
from foil_studio.data import paths, plain_text, store
from foil_studio.views import registry, text
from foil_studio.views.choices import subset_choice
from foil_studio.views.item_card import draw_item_card
from foil_studio.views.session import session_db

PAGE_SIZE = 10
SCATTER_POINTS = 5_000
FACET_BREAK = " \u00b7 "  # between runs in a facet title; a line break once the title is escaped
COMPARISON_COLUMNS = {"agreement %": st.column_config.NumberColumn(format="%.1f")}


# shared, not copied: a million rows unpickled took 0.2 to 0.3 s of every rerun; nothing on the page
# changes a table it is given (each step returns a new frame)
@st.cache_resource(max_entries=16, show_spinner=False)
def item_table(
    _db: sqlite_utils.Database, db_path: str, dataset: str, run: str, fingerprint: str, subset: str | None
) -> pd.DataFrame:
    return inspection.item_table(_db, dataset, run, subset)


@st.cache_data(max_entries=16, show_spinner=False)
def compare_runs(
    _db: sqlite_utils.Database, db_path: str, dataset: str, run_a: str, run_b: str, fingerprint: str, subset: str | None
) -> pd.DataFrame:
    return inspection.compare_runs(_db, dataset, run_a, run_b, subset)


@st.cache_data(max_entries=16, show_spinner=False)
def parity_report(
    _db: sqlite_utils.Database, db_path: str, dataset: str, run_a: str, run_b: str, fingerprint: str, subset: str | None
) -> parity.Parity:
    return parity.parity(_db, dataset, run_a, run_b, subset=subset)


@st.cache_data(max_entries=8, show_spinner="Linking the items of the two datasets...")
def compare_linked(
    _db: sqlite_utils.Database,
    db_path: str,
    dataset: str,
    run: str,
    other: str,
    other_run: str,
    fingerprints: tuple[str, str],
) -> tuple[pd.DataFrame, int]:
    return inspection.compare_linked(_db, dataset, run, other, other_run)


@st.cache_data(max_entries=16, show_spinner=False)
def human_outcomes(_db: sqlite_utils.Database, db_path: str, dataset: str, fingerprint: str) -> dict[int, bool]:
    return baselines.item_outcomes(_db, dataset)


# built once per run pair, gap and dataset version and shared, not copied: building a facet figure
# took most of a rerun (0.5 to 1 s at a million items); st.plotly_chart only reads it
@st.cache_resource(max_entries=16, show_spinner=False)
def gap_figure(
    _tables: dict[str, pd.DataFrame],
    db_path: str,
    dataset: str,
    runs: tuple[str, ...],
    gap: str,
    fingerprint: str,
    subset: str | None,
) -> go.Figure:
    """The score-gap histogram of the runs' tables (`_tables`, run -> `item_table`: named by the
    arguments after it, which key the cache), a facet per category titled with each run's share of
    items at or below zero."""
    tables = _tables
    shares = inspection.shares_below_zero(tables, gap)
    # one line per run in each facet title (two runs' shares side by side ran into the next facet)
    titles = {
        c: f"{c}: "
        + FACET_BREAK.join(
            (f"{r['run']} " if len(tables) > 1 else "") + f"{r['% at or below zero']:.1f}% ≤ 0"
            for r in part.to_dict("records")
        )
        for c, part in shares.groupby("category")
    }
    bars = inspection.gap_histogram(tables, gap).assign(facet=lambda f: f["category"].map(titles))
    figure = px.bar(
        bars,
        x="middle",
        y="count",
        color="run",
        facet_col="facet",
        facet_col_wrap=3,
        barmode="overlay",
        opacity=0.6,
        height=760,
        labels={"middle": gap},
        custom_data=["category"],
        facet_row_spacing=0.12,
        color_discrete_sequence=["#1f77b4", "#d62728"],
    )  # two runs in two colours, not two blues
    figure.update_traces(width=float(bars["right"].iloc[0] - bars["left"].iloc[0]))
    figure.for_each_annotation(lambda a: a.update(text=a.text.split("=", 1)[-1]))
    figure.update_xaxes(showticklabels=True)  # ticks under every facet, not only the bottom row
    figure.add_vline(x=0, line_dash="dash")
    figure = text.literal_figure(text.whole_number_ticks(figure, bars["count"].max()))
    figure.for_each_annotation(
        lambda a: a.update(text=a.text.replace(FACET_BREAK, "<br>"))
    )  # after escaping: the only markup
    return figure


@st.dialog("Image", width="large")
def enlarge(path: str, caption: str, captions: list[str]) -> None:
    """The captions, then the image as large as the dialog holds: shrunk to fit, or a small one
    (the demo's 128 pixels) magnified by a whole factor, each pixel a sharp square, not blurred."""
    for line in captions:
        st.text(line)
    with Image.open(path) as image:
        shown = magnified(image)
    st.image(shown, caption=caption, width=display_width(shown.size))


def magnified(image: Image.Image, max_width: int = 1000, max_height: int = 560) -> Image.Image:
    """A small image scaled up by the largest whole factor that fits (nearest neighbour)."""
    factor = max(1, min(max_width // image.width, max_height // image.height))
    return image.resize((image.width * factor, image.height * factor), Image.Resampling.NEAREST)


def display_width(size: tuple[int, int], max_width: int = 1000, max_height: int = 560) -> int:
    """Pixels wide to show an image at: its own width, less where it would overflow the dialog."""
    width, height = size
    return max(1, min(width, max_width, int(width * max_height / max(height, 1))))


def draw_parity(report: parity.Parity) -> None:
    """The items whose decision flips from run A to run B, with both margins, and the metric change."""
    st.markdown(
        f"**Decisions that flip from A to B: {len(report.flips)} of {report.n_items} items.** "
        f"{text.md(report.metric)}: {report.value_a:.2f} under A, {report.value_b:.2f} under B, change "
        f"{report.change:+.2f} points (95% paired interval {plain_text.interval_text(report.change_interval)})."
    )
    st.caption(
        "A decision is right or wrong under the benchmark's tie rule and, where both runs have scores, which side wins "
        "each score gap. Before trusting a faster precision, score in both (`./foil parity DATASET --model ...`) and "
        "read these items."
    )
    if len(report.flips):
        margins = {
            c: st.column_config.NumberColumn(format="%+.5f") for c in report.flips.select_dtypes("float").columns
        }  # flips sit near a tie
        st.dataframe(report.flips, hide_index=True, width="stretch", column_config=margins, key="parity_flips")


db_file = paths.db_path()
db = session_db()
st.title("Inspect runs")
BOX = registry.page("views/inspect_runs.py").box
with_runs = browse.datasets_holding(db, BOX.item_kinds, with_runs=BOX.with_runs)
if not with_runs:
    st.info("No runs yet.")
    st.stop()
dataset = st.selectbox("Dataset", with_runs, key=BOX.key)
runs = store.run_names(db, dataset)
left, right = st.columns(2)
run_a = left.selectbox("Run A", runs, key=f"run_a:{dataset}")
run_b = right.selectbox("Run B (optional)", ["(none)", *[r for r in runs if r != run_a]], key=f"run_b:{dataset}")
run_b = None if run_b == "(none)" else run_b

subset = subset_choice(db, dataset, "inspect_subset")
db_path, fingerprint = str(db_file), store.dataset_fingerprint(db, dataset)
try:
    table_a = item_table(db, db_path, dataset, run_a, fingerprint, subset)
    table_b = item_table(db, db_path, dataset, run_b, fingerprint, subset) if run_b else None
except UnsupportedRunError as error:
    st.info(f"{text.md(run_a)}: {text.md(error)}")
    st.stop()
gaps = inspection.gap_columns(table_a)
in_range: list[int] | None = None  # the items of the gap range chosen on the histogram
box = None

st.subheader("Score gaps")
if not gaps:
    st.info(f"{text.md(run_a)} holds imported decisions, not scores: no gaps to plot.")
else:
    gap = st.selectbox("Gap", gaps, key=f"gap:{dataset}")
    tables = {run_a: table_a} | ({run_b: table_b} if table_b is not None and gap in table_b else {})
    figure = gap_figure(tables, db_path, dataset, tuple(tables), gap, fingerprint, subset)
    event = st.plotly_chart(figure, key=f"gap_hist:{dataset}", on_select="rerun", selection_mode="box")
    st.caption(
        "Facet titles give each run's share of items at or below zero (the failures). Draw a box on the chart, or use "
        "the slider, to list items; the failure browser below then shows those items."
    )
    lowest, highest = float(table_a[gap].min()), float(table_a[gap].max())
    # keyed by run and gap: another run or gap starts from its own full range, not the last one's
    range_key = f"gap_range:{dataset}:{run_a}:{gap}"
    st.session_state.setdefault(range_key, (lowest, max(lowest, min(0.0, highest))))  # up to 0, the failures
    box = inspection.selected_range(event.selection if event else None)
    if box is not None and st.session_state.get(f"synced:{range_key}") != box:
        # a new box moves the slider (and the failures' Category) to it: one range on screen, never two
        st.session_state[range_key] = inspection.clamped(box, lowest, highest)
        st.session_state[f"synced:{range_key}"] = box
        if len(box.categories) == 1:
            st.session_state[f"fail_category:{dataset}"] = box.categories[0]
    slider = st.slider("List the items with a gap in", lowest, highest, key=range_key)
    chosen = inspection.GapRange(*slider, box.categories if box else ())
    listed = inspection.in_range(table_a, gap, chosen)
    where = f" in {text.md(', '.join(chosen.categories))}" if chosen.categories else ""
    shown = f" (the first {inspection.LISTED_ROWS:,} listed)" if len(listed) > inspection.LISTED_ROWS else ""
    st.caption(
        f"{len(listed):,} items of {text.md(run_a)} with {text.md(gap)} in [{chosen.low:.3f}, {chosen.high:.3f}]"
        f"{where}{shown}" + (" (from the box drawn on the chart; double-click the chart to clear it)" if box else "")
    )
    gap_columns = {c: st.column_config.NumberColumn(format="%.3f") for c in listed.select_dtypes("float")}
    # one number of decimals; a million rows sent to the browser took most of a rerun
    st.dataframe(listed.head(inspection.LISTED_ROWS), hide_index=True, width="stretch", column_config=gap_columns)
    in_range = listed["item"].tolist()  # item ids are unique in a run's table

if run_b:
    st.subheader(f"{text.md(run_a)} against {text.md(run_b)}")
    st.dataframe(
        inspection.comparison_for_people(compare_runs(db, db_path, dataset, run_a, run_b, fingerprint, subset)),
        hide_index=True,
        width="stretch",
        column_config=COMPARISON_COLUMNS,
    )
    shared = [g for g in gaps if table_b is not None and g in table_b]
    if shared:
        paired = inspection.paired_gaps(table_a, table_b, shared[0])
        if len(paired) > SCATTER_POINTS:
            st.caption(f"A random {SCATTER_POINTS:,} of the {len(paired):,} items are drawn.")
            paired = paired.sample(SCATTER_POINTS, random_state=0)
        scatter = px.scatter(
            paired,
            x="A",
            y="B",
            color="category",
            opacity=0.5,
            hover_data=["item"],
            labels={"A": f"{run_a}: {shared[0]}", "B": f"{run_b}: {shared[0]}"},
        )
        scatter.add_hline(y=0, line_dash="dash")
        scatter.add_vline(x=0, line_dash="dash")
        st.plotly_chart(text.literal_figure(scatter), key="gap_scatter")
    draw_parity(parity_report(db, db_path, dataset, run_a, run_b, fingerprint, subset))

others = [d for d in with_runs if d != dataset]
if others and st.toggle(
    "Against a run on another dataset holding the same items (SugarCrepe++ and SugarCrepe)", key=f"linked:{dataset}"
):
    left, right = st.columns(2)
    other = left.selectbox("Other dataset", others, key=f"link_dataset:{dataset}")
    other_run = right.selectbox("Its run", store.run_names(db, other), key=f"link_run:{dataset}:{other}")
    try:
        linked_table, linked = compare_linked(
            db, db_path, dataset, run_a, other, other_run, (fingerprint, store.dataset_fingerprint(db, other))
        )
    except UnsupportedRunError as error:
        st.info(f"{text.md(other_run)}: {text.md(error)}")
    else:
        if not linked:
            st.info(
                f"No item of {text.md(other)} has the image, caption and negative of an item of {text.md(dataset)}."
            )
        else:
            st.caption(
                f"{linked} items of {text.md(other)} share image, caption and negative (compared by their words) with "
                f"items of {text.md(dataset)}; each run is right on an item by its own benchmark's metric."
            )
            st.dataframe(
                inspection.comparison_for_people(linked_table),
                hide_index=True,
                width="stretch",
                column_config=COMPARISON_COLUMNS,
            )

humans = human_outcomes(db, db_path, dataset, fingerprint)
if humans:
    st.subheader(f"{text.md(run_a)} against the humans")
    st.caption(
        f"Items answered in the dataset's baseline or ranking batches ({len(humans)}); humans are right on an item "
        "when the majority answer of each of its questions is."
    )
    st.dataframe(
        inspection.comparison_for_people(
            inspection.compare_correctness(table_a, inspection.human_table(humans), run_a, "humans")
        ),
        hide_index=True,
        width="stretch",
        column_config=COMPARISON_COLUMNS,
    )

st.subheader("Failures")
patterns = inspection.patterns_for(table_a, table_b, humans)
left, middle, right = st.columns(3)
pattern = left.selectbox("Pattern (A and B as chosen above)", patterns, key="pattern")
categories = ["all", *sorted(table_a["category"].unique())]
category = middle.selectbox("Category", categories, key=f"fail_category:{dataset}")
limit = in_range is not None and right.toggle(
    f"Only the {len(in_range)} items of the gap range above",
    value=box is not None,
    key=f"fail_in_range:{dataset}:{box is not None}",
    help="on by default when a box is drawn on the histogram",
)
page = st.number_input("Page", min_value=1, value=1, key="fail_page") - 1
in_category = None if category == "all" else category
query = {"humans": humans, "pattern": pattern, "category": in_category, "items": in_range if limit else None}
chosen, total = inspection.failures(table_a, table_b, **query, page=int(page), page_size=PAGE_SIZE)
order = "worst margin first" if gaps else "in item order (imported decisions carry no margins)"
st.caption(
    f"{total} items, {order}"
    + (" in the gap range above" if limit else "")
    + (f"; {len(humans)} items have human answers" if humans else "")
)
ids = [int(i) for i in chosen["item"]]
cards = {card.id: card for card in browse.cards_for(db, dataset, ids)}
human_lines = browse.human_label_lines(db, list(cards.values()))
thumbs = paths.thumbnail_dir(db_file)
for row in chosen.to_dict("records"):
    card = cards[row["item"]]
    texts = [caption for _, caption in card.captions]
    marked = (
        list(inspection.marked_difference(texts[0], texts[1])) + texts[2:] if len(texts) >= 2 else texts
    )  # differing words in [brackets]
    gap_figures = ", ".join(f"{c} {plain_text.figure(row[c], 3)}" for c in gaps)
    heading = f"#{card.id}  {card.category}  {card.source_id}  " + gap_figures
    # the known truth on the card: a demo's deliberately false negative is not the model's failure
    draw_item_card(
        card, heading, thumbs, captions=marked, lines=human_lines[card.id], enlarge=enlarge, width=140, show_truth=True
    )

if total:
    st.subheader("Send to annotation")
    everyone = [a["name"] for a in store.list_annotators(db)]
    whom = st.multiselect(
        f"Annotators for a validate_negative batch of these {total} items",
        everyone,
        key="send_whom",
        placeholder="choose who labels them" if everyone else "no annotators yet: add them on Annotation batches",
    )
    overlap = min(
        int(
            st.number_input("Annotators per item (at most the number chosen)", min_value=1, value=2, key="send_overlap")
        ),
        max(len(whom), 1),
    )
    if st.button(f"Create the batch ({total} items)", key="send_to_annotation", disabled=not whom):
        all_ids = inspection.failures(table_a, table_b, **query, page_size=total)[0]["item"]
        try:
            created = batches.create_batch(
                db,
                batches.BatchSpec(
                    dataset, negative_validation().name, tuple(whom), overlap, item_ids=tuple(int(i) for i in all_ids)
                ),
            )
        except store.StoreError as error:
            st.error(text.md(error))
        else:
            st.success(
                f"Created {text.md(created['batch'])} with {created['n_items']} items, {overlap} annotators each, for "
                f"{text.md(', '.join(whom))}; their links are on Annotation batches."
            )
