"""Model scores: per-category metrics of one or more runs, with intervals and the chance line."""

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from analysis import metrics, results
from annotate import baselines, store
from data import paths

db = store.open_db(paths.db_path())
st.title("Model scores")
with_runs = [d["name"] for d in store.list_datasets(db) if store.list_runs(db, d["name"])]
if not with_runs:
    st.info("No runs yet. Score a dataset with `python cli.py score DATASET --model ARCH ...` or import per-instance results.")
    st.stop()

dataset = st.selectbox("Dataset", with_runs, key="scores_dataset")
overview = results.runs_overview(db, dataset)
st.dataframe(pd.DataFrame(overview), hide_index=True, width="stretch")

run_names = [row["run"] for row in overview if "note" not in row]
chosen = st.multiselect("Runs", run_names, default=run_names[:2], key=f"scores_runs:{dataset}")
if not chosen:
    st.stop()
keys = [k for k in results.run_metrics(db, dataset, chosen[0], n_boot=0)["metrics"] if not k.startswith(("mean_", "n_"))]
key = st.selectbox("Metric", keys, key=f"scores_metric:{dataset}")
table = pd.DataFrame(results.category_table(db, dataset, chosen, key))
humans = baselines.dataset_baseline(db, dataset)
series = list(chosen)
if humans and key in humans["metrics"]:
    table["humans"] = [humans["metrics"][key] if c == "(all)" else humans["by_category"].get(c, {}).get(key) for c in table["category"]]
    series.append("humans")
    st.caption(f"Humans: majority answers of {', '.join(humans['batches'])} on {humans['n']} items.")
st.dataframe(table, hide_index=True, width="stretch")

figure = go.Figure([go.Bar(name=name, x=table["category"], y=table[name]) for name in series])
chance = metrics.chance_level(key)
if chance is not None:
    figure.add_hline(y=chance, line_dash="dash", annotation_text=f"chance {chance:.1f}")
figure.update_layout(barmode="group", yaxis_title=f"{key} (%)", yaxis_range=[0, 100])
st.plotly_chart(figure, key="scores_chart")
