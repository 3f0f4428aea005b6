"""Annotation batches (admin): create one, share the links, watch progress and gold accuracy, export."""

import pandas as pd
import plotly.express as px
import streamlit as st

from foil_studio.annotate import (
    agreement,
    batch_reports,
    batches,
    browse,
    consensus,
    construction,
    crowd_studies,
    export,
    gold,
    links,
    queues,
    simulation,
)
from foil_studio.annotate.task_types import TASK_TYPES, task_type
from foil_studio.data import paths, store
from foil_studio.views import text
from foil_studio.views.item_card import draw_item_card
from foil_studio.views.session import session_db

db = session_db()
st.title("Annotation batches")
# Links start with the address this admin opened the app at ($FOIL_BASE_URL behind a proxy).
DETECTED_ADDRESS = links.app_address(st.context.url) or ""


def app_address() -> str:
    """The address links start with: the one typed in the field, else the one detected."""
    return (st.session_state.get("base_url") or DETECTED_ADDRESS).strip().rstrip("/")


def create(spec: batches.BatchSpec) -> None:
    """Button callback (before the page is drawn again): create the batch, select it, clear the
    new-annotators field so that nobody is added to the next batch unasked, keep the links to show."""
    try:
        created = batches.create_batch(db, spec)
    except store.StoreError as error:
        st.session_state["created"] = ("error", text.md(error), [])
        return
    base = app_address()
    shown = [
        (f"{a['name']} ({a['n_assigned']} items)", links.annotator_link(base, a["token"]))
        for a in created["annotators"]
    ]
    if created.get("crowd_url"):
        shown.append(("Crowd study link (paste into Prolific)", base + created["crowd_url"]))
    st.session_state["created"] = (
        "success",
        f"Created {text.md(created['batch'])} with {created['n_items']} items. "
        "Each link is shown once (the store keeps only hashes): copy them now.",
        shown,
    )
    st.session_state["batch"] = created["batch"]
    st.session_state["new_names"] = ""
    st.session_state["new_batch_name"] = ""
    st.session_state["new_annotators"] = []


with st.expander("New batch", expanded=not store.list_batches(db)):
    asked = st.selectbox("Task type", TASK_TYPES, key="new_task_type")
    fitting = browse.datasets_holding(db, task_type(asked).item_kinds)
    if not fitting:
        st.warning(f"No dataset has {' or '.join(task_type(asked).item_kinds)} items for this task type.")
    else:
        dataset = st.selectbox("Dataset", fitting, key="new_dataset")
        categories = st.multiselect(
            "Categories (empty: all)",
            list(store.category_counts(db, store.get_dataset(db, dataset)["id"])),
            key="new_categories",
        )
        left, middle, right = st.columns(3)
        n = left.number_input("Items", min_value=1, value=30, key="new_n")
        overlap = middle.number_input("Annotators per item", min_value=1, value=2, key="new_overlap")
        gold_share = right.slider("Gold share", 0.0, 0.5, 0.1, key="new_gold")
        known = [a["name"] for a in store.list_annotators(db)]
        chosen = st.multiselect("Annotators", known, key="new_annotators", placeholder="choose who labels this batch")
        extra = st.text_input("New annotators (comma separated)", key="new_names")
        names = tuple(dict.fromkeys([*chosen, *(x.strip() for x in extra.split(",") if x.strip())]))
        batch_name = (
            st.text_input(
                "Batch name (optional; default: task type, dataset and a random suffix)", key="new_batch_name"
            ).strip()
            or None
        )
        crowd = st.checkbox("Crowd study link (workers join with their Prolific id)", key="new_crowd")
        per_worker = (
            st.number_input(
                "Items per crowd worker (gold items come on top)",
                min_value=1,
                value=20,
                key="new_per_worker",
                help="Each participant answers this many regular items, plus the gold items (known answers) "
                "mixed in when the gold share is above 0: their progress counts both.",
            )
            if crowd
            else None
        )
        cap = (
            st.number_input(
                "Participants at most (0: just enough to cover every item)", min_value=0, value=0, key="new_cap"
            )
            if crowd
            else 0
        )
        study: dict = {}
        if crowd:
            study["consent"] = st.text_area(
                "Consent a participant agrees to", batches.DEFAULT_CONSENT, key="new_consent"
            )
            study["completion_url"] = st.text_input(
                "Completion URL ({code} becomes the study's code)",
                batches.PROLIFIC_COMPLETION_URL,
                key="new_completion_url",
            )
            study["idle_minutes"] = st.number_input(
                "No-show minutes (an idle participant's unopened items go back; all of them if they answered none)",
                min_value=1.0,
                value=float(batches.SPEC_DEFAULTS["idle_minutes"]),
                key="new_no_show",
            )
        spec = batches.BatchSpec(
            dataset,
            asked,
            () if crowd else names,
            int(overlap),
            int(n),
            tuple(categories),
            gold_share=float(gold_share),
            crowd_items=int(per_worker) if per_worker else None,
            max_participants=int(cap) or None,
            name=batch_name,
            **study,
        )
        st.text_input(
            "App address the links start with",
            DETECTED_ADDRESS,
            key="base_url",
            help="Detected from the address you opened this page at; behind a proxy, set $FOIL_BASE_URL or type the "
            "address annotators reach.",
        )
        st.button(
            "Create batch",
            key="create_batch",
            type="primary",
            on_click=create,
            args=(spec,),
            disabled=not (names or crowd),
            help=None if names or crowd else "choose annotators, name new ones, or make a crowd study link",
        )

if "created" in st.session_state:
    level, message, issued = st.session_state.pop("created")
    (st.success if level == "success" else st.error)(message)
    for label, link in issued:
        st.caption(label)
        st.code(link, language=None)  # a copy button on hover

all_batches = store.list_batches(db)
if not all_batches:
    st.info("No batches yet.")
    st.stop()
st.dataframe(pd.DataFrame(all_batches).drop(columns=["id"]), hide_index=True, width="stretch")
names = [b["name"] for b in all_batches]
if st.session_state.get("batch") not in names:
    st.session_state["batch"] = names[-1]  # the newest batch first
name = st.selectbox("Batch", names, key="batch")
batch_row = store.get_batch(db, name)

st.subheader("Progress")


@st.fragment(run_every="10s")
def live_progress(batch_name: str) -> None:
    """Per-annotator progress, redrawn every 10 seconds as labels arrive."""
    progress = pd.DataFrame(batch_reports.batch_progress(session_db(), batch_name))
    # a figure nobody has yet (no person's answer, no gold item) is an empty cell: the table
    # would draw a missing number as "None", so these two columns are written out as text
    figures = {c: text.figure_cells(progress[c], 1) for c in ("median_seconds", "gold_accuracy") if c in progress}
    st.dataframe(
        progress.assign(**figures),
        hide_index=True,
        width="stretch",
        column_config={  # headers in words
            "median_seconds": "median seconds per item (people's answers)",
            "gold_n": "gold items answered",
            "gold_accuracy": "gold accuracy %",
            "screened_out": st.column_config.CheckboxColumn("left out by the gold screening"),
        },
    )


live_progress(name)
if st.button("Reassign items held past their lease", key="reassign"):
    st.info(f"Reassigned {queues.reassign_stale(db, name)} items.")
if st.button("Refresh", key="refresh"):
    st.rerun()


def simulate_now(batch_name: str) -> None:
    """Button callback: simulate before the page is drawn, so what follows shows the new labels."""
    result = simulation.simulate(db, batch_name, accuracies=0.9)
    written = sum(result["labels_written"].values())
    said = f"Simulated {written} labels (flagged as simulated; left out of the protocol's time)."
    note = result.get("note")  # why nothing was left to answer, or how many answers were at random
    st.session_state["batch_notice"] = f"{said} {text.md(note[:1].upper() + note[1:])}." if note else said


def extend_now(batch_name: str) -> None:
    st.session_state["batch_notice"] = f"Added {batches.extend_disagreements(db, batch_name)} assignments."


if "batch_notice" in st.session_state:
    st.info(st.session_state.pop("batch_notice"))

st.subheader("Agreement")
report = batch_reports.batch_agreement(db, name)
if not report["n_labels"]:
    st.info(
        "No labels yet: agreement, answers and disagreements appear here as annotators answer (or press "
        '"Simulate annotators" below for the demo).'
    )
summary = pd.DataFrame(agreement.coefficient_rows(report))
if report["n_labels"]:
    st.dataframe(summary.assign(value=text.figure_cells(summary["value"])), hide_index=True, width="stretch")
    st.caption(
        f"{report['n_items']} questions, {report['n_labels']} labels (gold items excluded), {report['level']} scale; "
        f"95% intervals from {report['bootstrap']['resamples']:,} bootstrap resamples of items (seed "
        f"{report['bootstrap']['seed']}), as in the CLI and the protocol paragraph. {report['note']}"
    )
if "by_question" in report and report["n_labels"]:
    questions = pd.DataFrame(agreement.question_rows(report))
    shown = questions.assign(**{k: text.figure_cells(questions[k]) for k in agreement.COEFFICIENTS})
    st.dataframe(shown, hide_index=True, width="stretch")  # an empty cell: undefined for that question
    st.caption(
        "Each question of this task type is agreed on separately; the table above pools them (each question of "
        "each item one unit)."
    )
if report["cohen_pairs"]:
    left, right = st.columns(2)
    if len(report["cohen_pairs"]) > 1:  # with one pair, the single kappa in the tables says it all
        heatmap = px.imshow(
            agreement.kappa_matrix(report["cohen_pairs"]),
            zmin=-1,
            zmax=1,
            color_continuous_scale="RdBu",
            text_auto=".2f",
            title="Cohen's kappa per pair",
        )
        left.plotly_chart(text.literal_figure(heatmap), key="kappa_heatmap")
    answers = pd.DataFrame(browse.answers_in_words(db, name))
    # answers on the vertical axis: their words (a ranking says three ranks) are read whole, not cut
    chart = px.histogram(answers, y="answer", color="annotator", barmode="group", title="Answers", orientation="h")
    chart.update_yaxes(automargin=True, title_text="")
    chart = text.whole_number_ticks(chart, answers.groupby(["answer", "annotator"]).size().max(), axis="x")
    (right if len(report["cohen_pairs"]) > 1 else left).plotly_chart(text.literal_figure(chart), key="answers_chart")
    pairs = pd.DataFrame(report["cohen_pairs"])
    shown_pairs = pairs.assign(kappa=text.figure_cells(pairs["kappa"]))  # empty where undefined, said beside
    st.dataframe(text.blank_missing(shown_pairs), hide_index=True, width="stretch")
    reliability = consensus.dawid_skene(db, name)["accuracy"]
    st.caption(
        "Dawid-Skene estimated accuracy per annotator: "
        + ", ".join(f"{text.md(k)} {v:.2f}" for k, v in reliability.items())
    )

by_category = pd.DataFrame(batch_reports.agreement_by_category(db, name))
if report["n_labels"] and not by_category.empty:
    # an undefined coefficient is an empty cell (the last column says why), never "None"
    figures = {c: text.figure_cells(by_category[c]) for c in batch_reports.BY_CATEGORY_COEFFICIENTS}
    st.dataframe(by_category.assign(**figures), hide_index=True, width="stretch")

st.subheader("Disagreements")
excluded = consensus.excluded_annotators(db, name)
include = False
if excluded:
    st.warning("Left out of the vote: " + "; ".join(f"{text.md(e.annotator)} ({e.reason})" for e in excluded) + ".")
    include = st.toggle("Include them in the vote and in this queue", key="include_excluded")
st.caption(
    text.md("Gold screening: " + gold.rule_text(float(batch_row["config"].get("gold_pass", gold.GOLD_PASS))) + ".")
)
queue = consensus.adjudication_queue(db, name, include_excluded=include)
left_out = (
    ""
    if include or not excluded
    else f" (without the {len(excluded)} annotator{'s' if len(excluded) > 1 else ''} left out above)"
)
st.caption(
    f"{len(queue)} questions where annotators disagree{left_out} and no decision was made. Your decision wins and is "
    "recorded."
)
shown = queue[:5]
batch_task_type = task_type(batch_row["task_type"])
cards = {card.id: card for card in browse.cards_for(db, batch_row["dataset"], [d.item for d in shown])}
items = store.items_by_id(db, [d.item for d in shown])
for decision in shown:
    card, item = cards[decision.item], items[decision.item]
    words = consensus.vote_words(batch_task_type, item, decision)
    votes = consensus.votes_text(words, decision)
    draw_item_card(
        card, f"item {decision.item} ({card.category}); votes: {votes}", paths.thumbnail_dir(paths.db_path()), width=140
    )
    # nothing pre-selected: on a tie, a default would be a decision nobody made
    choice = st.selectbox(
        "Decision",
        sorted(decision.votes),
        key=f"decide:{decision.item}:{decision.part}",
        format_func=words.get,
        index=None,
        placeholder="choose the answer that wins",
    )
    if st.button("Decide", key=f"decide_button:{decision.item}:{decision.part}", disabled=choice is None):
        store.decide(
            db,
            batch_row["id"],
            decision.item,
            decision.part,
            consensus.answer_from_key(choice, batch_task_type.questions),
            by="admin",
        )
        st.rerun()

left, middle, right = st.columns(3)
left.button(
    "Add an annotator to disputed items",
    key="extend",
    help="adaptive overlap: unanimous items are accepted as they are",
    on_click=extend_now,
    args=(name,),
)
middle.button(
    "Simulate annotators (demo)",
    key="simulate",
    help="answers from the ground truth with 10% noise, through the same write path",
    on_click=simulate_now,
    args=(name,),
)
layout = export.clean_layout(db, name)
if layout and right.button(f"Export the cleaned benchmark ({layout})", key="export_clean"):
    out = paths.output_dir(paths.db_path(), "cleaned", name)
    summary = export.export_clean(db, name, layout, out)
    st.success(
        f"Kept {summary['n_kept']} items, removed {summary['n_removed']}; written to {text.md(out)} with "
        "provenance.json."
    )
    st.download_button(
        f"Download the cleaned benchmark ({layout}, zip)",
        paths.zip_folder(out),
        f"{name}-cleaned.zip",
        "application/zip",
        key="export_clean_zip",
    )
    st.caption("Annotation protocol (for a paper's appendix):")
    st.code(export.protocol_paragraph(db, name), language=None, wrap_lines=True)
next_step = task_type(batch_row["task_type"]).next_step
if next_step:
    st.subheader("Next construction step")
    survivors = construction.pick_image_survivors(db, name)
    st.write(f'{len(survivors)} items have a chosen image so far (majority vote; a tie with "None" drops the item).')
    if survivors and st.button(f"Create an {next_step} batch from the chosen images", key=f"to_{next_step}"):
        try:
            follow = construction.create_ambiguity_batch(db, name)  # the pick batch's annotators hold it
        except store.StoreError as error:
            st.error(text.md(error))
        else:
            st.success(f"Created {text.md(follow['batch'])} with {follow['n_items']} items.")

st.subheader("Annotator links")
base = app_address()
st.caption(f"Links start with {text.md(base or '(no address: set $FOIL_BASE_URL)')}, the address set above New batch.")
if "crowd_token" in batch_row["config"]:
    st.text("Crowd study link (paste into Prolific):")
    st.code(links.crowd_link(base, batch_row["config"]["crowd_token"]), language=None)
    joins = crowd_studies.study_joins(db, name)
    returned = sum(bool(j["returned_at"]) for j in joins)
    st.text(
        f"{len(joins)} participants joined, {returned} returned the study. "
        f"{crowd_studies.study_places(db, name).sentence()}"
    )
    if joins:  # returned_at: when a participant gave the study back (blank: they did not)
        st.dataframe(text.blank_missing(pd.DataFrame(joins)), hide_index=True, width="stretch")
    closed = bool(batch_row.get("closed_at"))
    if st.button("Reopen the study" if closed else "Close the study to new participants", key="close_study"):
        crowd_studies.close_study(db, name, closed=not closed)
        st.rerun()
st.caption(
    "Links are stored only as hashes, so they are shown once, when issued. Each annotator got one when the batch was "
    "created; a lost link is issued again here (the earlier ones kept, or revoked if a link leaked)."
)
holders = list(store.assigned_per_annotator(db, batch_row["id"]))
if holders:
    left, middle, right = st.columns([2, 2, 1], vertical_alignment="bottom")
    who = left.selectbox("Annotator", holders, key="relink_name")
    revoke = middle.checkbox("Revoke their earlier links", key="relink_revoke")
    if right.button("Issue a new link", key="relink"):
        st.code(links.annotator_link(base, batches.reissue_link(db, who, revoke_old=revoke)), language=None)
        st.caption(f"A new link for {text.md(who)}; earlier links {'no longer work' if revoke else 'still work'}.")
if st.button("Issue new links for every annotator of this batch", key="issue_links"):
    for annotator in batches.issue_links(db, name):
        st.caption(annotator["name"])
        st.code(links.annotator_link(base, annotator["token"]), language=None)  # a copy button on hover

st.subheader("Export")
left, right = st.columns(2)
csv_text, jsonl_text = (batch_reports.export_labels(db, name, fmt) for fmt in ("csv", "jsonl"))
left.download_button("Labels (CSV)", csv_text, f"{name}.csv", "text/csv", key="export_csv")
right.download_button("Labels (JSONL)", jsonl_text, f"{name}.jsonl", "application/json", key="export_jsonl")
