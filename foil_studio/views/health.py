"""Benchmark health: what share of a dataset's negatives are invalid, and the leaderboard on the
valid items, from a stratified sample people validate (`annotate.health`)."""

import json

import pandas as pd
import plotly.graph_objects as go
import sqlite_utils
import streamlit as st

from foil_studio.analysis.audit import AUDIT_MOST
from foil_studio.analysis.health import ALLOCATIONS
from foil_studio.annotate import browse, health, links
from foil_studio.data import paths, store
from foil_studio.views import registry, text
from foil_studio.views.session import session_db

db = session_db()
st.title("Benchmark health")
st.caption(
    "How many of a benchmark's negatives are actually invalid (the altered caption is also true), per category, "
    "and does leaving them out change which model is better? Draw a stratified random sample, let annotators "
    "validate it on their queues, and read the estimates here with 95% intervals."
)
BOX = registry.page("views/health.py").box
names = browse.datasets_holding(db, BOX.item_kinds)
if not names:
    st.info("No dataset with caption pairs yet: import one on Datasets.")
    st.stop()
dataset = st.selectbox("Dataset", names, key=BOX.key)
batches = health.health_batches(db, dataset)
annotators = [a["name"] for a in store.list_annotators(db)]


@st.cache_data(max_entries=8, show_spinner="Computing the estimates and their intervals...")
def health_report(
    _db: sqlite_utils.Database, db_path: str, dataset: str, predictions: str | None, consensus: str, fingerprint: str
) -> dict:
    """The report, computed again only when the dataset's items, batches, labels, decisions, runs or
    predictions change (the fingerprint): a rerun of the page, a widget moved, recomputes nothing."""
    # the blind audit fits on every item: never on a page's first render (issue 57), only when asked
    return health.health_report(_db, dataset, predictions=predictions, consensus=consensus, fit_audit=False)


def draw_form(first: bool) -> None:
    """The form that draws the first sample, or the next batch where it helps most."""
    with st.form(f"health_draw_{dataset}"):
        left, middle, right = st.columns(3)
        budget = left.number_input("Items to draw", min_value=1, value=70 if first else 50, step=10)
        strategy, predicted = "neyman", None
        if first:
            allocation = middle.selectbox("Allocation over categories", ALLOCATIONS, index=1)
            target, runs = "share", ()
        else:
            allocation = "neyman"
            target = middle.selectbox(
                "Sharpen",
                health.TARGETS,
                format_func=lambda t: {"share": "the invalid share", "rank": "a pair's order"}[t],
            )
            run_names = store.run_names(db, dataset)
            runs = tuple(st.multiselect("The pair of runs (for a pair's order)", run_names, max_selections=2))
            sets = [s["name"] for s in store.list_prediction_sets(db, dataset)]
            if sets:
                strategy = st.radio(
                    "Within each category, draw",
                    health.STRATEGIES,
                    horizontal=True,
                    format_func=health.STRATEGY_WORDS.__getitem__,
                    help="By prediction: each category is cut into bins of the predictions (below) and each bin "
                    "drawn at random, more items where they place the invalid ones; the bins become strata of the "
                    "estimates (docs/statistics.md).",
                    key="health_strategy",
                )
                predicted = st.selectbox("Predictions (not for a random draw)", sets, key="health_draw_predictions")
        asked = 3 if first else health.sample_overlap(db, dataset)  # the next batch asks as the sample did
        overlap = right.number_input("Annotators per item", min_value=1, value=asked)
        chosen = st.multiselect("Annotators", annotators, default=annotators[:3])
        extra = st.text_input("New annotators (comma separated)", placeholder="ada, ben, cy")
        name = st.text_input("Batch name (optional)")
        seed = st.number_input("Seed", min_value=0, value=0)
        submitted = st.form_submit_button("Draw the sample" if first else "Draw the next batch", type="primary")
    if not submitted:
        return
    chosen = list(dict.fromkeys([*chosen, *(x.strip() for x in extra.split(",") if x.strip())]))
    try:
        plan = health.plan_sample(
            db,
            dataset,
            int(budget),
            allocation=allocation,
            target=target,
            runs=runs,
            seed=int(seed),
            strategy=strategy,
            predictions=predicted if strategy != "neyman" else None,
        )
        created = health.create_sample_batch(db, plan, chosen, overlap=int(overlap), name=name.strip() or None)
    except (store.StoreError, ValueError) as error:
        st.error(text.md(error))
        return
    base = links.app_address(st.context.url)
    st.session_state[f"health_drawn:{dataset}"] = (
        f"Batch {text.md(created['batch'])}: {created['drawn']} items for {len(chosen)} annotators. "
        "Each link is shown once (the store keeps only hashes): copy them now. A lost link is issued again on "
        "Annotation batches.",
        [
            (f"{a['name']} ({a['n_assigned']} items)", links.annotator_link(base, a["token"]))
            for a in created["annotators"]
        ],
    )
    st.rerun()  # on to the drawn sample: its report, and the next-batch form in place of the first


def show_drawn() -> None:
    """What the last draw made, once: the batch and its annotators' links."""
    drawn = st.session_state.pop(f"health_drawn:{dataset}", None)
    if drawn:
        message, issued = drawn
        st.success(message)
        for label, link in issued:
            st.text(label)
            st.code(link, language=None)  # a copy button on hover


if not batches:
    st.info("No health sample of this dataset yet. Draw one: it becomes a validate_negative batch.")
    draw_form(first=True)
    st.stop()
show_drawn()
with st.expander("Draw the next batch"):
    draw_form(first=False)

consensus = st.radio(
    "Item verdicts by",
    health.CONSENSUS,
    horizontal=True,
    key="health_consensus",
    help="majority: the answer most validations gave (a tie is ambiguous); dawid-skene: the answer Dawid and "
    "Skene's model gives from every annotator's estimated confusion",
)
prediction_sets = [s["name"] for s in store.list_prediction_sets(db, dataset)]
predictions = None
if prediction_sets:
    chosen = st.selectbox(
        "Predictions on every item (for prediction-powered shares)",
        ["none", *prediction_sets],
        index=1,
        key="health_predictions",
        help="a predictor's output on every item, imported with ./foil health predictions",
    )
    predictions = None if chosen == "none" else chosen
report = health_report(
    db, str(paths.db_path()), dataset, predictions, consensus, store.dataset_fingerprint(db, dataset)
)
overall = report["overall"]
if report["differs_from_majority"] is not None:
    st.caption(
        f"Dawid-Skene decides {report['differs_from_majority']} of the decided items otherwise than the majority "
        "answer would (the same figures as majority when it decides none otherwise)."
    )
if overall["invalid_share"] is not None:
    first, second, third = st.columns(3)
    for column, label, share in (
        (first, "Invalid negatives", overall["invalid_share"]),
        (second, "Ambiguous", overall["ambiguous_share"]),
    ):
        low, high = share["interval"]
        column.metric(label, f"{100 * share['estimate']:.1f}%", help="stratified estimate over the categories")
        column.caption(f"95% interval {100 * low:.1f} to {100 * high:.1f}%")
    third.metric("Decided items", f"{report['design']['decided']} of {report['design']['drawn']} drawn")
    third.caption(f"from {report['design']['items']} items in {report['design']['categories']} categories")
st.subheader("Methods")
st.markdown(text.md(report["methods"]))
if overall["invalid_share"] is None:
    st.info(
        "No drawn item is decided yet: the estimates appear as annotators validate them on their queues "
        "(for the demo: Simulate annotators on Annotation batches)."
    )
    st.stop()

compared = health.compared_shares(report)
rows = compared["rows"]
figure = go.Figure(
    go.Bar(
        x=[row["category"] for row in rows],
        y=[row["estimate"] for row in rows],
        error_y={
            "type": "data",
            "symmetric": False,
            "array": [row["high"] - row["estimate"] for row in rows],
            "arrayminus": [row["estimate"] - row["low"] for row in rows],
        },
        name=compared["estimate_name"],
    )
)
if compared["own_name"]:
    figure.add_scatter(
        x=[row["category"] for row in rows if row["own"] is not None],
        y=[row["own"] for row in rows if row["own"] is not None],
        mode="markers",
        marker={"symbol": "diamond", "size": 10},
        name=compared["own_name"],
    )
figure.update_layout(
    title=compared["title"],
    yaxis_title=compared["axis"],
    height=380,
    legend={"orientation": "h", "y": -0.25},
    margin={"t": 50, "b": 10},
)
st.plotly_chart(text.literal_figure(figure), width="stretch")


# counts and shares as two tables, the shares under short labels: one table with the card's full
# column names was wider than the page at 1280 px (issue 55). A container per dataset: a table kept
# the column widths of the dataset chosen before, cutting off a longer category name.
strata = pd.DataFrame(health.strata_table(report))
with st.container(key=f"strata_{names.index(dataset)}"):
    st.dataframe(strata[["category", *health.STRATA_COUNTS]], hide_index=True, width="stretch")
    st.dataframe(
        strata.drop(columns=list(health.STRATA_COUNTS)),
        hide_index=True,
        width="stretch",
        column_config={
            column: st.column_config.Column(label, help=about)
            for column, (label, about) in health.strata_headers(report).items()
        },
    )
st.caption(text.md(health.strata_note(report)))
if report["waiting"]:
    st.info(text.md(f"The estimates stand on the batches drawn before: {report['waiting']}."))
if report["estimator"] == "binned":
    st.caption(
        "This sample drew by prediction: each category's bins of the predictions are strata of their own, so "
        "a category's figures combine its bins by their sizes (more answers went where the invalid items are)."
    )
if report["estimator"] == "rounds":
    st.caption(
        "This sample has an active batch: its items were drawn with unequal probabilities, more where the "
        "predictions were unsure, so each category's figures weigh every answer by how likely its item was to be "
        "drawn; a category where few uncertain items were drawn gets a wide interval."
    )
if health.powered_table(report):
    st.subheader(f"Prediction-powered invalid shares (predictions: {report['prediction_powered']['predictions']})")
    st.caption(
        "Plain: from people's answers on the drawn items alone (the figures above). Prediction-powered: the same "
        "answers together with the predictor's output on every item. To cite: the narrower of the two. AUC: "
        "how well the predictions order the decided items, invalid above valid (0.5 is chance, 1 perfect, "
        "whatever the scale). Mean f / observed: the average prediction beside the share people found (the "
        "calibration). Agreement: how often f >= 0.5 matches people's verdict. Worth: how many human answers a "
        "plain interval as narrow as the one to cite would need (at most the items there are). With about 20 "
        "answers in a category the prediction-powered "
        "interval can be the wider even at full agreement: it adds two disagreements' worth and one item on each "
        "side, so that a predictor right on a small sample is not taken as right everywhere."
    )
    st.dataframe(pd.DataFrame(health.powered_table(report)), hide_index=True, width="stretch")
    if health.powered_other_table(report):
        st.caption("The other shares over all sampled categories, powered by the same predictions:")
        st.dataframe(pd.DataFrame(health.powered_other_table(report)), hide_index=True, width="stretch")
    if health.powered_leaderboard_table(report):
        st.caption("Accuracy on valid items, with each run's credit on every item and the predicted validity:")
        st.dataframe(pd.DataFrame(health.powered_leaderboard_table(report)), hide_index=True, width="stretch")
    if health.powered_pairs_table(report):
        st.caption("Each pair's difference of accuracy on valid items (the first run less the second), in points:")
        st.dataframe(pd.DataFrame(health.powered_pairs_table(report)), hide_index=True, width="stretch")
elif not prediction_sets:
    st.caption(
        "A predictor's output on every item (a VLM judge, one cheap crowd vote) can narrow these intervals: "
        "import it with `./foil health predictions DATASET FILE --name NAME`."
    )
blind = report["hackability"]
if blind is None:
    st.info(
        f"Hackability (blind text-only accuracy, {', '.join(health.BLIND_SCORERS)}) is not computed for "
        f"{text.md(dataset)} yet: it fits its scorers on every item (a random {AUDIT_MOST:,} of a larger "
        "dataset), so the page leaves it to `./foil health report DATASET` (which stores it for every report "
        "after) or to this button."
    )
    if st.button("Fit the blind audit now", key="health_fit_audit"):
        with st.spinner(f"Fitting the blind text-only scorers on every item of {text.md(dataset)}..."):
            health.fit_blind_audit(db, dataset)
        health_report.clear()
        st.rerun()
else:
    with st.expander(f"Hackability: blind text-only accuracy, % ({', '.join(blind['scorers'])}; a tie counted half)"):
        st.dataframe(pd.DataFrame(health.blind_table(report)), hide_index=True)

board = report["leaderboard"] or {}
if board.get("runs"):
    st.subheader("Leaderboard: all items against valid items")
    runs = board["runs"]
    dumbbell = go.Figure()
    for row in runs:
        dumbbell.add_scatter(
            x=[row["published"], row["valid"]],
            y=[row["run"], row["run"]],
            mode="lines",
            line={"color": "#888", "width": 3},
            showlegend=False,
            hoverinfo="skip",
        )
    dumbbell.add_scatter(
        x=[row["published"] for row in runs],
        y=[row["run"] for row in runs],
        mode="markers",
        marker={"color": "#444", "size": 11},
        name="all items (published)",
    )
    dumbbell.add_scatter(
        x=[row["valid"] for row in runs],
        y=[row["run"] for row in runs],
        mode="markers",
        marker={"color": "#0068c9", "size": 12, "symbol": "diamond"},
        name="valid items (95% interval)",
        error_x={
            "type": "data",
            "symmetric": False,
            "array": [row["valid_interval"][1] - row["valid"] for row in runs],
            "arrayminus": [row["valid"] - row["valid_interval"][0] for row in runs],
        },
    )
    dumbbell.update_layout(
        xaxis_title=f"accuracy % (ties counted {board['ties']})",
        height=140 + 40 * len(runs),
        legend={"orientation": "h", "y": -0.4},
        margin={"t": 20, "b": 10},
    )
    st.plotly_chart(text.literal_figure(dumbbell), width="stretch")
    st.dataframe(pd.DataFrame(health.leaderboard_table(report)), hide_index=True, width="stretch")  # the figures
    if board["pairs"]:
        st.dataframe(pd.DataFrame(health.pairs_table(report)), hide_index=True, width="stretch")
humans = report.get("human_baseline")
if humans and humans["metrics"]:
    st.caption(
        f"Human baseline ({text.md(', '.join(humans['batches']))}; {humans['n']} items): "
        + "; ".join(f"{row['metric']} {row['value']}" for row in health.human_table(report))
    )
if board.get("undefined"):
    st.caption(f"Leaderboard on valid items: {board['undefined']}.")
for run, why in (board.get("skipped") or {}).items():
    st.caption(f"{text.md(run)} left out: {text.md(why)}")

left, right = st.columns(2)
left.download_button(
    "Benchmark card (Markdown)", health.report_markdown(report), file_name=f"{dataset}-health.md", mime="text/markdown"
)
right.download_button(
    "Benchmark card (JSON)", json.dumps(report, indent=2), file_name=f"{dataset}-health.json", mime="application/json"
)
