"""An annotator's own page: only their assignments, never anyone else's."""

import streamlit as st

from annotate import store
from data import paths

role = st.session_state["role"]
db = store.open_db(paths.db_path())
st.title(f"Welcome, {role.name}")
progress = store.annotator_progress(db, role.annotator_id)
if progress["assigned"] == 0:
    st.info("Nothing is assigned to you yet. Come back to this link when the study owner says so.")
else:
    st.progress(progress["done"] / progress["assigned"], text=f"{progress['done']} of {progress['assigned']} items done")
