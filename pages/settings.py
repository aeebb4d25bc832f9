"""Settings: which LLM backend judges, how it is reached and what it costs (session only)."""

import streamlit as st

from judge_engine.llm import BACKEND_NAMES
from pages import common

common.require_frame()

st.title("Settings")
st.caption("These settings belong to this browser session. Each run stores the backend settings it used "
           "(never the API key).")

st.subheader("LLM backend")
backend = common.bound(st.selectbox, "Backend", "settings_backend", options=list(BACKEND_NAMES),
                       format_func=lambda b: f"{b}: {common.BACKEND_HELP.get(b, '')}")

if backend == "llamacpp":
    common.bound(st.text_input, "Model file (optional)", "settings_model_llamacpp",
                 placeholder="empty = embedded SmolLM2-135M-Instruct",
                 help="Path to another GGUF file. Leave empty for the embedded SmolLM2-135M-Instruct model, "
                      "which takes about 1-3 s per call on a CPU.")
    common.bound(st.number_input, "Context window (tokens)", "settings_n_ctx", min_value=512,
                 max_value=131072, step=512)
elif backend == "openai":
    common.bound(st.text_input, "Base URL", "settings_base_url",
                 placeholder="empty = https://api.openai.com/v1",
                 help="Any OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 for a vLLM server.")
    common.bound(st.text_input, "Model", "settings_model_openai", placeholder="gpt-4o-mini")
    common.bound(st.text_input, "API key", "settings_api_key", type="password",
                 help="Kept in this browser session only: it is passed to the backend and to run workers, "
                      "never saved to the database, logs or exports.")
    common.bound(st.text_input, "Environment variable read when no key is typed", "settings_api_key_env")
else:  # vllm
    st.info("The vLLM backend runs vLLM's offline engine in the run worker. It needs a CUDA GPU and the GPU "
            "extra installed on that host: `pip install -r requirements-gpu.txt`. To use a vLLM *server* "
            "instead, choose the openai backend and point the base URL at it.")
    common.bound(st.text_input, "Model", "settings_model_vllm",
                 placeholder="Hugging Face model id, e.g. Qwen/Qwen2.5-7B-Instruct")

st.subheader("Requests and cost")
cols = st.columns(3)
with cols[0]:
    common.bound(st.number_input, "Concurrency", "settings_concurrency", min_value=1, max_value=256, step=1,
                 help="Requests in flight at once (the embedded model answers one at a time anyway).")
with cols[1]:
    common.bound(st.number_input, "Timeout (s)", "settings_timeout", min_value=1.0, max_value=3600.0, step=10.0)
with cols[2]:
    common.bound(st.number_input, "Retries", "settings_max_retries", min_value=0, max_value=20, step=1)
cols = st.columns(2)
with cols[0]:
    common.bound(st.number_input, "Price per 1k prompt tokens ($)", "settings_price_prompt", min_value=0.0,
                 step=0.0001, format="%.4f")
with cols[1]:
    common.bound(st.number_input, "Price per 1k completion tokens ($)", "settings_price_completion",
                 min_value=0.0, step=0.0001, format="%.4f")

config = common.llm_config()
st.subheader("Active configuration")
st.text(config.label)
with st.expander("All backend settings stored with a run"):
    st.json(config.to_dict())

common.check_backend_button("Test connection", key="settings_test", primary=True)
