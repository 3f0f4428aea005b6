"""Foil Studio: navigation by role. The token in the link decides which pages exist: those
``views/registry.py`` lists for the role.

The pages live in ``views/``: a folder named ``pages/`` beside this script makes Streamlit serve
every file in it directly (its legacy multipage mode), without running this role check first.
"""

import streamlit as st

# Every registry a plugin can add to, imported so that a refused plugin is said on every page.
from foil_studio.analysis import metric_families, scorers  # noqa: F401
from foil_studio.annotate import batches, crowd_studies, roles, task_types  # noqa: F401
from foil_studio.data import formats, item_kinds, paths, plugins, store  # noqa: F401
from foil_studio.views import warm_up
from foil_studio.views.registry import pages_for
from foil_studio.views.session import session_db

st.set_page_config(page_title="Foil Studio", page_icon=":material/compare:", layout="wide")

db_file = paths.db_path()
try:
    paths.files_dir(db_file)  # a PostgreSQL store needs $FOIL_FILES
    db = session_db()
except (store.StoreError, paths.FilesFolderUnset) as error:
    st.error(str(error))
    st.stop()

# A crowd study link (?study=...&PROLIFIC_PID=...) registers the worker and becomes their token.
study, worker = st.query_params.get("study"), st.query_params.get("PROLIFIC_PID")
if study and worker and "token" not in st.session_state:
    try:
        st.session_state["token"] = crowd_studies.join_crowd(db, study, worker)["token"]
        st.session_state["crowd"] = {k: st.query_params.get(k) for k in ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")}
    except batches.BatchError as error:
        st.error(str(error))
        st.stop()  # a participant is told why, and not shown the admin's sign-in form

# Query parameters are dropped when st.navigation switches pages: keep the token in the
# session and put it back on every rerun so that a reload of any page still carries it.
token = st.query_params.get("token") or st.session_state.get("token")
if token:
    st.session_state["token"] = token
    st.query_params["token"] = token

try:
    admin = roles.admin_token(db_file)
except roles.AdminTokenError as error:
    st.error(str(error))
    st.stop()
role = roles.resolve_role(db, token, admin)
st.session_state["role"] = role

pages = []
for page in pages_for(role.role_name):
    if not page.default:
        pages.append(st.Page(page.path, title=page.title, icon=page.icon))
        continue
    # Streamlit serves the landing page at `/` only: its own address (`/datasets`), typed or bookmarked,
    # showed "Page not found" over it. A hidden page of the same file answers there; the landing page
    # takes another name (a page's name must be unique), which nothing links to.
    pages.append(st.Page(page.path, title=page.title, icon=page.icon, default=True, url_path=f"{page.url_path}_home"))
    pages.append(st.Page(page.path, title=page.title, icon=page.icon, url_path=page.url_path, visibility="hidden"))
navigation = st.navigation(pages)
st.sidebar.markdown("**Foil Studio**")
st.sidebar.caption(
    "Annotate, score and inspect vision-language compositionality benchmarks. Every command: "
    f"`{paths.command_name()} --help` in a terminal."
)
if role.role_name == "admin" and (refused := plugins.refusal_lines()):
    several = len(refused) > 1
    st.sidebar.warning(
        f"{len(refused)} plugin entry point{'s' if several else ''} refused; the rest of Foil Studio works without "
        f"{'them' if several else 'it'} (`{paths.command_name()} plugins`)."
    )
    with st.sidebar.expander("Why"):
        st.markdown("\n".join(f"- {line}" for line in refused))
navigation.run()
warm_up.start_once()  # after the first page is drawn: the statistics libraries, for the pages that need them
