"""The Streamlit pages (run by path from `foil_studio/app.py`; `registry.py` lists them)."""
