"""What every page shares within one browser session: the store connection, opened once.

The app migrates the store once per process, when the first session opens it; each session then
holds one connection (``session_db``) that its reruns, callbacks and fragments reuse. A new
store path (``FOIL_DB`` changed under a running app, as tests do) opens a new connection.
"""

from __future__ import annotations

import sqlite_utils
import streamlit as st

from foil_studio.data import paths, store

_KEY = "_store_connection"


@st.cache_resource(show_spinner=False)
def _migrated(path: str) -> int:
    """Bring the store at `path` to the current schema, once per process and path."""
    store.open_db(path)
    return store.SCHEMA_VERSION


def session_db() -> sqlite_utils.Database:
    """This session's connection to the app's store (opened on first use, without migrating)."""
    path = str(paths.db_path())
    held = st.session_state.get(_KEY)
    if held is None or held[0] != path:
        _migrated(path)
        held = (path, store.open_db(path, migrate_now=False, shared=True))
        st.session_state[_KEY] = held
    return held[1]
