"""Helpers shared by the pages: session settings, the store, cached readers, tables.

Nothing here holds business logic: it reads the session's settings, opens the
:class:`~judge_engine.store.Store`, calls engine functions and turns their
records into the DataFrames the pages display. Session keys start with
``settings_`` (backend and database settings), ``datasets_`` or ``runs_``.

The API key typed on the Settings page lives in ``st.session_state`` only. It
is handed to :func:`judge_engine.runs.start_run` and
:func:`judge_engine.llm.check_connection` and never written anywhere else.
"""

from __future__ import annotations

import getpass
import hashlib
import math
import os
import re
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd
import streamlit as st

from judge_engine import data
from judge_engine.llm import BACKEND_NAMES, STRUCTURED_MODES, LLMConfig, LLMError, check_connection
from judge_engine.records import Dataset, RunRecord, RunSummary, Verdict
from judge_engine.runs import effective_status
from judge_engine.store import Store, default_db_path

# --------------------------------------------------------------------------- settings

_CONFIG_DEFAULTS = LLMConfig()

SETTINGS_DEFAULTS: dict[str, Any] = {
    "settings_backend": _CONFIG_DEFAULTS.backend,
    "settings_model_llamacpp": "",
    "settings_model_openai": "gpt-4o-mini",
    "settings_model_vllm": "",
    "settings_base_url": "",
    "settings_api_key_env": _CONFIG_DEFAULTS.api_key_env,
    "settings_api_key": "",
    "settings_concurrency": _CONFIG_DEFAULTS.concurrency,
    "settings_timeout": float(_CONFIG_DEFAULTS.timeout),
    "settings_max_retries": _CONFIG_DEFAULTS.max_retries,
    "settings_n_ctx": _CONFIG_DEFAULTS.n_ctx,
    "settings_structured": _CONFIG_DEFAULTS.structured,
    "settings_price_prompt": float(_CONFIG_DEFAULTS.price_prompt_per_1k),
    "settings_price_completion": float(_CONFIG_DEFAULTS.price_completion_per_1k),
}
"""Session settings and their defaults (the database path is added at run time)."""

BACKEND_HELP = {
    "llamacpp": "Embedded llama.cpp model on this machine (default: SmolLM2-135M-Instruct, no server needed).",
    "openai": "Any OpenAI-compatible server: api.openai.com, a vLLM or llama.cpp server, LM Studio, ...",
    "vllm": "vLLM's offline engine inside the worker process (needs a CUDA GPU).",
}


def init_state() -> None:
    """Give every setting its default for this session (called by ``app.py`` on each run)."""
    st.session_state.setdefault("settings_db_path", str(default_db_path()))
    for key, value in SETTINGS_DEFAULTS.items():
        st.session_state.setdefault(key, value)


FRAME_KEY = "_app_frame"
"""True in ``st.session_state`` while ``app.py`` runs the current page."""

APP_PATH = Path(__file__).resolve().parent.parent / "app.py"


def require_frame() -> None:
    """Make sure the page runs inside ``app.py`` (its sidebar and ``st.navigation``).

    Streamlit still auto-discovers a ``pages/`` folder next to the entrypoint
    until a script run of the server process calls ``st.navigation``: a
    browser that opens ``/runs`` right after a server start (and every
    ``AppTest`` run) gets ``pages/runs.py`` run on its own, with the legacy
    page list. Such a run executes ``app.py`` instead, in the same script run
    (so widget clicks are not lost); ``app.py`` registers the real pages and
    runs the requested one, then this outer run stops.
    """
    if st.session_state.get(FRAME_KEY):
        return
    code = compile(APP_PATH.read_text(encoding="utf-8"), str(APP_PATH), "exec")
    exec(code, {"__name__": "__main__", "__file__": str(APP_PATH)})  # noqa: S102 - our own entrypoint
    st.stop()


def run_framed(page: Any) -> None:
    """Run ``page`` (from ``st.navigation``) inside the frame; used by ``app.py``."""
    from judge_engine.store import ReadOnly

    st.session_state[FRAME_KEY] = True
    try:
        page.run()
    except ReadOnly as exc:  # a viewer reached a save the page does not guard: one message, nothing written
        st.error(escape_markdown(str(exc)))
    finally:
        st.session_state[FRAME_KEY] = False


def widget_key(key: str) -> str:
    """Key of the widget that edits the session value ``key``.

    Streamlit drops a widget's state when the widget is not drawn (e.g. on
    another page), so each setting lives under its own key and its widget
    under ``_w_<key>``, initialised from it; :func:`keep` copies edits back.
    """
    init_state()
    wkey = f"_w_{key}"
    if wkey not in st.session_state:
        st.session_state[wkey] = st.session_state[key]
    return wkey


def keep(key: str) -> None:
    """``on_change`` callback: store the widget's new value under ``key``."""
    st.session_state[key] = st.session_state[f"_w_{key}"]


def bound(widget: Callable[..., Any], label: str, key: str, **kwargs: Any) -> Any:
    """Draw ``widget(label, ...)`` bound to the session value ``key`` (see :func:`widget_key`)."""
    return widget(label, key=widget_key(key), on_change=keep, args=(key,), **kwargs)


def set_value(key: str, value: Any) -> None:
    """Set a bound session value from code (before its widget is drawn in this run)."""
    st.session_state[key] = value
    st.session_state.pop(f"_w_{key}", None)


# --------------------------------------------------------------------------- keeping a curator's place


def remembered_tabs(labels: list[str], key: str) -> Any:
    """``st.tabs(labels)`` that stay on the tab the person chose whenever the page reruns.

    Plain tabs are chosen in the browser only: the rerun after a Save, which
    shows a message above them, brings back the first tab, and the person
    loses the list they were curating. These tabs report the choice to the
    server (``on_change``), which keeps it in the session value ``key`` (see
    :func:`bound`) and draws that tab open on every run, also after a visit
    to another page.
    """
    st.session_state.setdefault(key, labels[0])
    if st.session_state[key] not in labels:
        set_value(key, labels[0])
    return st.tabs(labels, key=widget_key(key), on_change=keep, args=(key,))


def db_path() -> Path:
    """The database file of this session (sidebar setting; default ``default_db_path()``)."""
    init_state()
    text = str(st.session_state["settings_db_path"]).strip()
    return Path(text).expanduser() if text else default_db_path()


def get_store() -> Store:
    """Open the session's database; shows an error and stops the page if it cannot be opened.

    A team deployment's viewer gets a read-only store: whatever page or
    engine function tries to save through it is refused (see
    :class:`judge_engine.store.ReadOnly`).
    """
    path = db_path()
    try:
        return Store(path, read_only=None if can_edit() else identity())
    except (OSError, sqlite3.Error) as exc:
        st.error(escape_markdown(f"Cannot open the database {path}: {exc}. Change the path in the sidebar."))
        st.stop()
        raise  # unreachable: st.stop() raises


def llm_config() -> LLMConfig:
    """The :class:`LLMConfig` built from the Settings page (no secret in it)."""
    init_state()
    s = st.session_state
    backend = s["settings_backend"] if s["settings_backend"] in BACKEND_NAMES else _CONFIG_DEFAULTS.backend
    return LLMConfig(
        backend=backend,
        model=str(s.get(f"settings_model_{backend}", "")).strip(),
        base_url=str(s["settings_base_url"]).strip() if backend == "openai" else "",
        api_key_env=str(s["settings_api_key_env"]).strip() or _CONFIG_DEFAULTS.api_key_env,
        concurrency=int(s["settings_concurrency"]),
        timeout=float(s["settings_timeout"]),
        max_retries=int(s["settings_max_retries"]),
        n_ctx=int(s["settings_n_ctx"]),
        structured=s["settings_structured"] if s["settings_structured"] in STRUCTURED_MODES
        else _CONFIG_DEFAULTS.structured,
        price_prompt_per_1k=float(s["settings_price_prompt"]),
        price_completion_per_1k=float(s["settings_price_completion"]),
    )


def api_key() -> str | None:
    """The API key typed for this session, or None (the backend then reads its environment variable)."""
    init_state()
    key = str(st.session_state.get("settings_api_key") or "").strip()
    return key or None


def check_backend_button(label: str, *, key: str, primary: bool = False) -> None:
    """A button that sends one short request to the session's backend and shows the answer or the error."""
    if not st.button(label, key=key, type="primary" if primary else "secondary"):
        return
    with st.spinner("Sending one short request..."):
        try:
            st.success(escape_markdown(check_connection(llm_config(), api_key=api_key())))
        except LLMError as exc:
            st.error(escape_markdown(str(exc)))
        except Exception as exc:  # noqa: BLE001 - any backend failure is shown, not raised
            st.error(escape_markdown(f"{type(exc).__name__}: {exc}"))


# --------------------------------------------------------------------------- who is working

IDENTITY_KEY = "identity_name"
"""The session's display name (local use) or signed-in identity (team deployment)."""
ROLE_KEY = "identity_role"
"""``editor`` or ``viewer``."""
USER_ENV = "JUDGE_WORKBENCH_USER"
"""A display name for local use that is then not asked for (scripts, tests)."""


def _secrets_section(name: str) -> dict[str, Any]:
    """A section of ``.streamlit/secrets.toml``; empty when there is no secrets file (local use).

    A secrets file that exists but cannot be read fails closed: the page says
    why and stops, rather than opening a team deployment without sign-in.
    """
    try:
        return dict(st.secrets[name]) if name in st.secrets else {}
    except Exception as exc:  # noqa: BLE001 - Streamlit raises its own error types here
        if getattr(exc, "error_id", None) == "no-secrets-found":
            return {}
        st.error(escape_markdown(f"The secrets file cannot be read ({exc}), so sign-in cannot be set up; the workbench "
                       "stays closed until it is fixed."))
        st.stop()
        raise  # unreachable: st.stop() raises


def team_mode() -> bool:
    """True when ``.streamlit/secrets.toml`` has an ``[auth]`` section: sign-in through OpenID Connect."""
    return bool(_secrets_section("auth"))


def role_of(email: str, allow: dict[str, Any]) -> str | None:
    """``editor``, ``viewer`` or None (not allowed in) for ``email`` under the ``[workbench]`` allow-list.

    ``editors`` and ``viewers`` are lists of e-mail addresses (case does not
    matter); ``"*"`` in a list lets every signed-in person in with that role.
    Someone in both lists is an editor.
    """
    email = (email or "").strip().lower()
    for role in ("editor", "viewer"):
        names = {str(x).strip().lower() for x in allow.get(f"{role}s") or []}
        if email and (email in names or "*" in names):
            return role
    return None


def sign_in() -> None:
    """Establish who works in this session; called by ``app.py`` before any page.

    Team deployment (``[auth]`` in secrets): not signed in, the page offers
    sign-in (``st.login``) and stops; signed in but on neither allow-list
    (``[workbench] editors`` / ``viewers``), it says so and offers sign-out.
    Local use: the display name comes from ``$JUDGE_WORKBENCH_USER`` or is
    asked for once (prefilled with the login name) and kept in the session.
    """
    if team_mode():
        if not st.user.is_logged_in:
            st.title("Judge Workbench")
            st.write("Sign in to work on this workbench.")
            if st.button("Sign in", key="identity_login", type="primary"):
                st.login()
            st.stop()
        email = str(st.user.get("email") or "")
        role = role_of(email, _secrets_section("workbench"))
        if role is None:
            st.error(escape_markdown(f"{email or 'This account'} is not on this workbench's list of editors or viewers. "
                           "Ask whoever runs it to add you."))
            if st.button("Sign out", key="identity_logout_refused"):
                st.logout()
            st.stop()
        st.session_state[IDENTITY_KEY] = email
        st.session_state[ROLE_KEY] = role
        return
    st.session_state[ROLE_KEY] = "editor"
    if st.session_state.get(IDENTITY_KEY):
        return
    preset = os.environ.get(USER_ENV, "").strip()
    if preset:
        st.session_state[IDENTITY_KEY] = preset
        return
    st.title("Judge Workbench")
    with st.form("identity_form"):
        name = st.text_input("Your name (recorded with every label, edit and run you make)",
                             value=_login_name(), key="identity_input", max_chars=80)
        if st.form_submit_button("Continue", type="primary"):
            if name.strip():
                st.session_state[IDENTITY_KEY] = name.strip()
                st.rerun()
            st.error("Enter a name first.")
    st.stop()


def _login_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""


def identity() -> str:
    """Who works in this session (display name or signed-in e-mail); empty before :func:`sign_in`."""
    return str(st.session_state.get(IDENTITY_KEY) or os.environ.get(USER_ENV, "") or "")


def can_edit() -> bool:
    """False for a team deployment's viewer."""
    return st.session_state.get(ROLE_KEY, "editor") != "viewer" or not team_mode()


def actor() -> str:
    """The name every save records, for the one place that decides who may save.

    A viewer (or a session without a name) is refused here with one message
    and the page stops, before anything is written.
    """
    if not can_edit():
        st.error(escape_markdown(f"{identity()} may view this workbench but not change it; nothing was saved."))
        st.stop()
    name = identity()
    if not name:
        st.error("Give your name first (sidebar), so your change says who made it.")
        st.stop()
    return name


def identity_sidebar() -> None:
    """Who is working, their role, and (local use) a way to change the name; sign-out in a team deployment."""
    if team_mode():
        st.caption(escape_markdown(f"Signed in as {identity()} ({st.session_state.get(ROLE_KEY, '')})"))
        if st.button("Sign out", key="identity_logout"):
            st.logout()
        return
    st.text_input("Your name", key="identity_name",
                  help="Recorded with every label, edit and run you make in this session.")


# --------------------------------------------------------------------------- messages


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#|~$:])")
_MD_LINE_START = re.compile(r"^(\s*)(\d*)([-+=>.)])", re.MULTILINE)


def escape_markdown(text: str) -> str:
    """Escape Markdown so that ``st.error``/``st.success`` show ``text`` literally.

    Escapes emphasis, code, links, HTML-looking tags, headings, tables,
    strikethrough, LaTeX (``$``), Streamlit's ``:color[...]``/``:icon:``
    directives and list markers at the start of a line.
    """
    escaped = _MD_SPECIAL.sub(r"\\\1", str(text))
    return _MD_LINE_START.sub(lambda m: m.group(1) + m.group(2) + "\\" + m.group(3), escaped)


def flash(kind: str, text: str, *, at: str | None = None) -> None:
    """Queue a message for the next run of the page (survives ``st.rerun()``).

    With ``at``, the message is shown where the page calls ``show_flash(at)``
    (beside the Save that caused it) instead of at the top: a person curating
    far down a page sees the outcome where they are, and nothing is inserted
    above them that would push the list they are reading down.
    """
    if at is None:
        st.session_state.setdefault("_flash", []).append((kind, text))
    else:
        st.session_state.setdefault("_flash_at", {})[at] = (kind, text)


def show_flash(at: str | None = None) -> None:
    """Show and clear the queued messages: the page-top ones, or with ``at`` the ones queued for that place.

    Called without ``at`` at the top of every page run, it also hands the
    placed messages to this run; a placed message whose place was not drawn
    in that run (the item is gone) is shown at the top of the next one, so
    no message is lost.
    """
    if at is not None:
        # always one placeholder, message or not: the elements after it keep their places between runs, so the
        # browser does not hand one item's open/closed state to its neighbour
        box = st.empty()
        kind, text = st.session_state.get("_flash_now", {}).pop(at, (None, None))
        if kind:
            getattr(box, kind)(escape_markdown(text))
        return
    for kind, text in list(st.session_state.pop("_flash", [])) + list(
            st.session_state.pop("_flash_now", {}).values()):
        getattr(st, kind)(escape_markdown(text))
    st.session_state["_flash_now"] = st.session_state.pop("_flash_at", {})


# --------------------------------------------------------------------------- rubric-check flags


def flag_text(flags: Iterable[dict[str, Any]] | None) -> str:
    """The flags of a generated rubric entry in words: "reason (rule); reason (rule)"; "" when it has none.

    ``flags`` are the ``{rule, reason}`` dicts the rubric checks attach to an
    entry they let through with a doubt (:mod:`judge_engine.rubric_checks`);
    a rule reads with spaces ("no quality"). Plain text, for a table cell:
    Markdown goes through :func:`flag_caption`.
    """
    parts: list[str] = []
    for flag in flags or []:
        rule = str(flag.get("rule") or "").replace("_", " ").strip()
        reason = str(flag.get("reason") or "").strip()
        part = f"{reason} ({rule})" if reason and rule else reason or rule
        if part and part not in parts:
            parts.append(part)
    return "; ".join(parts)


def flag_caption(flags: Iterable[dict[str, Any]] | None) -> str:
    """"Flagged: reason (rule); ..." as Markdown for ``st.caption``; "" when there is no flag.

    Escaped: a reason can quote the generated text (a name, a score it states).
    """
    text = flag_text(flags)
    return escape_markdown(f"Flagged: {text}") if text else ""


def flags_by(entries: Iterable[dict[str, Any]] | None, field: str = "text") -> dict[str, list[dict[str, Any]]]:
    """The flags of ``Judge.state["flagged"]`` entries, by each entry's ``field`` (its text, or its name)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for entry in entries or []:
        out.setdefault(str(entry.get(field) or ""), []).extend(entry.get("flags") or [])
    return out


# --------------------------------------------------------------------------- cached readers


@st.cache_data(max_entries=8, show_spinner=False)
def _load_dataset(path: str, name: str, stamp: tuple[Any, ...]) -> Dataset:
    return Store(path).load_dataset(name)


def load_dataset(store: Store, name: str) -> Dataset:
    """``store.load_dataset(name)``, cached until the dataset or its aspect definitions change."""
    rows = [r for r in store.list_datasets() if r["name"] == name]
    if not rows:
        return store.load_dataset(name)  # raises NotFound with the engine's message
    row = rows[0]
    stamp = (row["created"], row["n_samples"], row.get("version"), repr(row["aspects"]))
    return _load_dataset(str(store.path), name, stamp)


def human_dataset(store: Store, name: str, aggregate: str = "imported") -> Dataset:
    """Dataset ``name`` with the human score of ``aggregate`` (a run's ``human_aggregate``): the cached
    imported dataset, with the stored labels applied when the aggregate is not ``imported``."""
    from judge_engine import annotations

    dataset = load_dataset(store, name)
    chosen = annotations.parse_aggregate(aggregate)
    if chosen.kind == "imported":
        return dataset
    return annotations.apply_aggregate(dataset, store.annotations(name), chosen, store.experts())


@st.cache_data(max_entries=16, show_spinner=False)
def _load_verdicts(path: str, run_id: int, version: int) -> list[Verdict]:
    return Store(path).load_verdicts(run_id)


def load_verdicts(store: Store, run: RunRecord) -> list[Verdict]:
    """The verdicts of ``run``, cached by (database, run id, run version)."""
    return _load_verdicts(str(store.path), run.id, int(run.version or 0))


# --------------------------------------------------------------------------- uploads and imports


def upload_dir(db: Path) -> Path:
    """``data/uploads`` next to the database."""
    return Path(db).parent / "uploads"


def save_upload(db: Path, filename: str, content: bytes) -> Path:
    """Save an uploaded file under ``uploads/<content hash>/<name>`` and return its path.

    The name keeps only its last component and safe characters; the hash
    folder means two different files of the same name never overwrite each
    other, and saving the same content again is a no-op.
    """
    name = Path(str(filename).replace("\\", "/")).name
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", name).lstrip(".") or "upload.csv"
    digest = hashlib.sha256(content).hexdigest()[:16]
    path = upload_dir(db) / digest / name
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".part")
        tmp.write_bytes(content)
        tmp.replace(path)
    return path


def dataset_name_from(filename: str) -> str:
    """A default dataset name for a file: its stem, lower case, safe characters only."""
    stem = Path(str(filename)).stem
    return re.sub(r"[^a-z0-9_-]+", "_", stem.lower()).strip("_") or "dataset"


def import_table(store: Store, path: str | Path, *, name: str, input_col: str, output_col: str,
                 score_cols: list[str], group_col: str | None = None, system_col: str | None = None,
                 id_col: str | None = None, context_col: str | None = None, reference_col: str | None = None,
                 aspect_ranges: dict[str, tuple[float, float]] | None = None, task: str = "",
                 progress: Callable[[int, int], Any] | None = None, dialect: data.CsvDialect | None = None,
                 duplicates: str = "keep") -> tuple[Dataset, list[str]]:
    """Import a user table into ``store`` under ``name``; returns (dataset, warnings).

    Raises ``ValueError`` (before reading the file) if the name is empty or
    already taken, and :class:`judge_engine.data.DataImportError` for any
    problem with the file. Nothing is written unless the whole file imports,
    so an existing dataset is never touched. ``dialect`` (None: detected) and
    ``duplicates`` ("keep" or "merge") are passed to :func:`judge_engine.data.load_table`.
    """
    name = name.strip()
    if not name:
        raise ValueError("give the dataset a name")
    if store.has_dataset(name):
        raise ValueError(f"a dataset named {name!r} already exists; choose another name "
                         "(the stored one is kept as it is)")
    warnings: list[str] = []
    dataset = data.load_table(path, name=name, input_col=input_col, output_col=output_col,
                              score_cols=list(score_cols), group_col=group_col, system_col=system_col,
                              id_col=id_col, context_col=context_col, reference_col=reference_col,
                              aspect_ranges=aspect_ranges or None, task=task, progress=progress,
                              warnings=warnings, dialect=dialect, duplicates=duplicates)
    store.save_dataset(dataset)  # replace=False: refuses a name taken meanwhile
    return dataset, warnings


@st.cache_data(max_entries=8, show_spinner=False)
def _duplicates(path: str, stamp: tuple[float, int], input_col: str, output_col: str,
                dialect: tuple[str, str, str] | None) -> list[list[int]]:
    return data.find_duplicates(path, input_col=input_col, output_col=output_col,
                                dialect=data.CsvDialect(*dialect) if dialect else None)


def duplicate_rows(path: str | Path, input_col: str, output_col: str,
                   dialect: data.CsvDialect | None) -> list[list[int]]:
    """:func:`judge_engine.data.find_duplicates`, cached per file, columns and dialect (a page rerun
    does not read a large file again)."""
    stat = Path(path).stat()
    key = (dialect.delimiter, dialect.quotechar, dialect.decimal) if dialect else None
    return _duplicates(str(path), (stat.st_mtime, stat.st_size), input_col, output_col, key)


def guess_column(columns: list[str], patterns: Iterable[str]) -> str | None:
    """The first column whose lower-cased name matches one of ``patterns`` (regexes), in pattern order."""
    for pattern in patterns:
        for c in columns:
            if re.fullmatch(pattern, c.strip().lower()):
                return c
    return None


def numeric_columns(columns: list[str], preview: list[dict[str, Any]], decimal: str = ".") -> list[str]:
    """Columns whose preview values all read as numbers (candidates for human scores).

    ``decimal`` is the file's decimal mark (``","`` reads ``3,5`` as a number, as the import will).
    """
    out = []
    for c in columns:
        values = [r.get(c) for r in preview if r.get(c) not in (None, "")]
        if not values:
            continue
        try:
            if all(math.isfinite(v if isinstance(v, (int, float)) else data.parse_number(str(v), decimal))
                   for v in values if not isinstance(v, bool)):
                if not any(isinstance(v, bool) for v in values):
                    out.append(c)
        except (TypeError, ValueError):
            continue
    return out


def preview_frame(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    """Raw preview records as a DataFrame of strings (nested JSON values shown as text)."""
    return pd.DataFrame([{c: _cell(r.get(c)) for c in columns} for r in rows], columns=columns)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


# --------------------------------------------------------------------------- tables


def fmt_time(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else ""


def datasets_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Overview of stored datasets (``store.list_datasets()``)."""
    return pd.DataFrame([{
        "name": r["name"], "task": r["task"], "samples": r["n_samples"],
        "aspects": ", ".join(a["name"] for a in r["aspects"]),
        "natural level": r["natural_level"], "imported": fmt_time(r.get("created")),
    } for r in rows], columns=["name", "task", "samples", "aspects", "natural level", "imported"])


def samples_frame(dataset: Dataset, limit: int = 50) -> pd.DataFrame:
    """The first ``limit`` samples with their human scores, one column per aspect."""
    rows = []
    for s in dataset.samples[:limit]:
        row = {"id": s.id, "group": s.group_id, "system": s.system_id,
               dataset.input_label.lower(): s.input, dataset.output_label.lower(): s.output}
        for a in dataset.aspect_names:
            row[a] = s.human.get(a)
        rows.append(row)
    return pd.DataFrame(rows)


def _num(x: Any) -> float:
    return float("nan") if x is None else float(x)


def _ci(ci: Any) -> str:
    if not ci or len(ci) < 2 or ci[0] is None or ci[1] is None:
        return "–"
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def ordered_levels(summary: RunSummary) -> list[str]:
    """Levels of a run summary, the natural level first."""
    levels = list(summary.levels.keys())
    natural = summary.level
    if natural in levels:
        levels.remove(natural)
        levels.insert(0, natural)
    return levels


def correlation_frame(summary: RunSummary) -> pd.DataFrame:
    """One row per meta-evaluation level (natural first): coefficients, 95% CIs and counts."""
    rows = []
    natural = summary.level
    for level in ordered_levels(summary):
        c = summary.levels[level] or {}
        rows.append({
            "level": f"{level} (natural)" if level == natural else level,
            "pearson": _num(c.get("pearson")), "pearson 95% CI": _ci(c.get("pearson_ci")),
            "spearman": _num(c.get("spearman")), "spearman 95% CI": _ci(c.get("spearman_ci")),
            "kendall": _num(c.get("kendall")), "kendall 95% CI": _ci(c.get("kendall_ci")),
            "n": c.get("n"), "missing": c.get("n_missing"), "groups used": c.get("n_groups"),
            "groups skipped": c.get("groups_skipped"), "systems": c.get("n_systems"),
            # e.g. "too few groups for an interval": the sample-level row beside it has one
            "note": c.get("ci_note") or "",
        })
    return pd.DataFrame(rows)



# --------------------------------------------------------------------------- trust


@st.cache_data(max_entries=64, show_spinner=False)
def _trust(path: str, run_id: int, stamp: tuple[Any, ...]) -> Any:
    from judge_engine.trust import trust_report

    return trust_report(Store(path), run_id)


def run_trust(store: Store, run: RunRecord) -> Any:
    """The :class:`judge_engine.trust.TrustReport` of a finished ``run``; None when it has none (not finished).

    Cached until the run or any finished run of its dataset (a new baseline on the same split) changes.
    """
    if run.status != "finished":
        return None
    others = tuple((r.id, r.version, r.status) for r in store.runs(dataset=run.dataset, limit=10_000))
    try:
        return _trust(str(store.path), run.id, (run.version, others))
    except (ValueError, KeyError) as exc:  # a dataset deleted since, a run without verdicts: say so, no traceback
        st.caption(escape_markdown(f"No trust report for run #{run.id}: {exc}"))
        return None


def _fig(x: float | None) -> str:
    return "undefined" if x is None else f"{x:+.3f}"


def trust_frame(report: Any) -> pd.DataFrame:
    """The figures behind a trust verdict: one row each, all as text (the table mixes correlations and counts)."""
    rows = []
    t = report.training
    if t is not None:
        rows.append({"figure": f"training: {t.measure}", "value": _fig(t.value), "interval / p": "",
                     "rests on": f"{t.n_scored} of {t.n_items} items scored"})
        for text, value in t.parts:
            rows.append({"figure": f"  hypothesis: {text[:120]}", "value": _fig(value), "interval / p": "",
                         "rests on": ""})
    else:
        rows.append({"figure": "training", "value": "none", "interval / p": "",
                     "rests on": "this method learns nothing from the training items"})
    for fig in (report.test, report.sample):
        if fig is None:
            continue
        groups = f", {fig.n_groups} groups" if fig.level == "group" else (
            f", {fig.n_systems} systems" if fig.level == "system" else "")
        rows.append({"figure": f"test {report.statistic}, {fig.level} level", "value": _fig(fig.value),
                     "interval / p": fig.ci_note or _ci(list(fig.ci)), "rests on": f"{fig.n} items{groups}"})
    rows.append({"figure": "missing test scores", "value": f"{report.missing_rate:.0%}", "interval / p": "",
                 "rests on": f"{report.missing} of {report.n} items"})
    for b in report.baselines:
        rows.append({"figure": f"minus baseline {b.label} ({b.level} level)", "value": _fig(b.diff),
                     "interval / p": "" if b.p is None else f"p = {b.p:.3f}" + (" (significantly below)"
                                                                                if b.significantly_below else ""),
                     "rests on": f"{b.n} items on the same split"})
    return pd.DataFrame(rows, columns=["figure", "value", "interval / p", "rests on"])


def trust_panel(report: Any, *, compact: bool = False) -> None:
    """Whether to trust a finished judge: a green box only when no check warns, the reasons otherwise, the figures.

    ``compact`` (one run among several, e.g. the Compare page): the box and a one-line caption, no table.
    """
    if report is None:
        return
    name = f"Run #{report.run_id} ({report.method})"
    if report.verdict == "ok":
        base = (f"not significantly below {len(report.baselines)} baseline run(s) on the same split"
                if report.baselines else "no baseline run on the same split to compare with")
        corr = "test and training correlations are positive" if report.training else "test correlation is positive"
        st.success(escape_markdown(f"{name}: no trust warning: {corr}; {base}."))
    else:
        # reasons can quote generated text (a hypothesis): escaped, never rendered as Markdown
        st.warning(escape_markdown(f"{name}: do not rely on this judge without a closer look:") + "\n"
                   + "\n".join(f"- {escape_markdown(r)}" for r in report.reasons))
    if compact:
        test = report.test
        st.caption(escape_markdown(f"test {report.statistic} ({test.level if test else '-'}) "
                         f"{_fig(test.value if test else None)}; missing {report.missing} of {report.n}"
                         + (f"; training {_fig(report.training.value)} on {report.training.n_scored} items"
                            if report.training else "")))
        return
    # no key: a keyed table made a later button click on the HPSS page go unseen in AppTest
    st.dataframe(trust_frame(report), hide_index=True)
    st.caption("Training: the correlation the judge was chosen on, on the items named. Test: at the dataset's "
               "natural level with a 95% bootstrap interval, or none when too few groups stand behind it (the "
               "sample level is then shown beside it). Baselines: direct scoring and G-Eval runs on the same test "
               "items and backend, paired bootstrap of the difference.")


def finished_box(report: Any, text: str) -> None:
    """A run's "finished" notice: green only when its trust report does not warn."""
    if report is not None and report.verdict != "ok":
        st.warning(escape_markdown(f"{text} The trust checks warn about this judge (see the reasons with its results)."))
    else:
        st.success(escape_markdown(text))


LIVE_STATUSES = ("queued", "running")


def runs_frame(runs: Iterable[RunRecord]) -> pd.DataFrame:
    """Overview of runs (``store.runs()``) with the natural-level correlations of finished ones."""
    rows = []
    for r in runs:
        corr = (r.summary.correlations if r.summary else None) or {}
        ledger = r.ledger  # llm.LedgerTotals: all 0 before the run's first call
        rows.append({
            "run": r.id, "method": r.method, "dataset": r.dataset, "aspect": r.aspect,
            "status": effective_status(r),
            "progress": f"{r.done}/{r.total}" if r.total else "",
            "level": r.summary.level if r.summary else "",
            "pearson": _num(corr.get("pearson")), "spearman": _num(corr.get("spearman")),
            "kendall": _num(corr.get("kendall")),
            "calls": ledger.calls, "cache hits": ledger.cache_hits,
            "dollars": float(ledger.dollars), "created": fmt_time(r.created),
            "human score": r.human_aggregate, "started by": r.actor,
        })
    return pd.DataFrame(rows, columns=["run", "method", "dataset", "aspect", "status", "progress", "level",
                                       "pearson", "spearman", "kendall", "calls", "cache hits", "dollars",
                                       "created", "human score", "started by"])


def agreement_row(result: Any) -> dict[str, Any]:
    """One table row of an :class:`judge_engine.annotations.Agreement`."""
    return {"annotators": len(result.annotators), "items (2+ labels)": result.n_items,
            "Krippendorff's alpha": _num(None if math.isnan(result.alpha) else result.alpha),
            "alpha 95% CI": _ci(None if any(math.isnan(x) for x in result.alpha_ci) else result.alpha_ci),
            **{f"ceiling {m}": _num(None if math.isnan(v) else v) for m, v in result.ceiling.items()},
            "ceiling spearman 95% CI": _ci(None if any(math.isnan(x) for x in result.ceiling_ci["spearman"])
                                           else result.ceiling_ci["spearman"])}


def run_label(run: RunRecord) -> str:
    """A stable label for a run (no status: a select box must not relabel its value as the run progresses)."""
    return f"#{run.id} · {run.method} · {run.dataset}/{run.aspect} · {fmt_time(run.created)}"


def verdicts_frame(dataset: Dataset | None, aspect: str, verdicts: list[Verdict]) -> pd.DataFrame:
    """One row per verdict: sample id, human score, judge score, parse failure flag, raw reply."""
    index = dataset.by_id() if dataset is not None else {}
    rows = []
    for v in verdicts:
        sample = index.get(v.sample_id)
        rows.append({
            "sample id": v.sample_id,
            "human": _num(sample.human.get(aspect)) if sample is not None else float("nan"),
            "judge": float("nan") if v.missing else float(v.score),
            "parse failure": bool(v.missing),
            "raw reply": v.raw, "explanation": v.explanation,
        })
    return pd.DataFrame(rows, columns=["sample id", "human", "judge", "parse failure", "raw reply",
                                       "explanation"])
