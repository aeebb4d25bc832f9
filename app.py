"""Judge Workbench: build LLM-as-a-judge evaluators against human scores.

Entrypoint and frame: page config, the shared sidebar (database path, active
backend) and the page router. The pages only collect input, call
``judge_engine`` and render what it returns.

Run with ``streamlit run app.py``.
"""

import streamlit as st

st.set_page_config(page_title="Judge Workbench", page_icon=":material/balance:", layout="wide")

pages = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("pages/datasets.py", title="Datasets", icon=":material/table_chart:"),
    st.Page("pages/runs.py", title="Runs", icon=":material/play_circle:"),
    st.Page("pages/compare.py", title="Compare", icon=":material/leaderboard:"),
    st.Page("pages/annotate.py", title="Annotate", icon=":material/rate_review:"),
    st.Page("pages/active_critic.py", title="Active-Critic", icon=":material/psychology:"),
    st.Page("pages/hd_eval.py", title="HD-Eval", icon=":material/account_tree:"),
    st.Page("pages/hpss.py", title="HPSS", icon=":material/travel_explore:"),
    st.Page("pages/hypoeval.py", title="HypoEval", icon=":material/lightbulb:"),
    st.Page("pages/settings.py", title="Settings", icon=":material/settings:"),
]
# the router comes before the sign-in gate: a run stopped before st.navigation shows Streamlit's automatic
# listing of pages/ instead, with app itself offered as a page (and every .py file in pages/: keep modules in ui/)
st.set_option("client.showSidebarNavigation", True)  # the real page list (.streamlit/config.toml hides the automatic one)
page = st.navigation(pages)

# The engine is imported only now, after the router: the first script run of a fresh server imports pandas,
# scikit-learn and the engine (seconds on a loaded machine), and before st.navigation has run the browser shows
# an empty page beside Streamlit's automatic listing of pages/. Later runs find the modules imported already.
with st.spinner(f"Opening {page.title}..."):
    from pages.ui.app_frame import first_run

    with first_run("app"):  # one session at a time until the engine is imported (app_frame.first_run)
        from judge_engine import __version__
        from pages.ui import app_frame, auth, session, widgets

session.init_state()
auth.sign_in()  # who works here: a display name once (local use) or OpenID Connect sign-in (team deployment)

with st.sidebar:
    widgets.bound(st.text_input, "Database file", "settings_db_path",
                  help="SQLite file holding datasets, runs and the LLM call cache. "
                       "Default: $JUDGE_WORKBENCH_DB, else data/workbench.db in a clone, or "
                       "~/.local/share/judge-workbench/workbench.db for an installed package.")
    auth.identity_sidebar()
    st.caption("Backend (change it under Settings)")
    st.text(session.llm_config().label)
    if session.api_key():
        st.caption("An API key is set for this session.")
    st.caption(f"Judge Workbench {__version__}")

app_frame.run_framed(page)
