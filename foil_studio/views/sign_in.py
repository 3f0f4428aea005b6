"""Shown to anyone without a valid token."""

import streamlit as st

st.title("Foil Studio")
if st.session_state.get("token"):
    st.error("This link's token is not valid. Ask the study owner for your personal link.")
st.write("Open your personal link, or paste its token here.")
entered = st.text_input("Token", type="password", key="sign_in_token")
if st.button("Sign in", key="sign_in") and entered:
    st.session_state["token"] = entered.strip()
    st.query_params["token"] = entered.strip()
    st.rerun()
