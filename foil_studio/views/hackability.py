"""Hackability audit: can captions alone tell the positive from the negative?"""

import numpy as np
import pandas as pd
import plotly.express as px
import sqlite_utils
import streamlit as st

from foil_studio.analysis import audit as audits
from foil_studio.analysis import blind, results
from foil_studio.annotate import browse
from foil_studio.data import paths, store
from foil_studio.views import registry, text
from foil_studio.views.session import session_db

SCATTER_POINTS = 5_000
BOX = registry.page("views/hackability.py").box


@st.cache_data(show_spinner=False, max_entries=16)
def cached_audit(
    _db: sqlite_utils.Database, db_path: str, dataset: str, fingerprint: str, scorers: tuple[str, ...]
) -> dict:
    encoders = audits.tot_encoders(audits.PAGE_TOT_CLIP)  # TOT of datasets with two positives
    return audits.stored_or_fitted(_db, dataset, scorers=scorers, text_encoders=encoders)


db_file = paths.db_path()
db = session_db()
st.title("Hackability audit")
st.caption(
    "Blind text-only scorers never see the image. A scorer that gives both captions the same score (as a "
    "bag-of-words one must on a word-order swap) cannot choose: such a tie counts half right, a guess, and the "
    "ties are counted beside each accuracy. Far from 50% either way, captions alone give the answer away: "
    "above, the scorer exploits how negatives were written; below, its opposite choice would."
)
names = browse.datasets_holding(db, BOX.item_kinds)
if not names:
    st.info("No dataset with caption pairs yet.")
    st.stop()
left, right = st.columns(2)
dataset = left.selectbox("Dataset", names, key=BOX.key)
compare = right.selectbox("Compare with", ["(none)", *[n for n in names if n != dataset]], key="audit_compare")
scorers = tuple(st.multiselect("Blind scorers", blind.SCORERS, default=["stats", "ngram"], key="audit_scorers"))
if not scorers:
    st.stop()


def run(name: str) -> dict:
    held = audits.audited_count(db, name)
    asked = st.session_state.setdefault("audit_fit_asked", set())
    encoders = tuple(audits.tot_encoders(audits.PAGE_TOT_CLIP))  # their names: nothing is loaded
    stored = audits.stored_audit(db, name, scorers=scorers, text_encoders=encoders)
    if stored is None and held > audits.PAGE_FITS_MOST and name not in asked:
        # a first render never fits a large dataset's scorers unasked: at a million items that took 20 s
        st.info(
            f"The blind scorers have not been fitted on {text.md(name)} with these settings yet: they read "
            f"{held:,} items (a random {audits.AUDIT_MOST:,} of a larger dataset), which takes a while, once; "
            "the result is stored for every visit after."
        )
        if st.button(f"Fit the blind scorers on {text.md(name)} now", key=f"audit_fit:{name}"):
            asked.add(name)
            st.rerun()
        st.stop()
    with st.spinner(f"Blind scorers on {name} (fitted once, then stored)..."):
        return cached_audit(
            db, str(db_file), name, store.items_fingerprint(db, store.get_dataset(db, name)["id"]), scorers
        )


result = run(dataset)
other = run(compare) if compare != "(none)" else None
table = pd.DataFrame(audits.audit_table(result, dataset, scorers, other, compare))
st.dataframe(table.round(2), hide_index=True, width="stretch")
with_retrieval = browse.datasets_holding(db, ("retrieval",))
if dataset in with_retrieval or compare in with_retrieval:
    st.caption(
        "n counts caption pairs: a retrieval item (CREPE, What'sUp, ARO's order sets) gives one pair per negative, "
        "its caption against that negative."
    )
long = table.melt(
    id_vars=["category"],
    value_vars=[c for c in table.columns if c.startswith((f"{dataset} ", f"{compare} "))],
    var_name="dataset and scorer",
    value_name="blind accuracy",
)
chart = px.bar(long, x="category", y="blind accuracy", color="dataset and scorer", barmode="group", range_y=[0, 100])
chart.add_hline(y=50, line_dash="dash", annotation_text="chance 50")
st.plotly_chart(text.literal_figure(chart), key="audit_chart")

if "tot" in result:
    st.subheader("Text only: do the two positives sit closer to each other than to the negative?")
    st.caption(
        "SugarCrepe++'s TOT: cos(p1, p2) > cos(p1, n) and cos(p1, p2) > cos(p2, n) with a text encoder alone "
        "(chance 33.3%). High TOT means the negative can be told apart without the image."
    )
    tot = pd.DataFrame(audits.tot_table(result["tot"], results.run_summaries(db, dataset)))
    st.dataframe(tot.round(2), hide_index=True, width="stretch")
    long_tot = tot.melt(
        id_vars=["category"],
        value_vars=[c for c in tot.columns if c not in ("category", "n")],
        var_name="text encoder",
        value_name="TOT",
    )
    tot_chart = px.bar(long_tot, x="category", y="TOT", color="text encoder", barmode="group", range_y=[0, 100])
    tot_chart.add_hline(y=100 / 3, line_dash="dash", annotation_text="chance 33.3")
    st.plotly_chart(text.literal_figure(tot_chart), key="tot_chart")

if len(scorers) >= 2:
    st.subheader("Score gaps of two blind scorers")
    a, b = scorers[:2]
    gaps = pd.DataFrame(
        {
            a: blind.scaled(np.array(result["gaps"][a])),
            b: blind.scaled(np.array(result["gaps"][b])),
            "category": result["categories"],
        }
    )
    if len(gaps) > SCATTER_POINTS:
        st.caption(f"A random {SCATTER_POINTS:,} of the {len(gaps):,} items are drawn.")
        gaps = gaps.sample(SCATTER_POINTS, random_state=0)
    st.plotly_chart(
        text.literal_figure(
            px.scatter(
                gaps, x=a, y=b, color="category", opacity=0.5, title="positive minus negative, scaled to [-1, 1]"
            )
        ),
        key="gap_scatter",
    )

    st.subheader("Adversarial refinement")
    if dataset not in browse.datasets_holding(db):
        st.caption(
            "Refinement keeps or drops whole caption pairs: this dataset's retrieval items (each caption against "
            "each of its negatives above) are audited, not refined."
        )
        st.stop()
    grid = st.slider("Grid size (even)", 2, 20, 8, step=2, key="refine_grid")
    seed = st.number_input("Seed", value=0, key="refine_seed")
    if st.button("Refine", key="refine"):
        out = paths.output_dir(db_file, "refined", dataset)
        with st.spinner("Refining (the blind scorers are refitted unless this seed's audit is stored)..."):
            refined = audits.refine_dataset(db, dataset, (a, b), grid=int(grid), seed=int(seed), out=out)
        st.write(f"Kept {refined['n_after']} of {refined['n_before']} items.")
        st.dataframe(
            pd.DataFrame(
                {"before": refined["blind_before"], "after": refined["blind_after"], "ties kept": refined["ties_after"]}
            ),
            width="stretch",
        )
        st.caption(
            "After refinement each of the two scorers is right on as many kept items as it is wrong (ties half): 50%, "
            "chance."
        )
        kept = np.array(refined["kept"])
        before_after = pd.DataFrame(
            {"gap": blind.scaled(np.array(refined["gaps"][a])), "set": np.where(kept, "kept", "removed")}
        )
        st.plotly_chart(
            text.literal_figure(
                px.histogram(before_after, x="gap", color="set", barmode="overlay", nbins=60, title=f"{a} gaps")
            ),
            key="refine_hist",
        )
        st.download_button(
            "Refined subset (SugarCrepe layout, zip)",
            paths.zip_folder(out),
            f"{dataset}-refined.zip",
            key="refined_zip",
        )
