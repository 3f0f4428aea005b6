"""Foil Studio: navigation by role. The token in the link decides which pages exist."""

import streamlit as st

from annotate import roles, store
from data import paths

st.set_page_config(page_title="Foil Studio", page_icon=":material/compare:", layout="wide")

# Query parameters are dropped when st.navigation switches pages: keep the token in the
# session and put it back on every rerun so that a reload of any page still carries it.
token = st.query_params.get("token") or st.session_state.get("token")
if token:
    st.session_state["token"] = token
    st.query_params["token"] = token

db_file = paths.db_path()
role = roles.resolve_role(store.open_db(db_file), token, roles.admin_token(db_file))
st.session_state["role"] = role

if role.kind == "admin":
    pages = [
        st.Page("pages/datasets.py", title="Datasets", icon=":material/dataset:", default=True),
        st.Page("pages/model_scores.py", title="Model scores", icon=":material/bar_chart:"),
        st.Page("pages/batches.py", title="Annotation batches", icon=":material/group_work:"),
    ]
elif role.kind == "annotator":
    pages = [st.Page("pages/annotate.py", title="My queue", icon=":material/checklist:", default=True)]
else:
    pages = [st.Page("pages/sign_in.py", title="Sign in", icon=":material/key:", default=True)]

st.navigation(pages).run()
