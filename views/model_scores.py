"""Model scores: per-category metrics of one or more runs, with intervals and the chance line."""

from typing import TYPE_CHECKING

import pandas as pd
import plotly.graph_objects as go
import sqlite_utils
import streamlit as st

from analysis import metrics, model_spec, results
from annotate import baselines
from data import paths, store, text
from views.choices import subset_choice
from views.session import session_db

if TYPE_CHECKING:
    from analysis.models import LoadedModel

db = session_db()
st.title("Model scores")


@st.cache_resource(max_entries=2, show_spinner="Loading the model...")
def cached_model(spec: model_spec.ModelSpec) -> "LoadedModel":
    from analysis import models  # torch and open_clip take ~5 s to import: only when asked to score

    return models.load_model(spec)


@st.cache_data(max_entries=16, show_spinner="Computing metrics and intervals...")
def run_summaries(_db: sqlite_utils.Database, db_path: str, dataset: str, fingerprint: str, subset: str | None, ties: str | None) -> dict[str, dict]:
    return results.run_summaries(_db, dataset, subset=subset, ties=ties)


def two_decimals(frame: pd.DataFrame) -> dict:
    """Show the percentages of a table with two decimals (the data keep every digit)."""
    return {c: st.column_config.NumberColumn(format="%.2f") for c in frame.select_dtypes("float").columns}


with st.expander("Score a dataset now"):
    targets = store.dataset_names(db)
    target = st.selectbox("Dataset to score", targets, key="score_dataset") if targets else None
    arch = st.text_input("open_clip architecture", "ViT-B-32", key="score_arch")
    tag = st.text_input("Pretrained tag ('none' for random weights, timing only)", "openai", key="score_tag")
    checkpoint = st.text_input("or a local checkpoint file", "", key="score_checkpoint")
    precision = st.selectbox("Precision", model_spec.PRECISIONS, key="score_precision")
    if target and st.button("Score", key="score_now", type="primary"):
        from analysis import scoring

        spec = model_spec.ModelSpec(arch.strip(), tag.strip() or None, checkpoint.strip() or None, precision)
        bar = st.progress(0.0, text="starting")
        try:
            report = scoring.score_dataset(db, target, cached_model(spec), progress=lambda stage, done, total: bar.progress(done / max(total, 1), text=f"encoding {stage}: {done}/{total}"))
        except (model_spec.ModelUnavailableError, store.StoreError, ValueError) as error:
            st.error(text.md(error))
        else:
            st.success(f"Scored {report.n_items} items as run {text.md(report.run)} in {report.seconds:.1f} s ({report.cache_hits} cached embeddings reused).")

with_runs = store.dataset_names(db, with_runs=True)
if not with_runs:
    st.info("No runs yet. Score a dataset with `python cli.py score DATASET --model ARCH ...` or import per-instance results.")
    st.stop()

dataset = st.selectbox("Dataset", with_runs, key="scores_dataset")
db_path, fingerprint = str(paths.db_path()), store.dataset_fingerprint(db, dataset)
left, right = st.columns(2)
with left:
    subset = subset_choice(db, dataset, "scores_subset")
BENCHMARK_RULE = "as the benchmark counts them"
tie_choice = right.selectbox("Ties count", [BENCHMARK_RULE, *metrics.TIE_RULES], key="scores_ties",
                             help="How a comparison whose two scores are equal counts: wrong, right, or half (a fair coin).")
summaries = run_summaries(db, db_path, dataset, fingerprint, subset, None if tie_choice == BENCHMARK_RULE else tie_choice)
overview = results.runs_overview(store.list_runs(db, dataset), summaries)
st.dataframe(pd.DataFrame(overview), hide_index=True, width="stretch", column_config=two_decimals(pd.DataFrame(overview)))

run_names = [row["run"] for row in overview if "note" not in row]
chosen = st.multiselect("Runs", run_names, default=run_names[:2], key=f"scores_runs:{dataset}")
if not chosen:
    st.stop()
first = next(row for row in overview if row["run"] == chosen[0])
keys = [k for k in first if k not in ("run", "dataset", "model", "pretrained", "kind", "n_items", "note") and not k.startswith(("mean_", "n_"))]
key = st.selectbox("Metric", keys, key=f"scores_metric:{dataset}")
table = pd.DataFrame(results.category_table(summaries, chosen, key))
humans = baselines.dataset_baseline(db, dataset)
with_humans = bool(humans and key in humans["metrics"])
if with_humans:
    table["humans"] = [humans["metrics"][key] if c == "(all)" else humans["by_category"].get(c, {}).get(key) for c in table["category"]]
    st.caption(f"Humans: majority answers of {text.md(', '.join(humans['batches']))} on {humans['n']} items.")
shown = table.assign(**{f"{run} 95% CI": table[f"{run} 95% CI"].map(results.interval_text) for run in chosen})
st.dataframe(shown, hide_index=True, width="stretch", column_config=two_decimals(shown))
for sentence in results.tie_rules_said(summaries, chosen):
    st.caption(text.md(sentence) + " The ties columns count tied comparisons per category.")

figure = go.Figure([go.Bar(name=name, x=table["category"], y=table[name], error_y=results.error_bars(table[name], table[f"{name} 95% CI"]))
                    for name in chosen])
if with_humans:
    figure.add_scatter(name="humans", x=table["category"], y=table["humans"], mode="lines+markers", line_dash="dot", line_color="black")
chance = metrics.chance_level(key)
if chance is not None:
    figure.add_hline(y=chance, line_dash="dash", annotation_text=f"chance {chance:.1f}")
figure.update_layout(barmode="group", yaxis_title=f"{key} (%)", yaxis_range=[0, 100])
st.plotly_chart(text.literal_figure(figure), key="scores_chart")
