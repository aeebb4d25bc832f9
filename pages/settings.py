"""Settings: which LLM backend judges, how it is reached and what it costs (kept in the database, never the key)."""

# ruff: noqa: E402 - the page's heading is drawn before the engine's imports: a page's first visit in a server
# imports them (seconds on a loaded machine) and its heading waited for them (issue 67)
import streamlit as st

from pages.ui import app_frame

app_frame.require_frame()
st.title("Settings")

import os

from judge_engine.llm import (BACKEND_NAMES, STRUCTURED_HELP, STRUCTURED_MODES, LLMError, connection_check,
                              describe_structured_mode)
from judge_engine.llm.availability import backend_problem
from pages.ui import app_frame, auth, messages, session, widgets


@st.cache_data(ttl=10, show_spinner=False, max_entries=8)
def _problem(config, key_given: bool) -> str | None:
    # a server's connection is tried at most every 10 s: each rerun of this page would wait for it otherwise
    return backend_problem(config, api_key="typed" if key_given else None)


st.caption(("Your settings are kept for your account on this workbench" if auth.team_mode() else
            "These settings are kept in the database, for the next visit, tab or restart")
           + ": all but the API key, which stays in this browser session (or the environment). Each run stores "
             "the backend settings it used (never the API key).")
if st.session_state.get("settings_not_kept"):
    st.warning(messages.escape_markdown(f"A change was not kept for the next visit ({st.session_state['settings_not_kept']}); "
                                        "it holds for this session."))

st.subheader("LLM backend")
backend = widgets.bound(st.selectbox, "Backend", "settings_backend", options=list(BACKEND_NAMES),
                        format_func=lambda b: f"{b}: {session.BACKEND_HELP.get(b, '')}")

if backend == "llamacpp":
    widgets.bound(st.text_input, "Model file (optional)", "settings_model_llamacpp",
                  placeholder="empty = embedded SmolLM2-135M-Instruct",
                  help="Path to another GGUF file. Leave empty for the embedded SmolLM2-135M-Instruct model, "
                       "which takes about 1-3 s per call on a CPU.")
    widgets.bound(st.number_input, "Context window (tokens)", "settings_n_ctx", min_value=512,
                  max_value=131072, step=512,
                  help="Tokens of prompt and reply the model sees at once. Longer prompts are cut (and counted in the "
                       "run's summary); a larger window needs more memory and time.")
elif backend == "openai":
    widgets.bound(st.text_input, "Base URL", "settings_base_url",
                  placeholder="empty = https://api.openai.com/v1",
                  help="Any OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 for a vLLM server.")
    widgets.bound(st.text_input, "Model", "settings_model_openai", placeholder="gpt-4o-mini")
    offered = [name for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY") if os.environ.get(name)]
    if offered:
        st.caption(messages.escape_markdown(
            f"The environment sets {' and '.join(offered)}"
            + (f" (base URL {os.environ['OPENAI_BASE_URL']})" if "OPENAI_BASE_URL" in offered else "")
            + ": an empty base URL or API key here uses them."))
    widgets.bound(st.text_input, "API key", "settings_api_key", type="password",
                  help="Kept in this browser session only: it is passed to the backend and to run workers, "
                       "never saved to the database, logs or exports.")
    widgets.bound(st.text_input, "Environment variable read when no key is typed", "settings_api_key_env")
else:  # vllm
    st.info("The vLLM backend runs vLLM's offline engine in the run worker. It needs a CUDA GPU and the GPU "
            "extra installed on that host: `pip install -r requirements-gpu.txt`. To use a vLLM *server* "
            "instead, choose the openai backend and point the base URL at it.")
    widgets.bound(st.text_input, "Model", "settings_model_vllm",
                  placeholder="Hugging Face model id, e.g. Qwen/Qwen2.5-7B-Instruct")

st.subheader("Structured replies")
structured = widgets.bound(
    st.selectbox, "How replies are structured", "settings_structured", options=list(STRUCTURED_MODES),
    format_func=lambda m: f"{m}: {STRUCTURED_HELP[m]}",
    help="Every method asks for its replies in a JSON schema (scores, criteria, hypotheses, ...); this sets "
         "how the schema reaches the model. Where it is not honoured, replies are parsed from free text.")
if structured == "auto":
    st.caption({
        "llamacpp": "Automatic: the embedded model decodes every structured reply under a grammar built from "
                    "its schema: the reply is JSON of that shape unless its token limit cuts it off.",
        "openai": "Automatic: the first request with a schema tries response_format json_schema (OpenAI, vLLM, "
                  "Ollama), then json_object with a schema (llama.cpp's server), then guided_json (older vLLM); "
                  "a server that refuses all three gets the prompt unchanged and the reply is parsed from free "
                  "text. The format that worked is kept from then on (each run learns it with its first request).",
        "vllm": "Automatic: vLLM's guided decoding (structured_outputs or guided_decoding, whichever the "
                "installed vLLM has).",
    }[backend])
elif structured == "off":
    st.caption("Off: no schema is sent; every reply is parsed from free text (the fallback path).")
elif backend != "openai":
    st.caption(f"{structured} is a server format; the {backend} backend uses its own mechanism "
               "(as with auto).")
seen = st.session_state.get("settings_structured_checked", {})
checked = seen.get(session.llm_config().label + "|" + structured)
if checked:
    st.info(messages.escape_markdown(f"Last connection check: structured replies {checked}."))

st.subheader("Requests and cost")
cols = st.columns(3)
with cols[0]:
    widgets.bound(st.number_input, "Concurrency", f"settings_concurrency_{backend}", min_value=1, max_value=256,
                  step=1, help="Requests in flight at once, kept for each backend (default: 32 on a server, 4 on "
                               "the embedded model, which answers one at a time anyway; the vLLM backend sends up "
                               "to 256 uncached requests as one batch). A server that answers 429 gets fewer "
                               "until it stops.")
with cols[1]:
    widgets.bound(st.number_input, "Timeout (s)", "settings_timeout", min_value=1.0, max_value=3600.0, step=10.0,
                  help="Seconds before one request is abandoned and retried (default 30; `score --timeout`).")
with cols[2]:
    widgets.bound(st.number_input, "Retries", "settings_max_retries", min_value=0, max_value=20, step=1,
                  help="Retries with growing waits after a connection error, a rate limit (429) or a server error "
                       "(5xx), default 2; then the request counts as failed: its item is missing with the "
                       "reason while other items are answered, and the run stops when none is.")
cols = st.columns(2)
with cols[0]:
    widgets.bound(st.number_input, "Price per 1k prompt tokens ($)", "settings_price_prompt", min_value=0.0,
                  step=0.0001, format="%.4f", help="For the cost ledger of runs; 0 for a local model.")
with cols[1]:
    widgets.bound(st.number_input, "Price per 1k completion tokens ($)", "settings_price_completion",
                  min_value=0.0, step=0.0001, format="%.4f", help="For the cost ledger of runs; 0 for a local model.")

config = session.llm_config()
st.subheader("Active configuration")
st.text(config.label)
problem = _problem(config, session.api_key() is not None)
if problem:
    st.error(messages.escape_markdown(f"No run can start on this backend now: {problem}"))
with st.expander("All backend settings stored with a run"):
    st.json(config.to_dict())

if st.button("Test connection", key="settings_test", type="primary",
             help="Sends one short request, then one with a tiny schema to learn how structured replies "
                  "are honoured."):
    with st.spinner("Sending two short requests..."):
        try:
            check = connection_check(config, api_key=session.api_key())
        except LLMError as exc:
            st.error(messages.escape_markdown(str(exc)))
        except Exception as exc:  # noqa: BLE001 - any backend failure is shown, not raised
            st.error(messages.escape_markdown(f"{type(exc).__name__}: {exc}"))
        else:
            st.success(messages.escape_markdown(check.message))
            st.session_state.setdefault("settings_structured_checked", {})[
                config.label + "|" + config.structured] = describe_structured_mode(config.structured,
                                                                                   check.structured_mode)
