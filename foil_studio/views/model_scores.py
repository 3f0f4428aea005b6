"""Model scores: per-category metrics of one or more runs, with intervals and the chance line."""

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import plotly.graph_objects as go
import sqlite_utils
import streamlit as st

from foil_studio.analysis import metrics, model_spec, results, scorable  # not scoring: it imports torch
from foil_studio.annotate import baselines, browse
from foil_studio.data import paths, plain_text, store
from foil_studio.views import registry, text
from foil_studio.views.choices import offered_subsets, subset_choice
from foil_studio.views.session import session_db

if TYPE_CHECKING:
    from foil_studio.analysis.models import LoadedModel
    from foil_studio.analysis.scorers.base import LoadedFamily
    from foil_studio.analysis.scoring import ScoreReport

db = session_db()
st.title("Model scores")


@st.cache_resource(max_entries=2, show_spinner="Loading the model...")
def cached_model(spec: model_spec.ModelSpec) -> "LoadedModel":
    from foil_studio.analysis import models  # torch and open_clip take ~5 s to import: only when asked to score

    return models.load_model(spec)


@st.cache_data(max_entries=16, show_spinner="Computing metrics and intervals...")
def run_summaries(
    _db: sqlite_utils.Database, db_path: str, dataset: str, fingerprint: str, subset: str | None, ties: str | None
) -> dict[str, dict]:
    return results.run_summaries(_db, dataset, subset=subset, ties=ties)


@st.cache_data(max_entries=16, show_spinner="Counting the items with their images...")
def counted_scorable(
    _db: sqlite_utils.Database, db_path: str, dataset: str, fingerprint: str, image_statuses: str
) -> scorable.Scorable:
    """The items a run can score, counted again only when the items or their images' statuses change:
    a million items with some images missing take seconds to count."""
    return scorable.scorable(_db, dataset)


def two_decimals(frame: pd.DataFrame) -> dict:
    """Show the percentages of a table with two decimals (the data keep every digit)."""
    return {c: st.column_config.NumberColumn(format="%.2f") for c in frame.select_dtypes("float").columns}


DEMO_MODEL = "the demo model (works offline)"
OPEN_CLIP = "an open_clip model"
FAMILY = "a model of another family"


@st.cache_resource(max_entries=1, show_spinner="Loading the model...")
def cached_family(family: str, ref: str, precision: str, device: str) -> "LoadedFamily":
    from foil_studio.analysis.scorers import pairwise, scorer_family  # torch and transformers: only when asked

    return pairwise.load_family(scorer_family(family), ref, precision, device)


def precision_choice() -> str:
    """The precision box (auto, fp32, bf16, fp16)."""
    return st.selectbox(
        "Precision",
        model_spec.PRECISIONS,
        key="score_precision",
        help="auto: bf16 where this machine computes it natively (about twice as fast), else fp32; the run records "
        "which and why.",
    )


def family_inputs() -> tuple[str, str, str]:
    """The family chosen, the hub name or folder given for it, and the precision."""
    from foil_studio.analysis.scorers import family_choices  # the records only: no torch

    choices = {choice.name: choice for choice in family_choices()}
    left, right = st.columns([1, 2])
    name = left.selectbox(
        "Model family", list(choices), key="score_family", format_func=lambda n: f"{n} (e.g. {choices[n].example})"
    )
    chosen = choices[name]
    ref = right.text_input(
        "Hugging Face name or local folder",
        key="score_family_ref",
        placeholder=chosen.example,
        help="A name in the Hugging Face cache, or a folder made by save_pretrained (model and processor).",
    ).strip()
    st.caption(text.md(f"{chosen.summary}. Scores a pair by {chosen.rule} (read from {chosen.source})."))
    return name, ref, precision_choice()


def score_form() -> None:
    """Score a dataset with the demo model, any open_clip model or a model of another family; show
    the new run when done."""
    targets = store.dataset_names(db)
    target = st.selectbox("Dataset to score", targets, key="score_dataset") if targets else None
    source = st.radio("Model", [DEMO_MODEL, OPEN_CLIP, FAMILY], horizontal=True, key="score_source")
    model: model_spec.ModelSpec | tuple[str, str, str]  # a family's (family, name or folder, precision)
    if source == DEMO_MODEL:
        model = model_spec.demo_model_spec()
        default = model.run_name
    elif source == OPEN_CLIP:
        left, middle, right = st.columns(3)
        arch = left.text_input("open_clip architecture", "ViT-B-32", key="score_arch")
        tag = middle.text_input("Pretrained tag ('none': random weights, timing only)", "openai", key="score_tag")
        checkpoint = right.text_input("or a local checkpoint file", "", key="score_checkpoint")
        precision = precision_choice()
        model = spec = model_spec.ModelSpec(arch.strip(), tag.strip() or None, checkpoint.strip() or None, precision)
        st.caption(
            "Weights are read from open_clip's cache or the checkpoint file; without them (and offline) scoring stops "
            "with a message."
        )
        default = spec.run_name + (" (with -bf16 where auto runs in bf16)" if spec.precision == "auto" else "")
    else:
        model = name, ref, precision = family_inputs()
        suffix = {"auto": " (with -bf16 where auto runs in bf16)", "fp32": ""}.get(precision, f"-{precision}")
        default = f"{name}-{Path(ref.rstrip('/')).name if ref else 'FOLDER'}{suffix}"
    run = (
        st.text_input("Run name", placeholder=default, key="score_run").strip() or None
    )  # None: the loaded model's name
    if not target:
        return
    images = store.image_status_counts(db, store.get_dataset(db, target)["id"])  # an attached folder changes them
    try:
        found = counted_scorable(db, str(paths.db_path()), target, store.dataset_fingerprint(db, target), str(images))
        ready = scorable.refuse_nothing(found)
    except scorable.NothingToScoreError as error:
        st.warning(text.md(error))
        return
    if ready.n_skipped:
        st.caption(text.md(ready.skipped_sentence()))
    if st.button("Score", key="score_now", type="primary"):
        if isinstance(model, tuple) and not model[1]:
            st.error(f"Give a Hugging Face name or a local folder for {model[0]}.")
            return
        bar = st.progress(0.0, text=f"loading {model[1] if isinstance(model, tuple) else model.arch}")
        waited = time.perf_counter()  # what the person waits for: loading the model too, not only scoring
        try:
            report = score_now(target, model, run, bar)
        except (model_spec.ModelUnavailableError, store.StoreError, ValueError, OSError) as error:
            bar.empty()
            st.error(text.md(error))
        else:
            skipped = f" {report.n_skipped:,} items without their image files were skipped." if report.n_skipped else ""
            reused = f"{report.cache_hits} cached {'pair scores' if isinstance(model, tuple) else 'embeddings'} reused"
            st.session_state["scores_notice"] = (
                f"Scored {report.n_items} items as run {text.md(report.run)} in {time.perf_counter() - waited:.1f} s "
                f"(loading the model included; {reused}); it is shown below.{skipped}"
            )
            st.session_state["scores_dataset"] = target  # show the new run: its dataset, with it chosen
            st.session_state[f"scores_runs:{target}"] = [report.run]
            st.rerun()


def score_now(
    target: str, model: model_spec.ModelSpec | tuple[str, str, str], run: str | None, bar: Any
) -> "ScoreReport":
    """Score `target` with an open_clip model's spec or a family's (family, name or folder, precision)."""
    from foil_studio.analysis import scoring

    def progress(stage: str, done: int, total: int) -> None:
        verb = "scoring" if isinstance(model, tuple) else "encoding"
        bar.progress(done / max(total, 1), text=f"{verb} {stage}: {done}/{total}")

    if not isinstance(model, tuple):
        return scoring.score_dataset(db, target, cached_model(model), run=run, progress=progress)
    from foil_studio.analysis.scorers.pairwise import score_with_family

    name, ref, precision = model
    report = score_with_family(
        db,
        target,
        name,
        ref,
        precision=precision,
        run=run,
        progress=progress,
        load=lambda f, r, p, d: cached_family(f.name, r, p, d),
    )
    return scoring.ScoreReport(**{key: report[key] for key in scoring.ScoreReport.__dataclass_fields__})


with st.expander("Score a dataset now"):
    score_form()
if "scores_notice" in st.session_state:
    st.success(st.session_state.pop("scores_notice"))

BOX = registry.page("views/model_scores.py").box
with_runs = browse.datasets_holding(db, BOX.item_kinds, with_runs=BOX.with_runs)
if not with_runs:
    st.info("No runs yet. Score a dataset with `./foil score DATASET --model ARCH ...` or import per-instance results.")
    st.stop()

dataset = st.selectbox("Dataset", with_runs, key=BOX.key)
db_path, fingerprint = str(paths.db_path()), store.dataset_fingerprint(db, dataset)
# the tie choice beside the subset choice, or on its own line where the dataset has no subsets (no hole beside it)
offered = offered_subsets(db, db_path, dataset, fingerprint)
left, right = st.columns(2) if len(offered) > 1 else (st.container(), st.container())
with left:
    subset = subset_choice(db, dataset, "scores_subset")
BENCHMARK_RULE = "as the benchmark counts them"
tie_choice = right.selectbox(
    "Ties count",
    [BENCHMARK_RULE, *metrics.TIE_RULES],
    key="scores_ties",
    help="How a comparison whose two scores are equal counts: wrong, right, or half (a fair coin).",
)
summaries = run_summaries(
    db, db_path, dataset, fingerprint, subset, None if tie_choice == BENCHMARK_RULE else tie_choice
)
overview = results.runs_overview(store.list_runs(db, dataset), summaries)
overview_frame = text.blank_missing(pd.DataFrame(overview))
st.dataframe(overview_frame, hide_index=True, width="stretch", column_config=two_decimals(overview_frame))

with st.expander("Delete a run"):
    doomed = st.selectbox("Run to delete", [row["run"] for row in overview], key="delete_run_name")
    sure = st.checkbox(f"Yes, delete {text.md(doomed)} with its scores and stored summaries", key="delete_run_sure")
    if st.button("Delete run", key="delete_run", disabled=not sure):
        deleted = store.delete_run(db, dataset, doomed)
        st.session_state["scores_notice"] = f"Deleted run {text.md(doomed)} ({deleted['scores']:,} item scores)."
        st.session_state.pop("delete_run_sure", None)
        st.rerun()

run_names = [row["run"] for row in overview if "note" not in row]
runs_key = f"scores_runs:{dataset}"
st.session_state[runs_key] = [r for r in st.session_state.get(runs_key, run_names[:2]) if r in run_names]
chosen = st.multiselect("Runs", run_names, key=runs_key)
if not chosen:
    st.stop()
first = next(row for row in overview if row["run"] == chosen[0])
keys = results.overview_metrics(first)
left, right = st.columns(2)
key = left.selectbox("Metric", keys, key=f"scores_metric:{dataset}")
level = "category"
if any("by_type" in summaries[run] for run in chosen):  # BiVLC: types and subtypes, never on one axis
    level = right.radio(
        "Per",
        ["category", "type"],
        horizontal=True,
        key=f"scores_level:{dataset}",
        format_func=lambda v: {"category": "subtype (add_att...)", "type": "type (add, replace, swap)"}[v],
    )
table = pd.DataFrame(results.category_table(summaries, chosen, key, level))
humans = baselines.dataset_baseline(db, dataset)
with_humans = bool(humans and key in humans["metrics"])
if with_humans:
    human_table = pd.DataFrame(results.category_table({"humans": humans}, ["humans"], key, level)).rename(
        columns={"n": "humans n"}
    )
    table = table.merge(human_table, on="category", how="left")
    undecided = table.loc[table["humans n"].isna(), "category"].tolist()
    table["humans n"] = table["humans n"].fillna(0).astype(int)  # whole items, also where a category has none
    st.caption(
        f"Humans: majority answers of {text.md(', '.join(humans['batches']))} on {humans['n']} of the "
        f"{first['n_items']} items (the humans n column); the models' figures are over every item, so the two differ "
        "in sample as well as in who answers. "
        + text.md(baselines.figure_sentence(humans, key))
        + (
            f" No item of {text.md(', '.join(undecided))} has a decided human answer yet: their humans cells are empty."
            if undecided
            else ""
        )
    )
chance = results.chance_levels(summaries[chosen[0]], key, table["category"].tolist())
shown = table.assign(
    **{
        f"{name} 95% CI": table[f"{name} 95% CI"].map(plain_text.interval_text)
        for name in [*chosen, *(["humans"] if with_humans else [])]
    }
)
if with_humans:  # an empty cell, not "None", where a category has no decided item (said in the caption)
    shown["humans"] = text.figure_cells(table["humans"])
# the category stays in view while the runs' columns scroll sideways (three runs are wider than the page)
columns = {**two_decimals(shown), "category": st.column_config.TextColumn(pinned=True)}
st.dataframe(shown, hide_index=True, width="stretch", column_config=columns)
for sentence in results.tie_rules_said(summaries, chosen):
    st.caption(text.md(sentence) + " The ties columns count tied comparisons per category.")
for name in chosen:
    if "over_seeds" in summaries[name]:  # ARO's order sets: one category per seed
        st.caption(text.md(f"{name}: " + results.over_seeds_sentence(summaries[name]["over_seeds"])))

figure = go.Figure(
    [
        go.Bar(
            name=name,
            x=table["category"],
            y=table[name],
            error_y=results.error_bars(table[name], table[f"{name} 95% CI"]),
        )
        for name in chosen
    ]
)
if with_humans:
    figure.add_scatter(
        name=f"humans ({humans['n']} items)",
        x=table["category"],
        y=table["humans"],
        mode="lines+markers",
        line_dash="dot",
        line_color="black",
        error_y=results.error_bars(table["humans"], table["humans 95% CI"]),
    )
if len({c for c in chance if c is not None}) == 1:
    figure.add_hline(
        y=chance[0], line_dash="dash", annotation_text=f"chance {chance[0]:.1f}", annotation_position="top left"
    )  # not over the last bar
elif any(c is not None for c in chance):  # chance differs by category (the number of captions per item)
    figure.add_scatter(
        name="chance",
        x=table["category"],
        y=chance,
        mode="markers",
        marker={"symbol": "line-ew-open", "size": 28, "color": "gray"},
    )
figure.update_layout(barmode="group", yaxis_title=f"{key} (%)", yaxis_range=[0, 100])
st.plotly_chart(text.literal_figure(figure), key="scores_chart")
