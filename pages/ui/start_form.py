"""The start form every method page shares: dataset, aspect, split, the method's parameters, estimate, start.

Every field comes from one place: the dataset list from the store and the
built-in benchmarks (a built-in one is imported when chosen), the split in
the same words on every page, and a method's parameter fields from the
method's own description of its parameters (label, help, allowed values,
paper default; :func:`judge_engine.methods.base.describe_parameters`), the
same description the CLI's ``methods`` listing and its error messages use.
Fields that depend on the chosen dataset are keyed by it, so switching the
dataset never leaves a field holding a value the new dataset does not have.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import streamlit as st

from judge_engine import data, runs, trust
from judge_engine.data.splits import MIN_TEST_GROUPS, MIN_TEST_ITEMS_PER_GROUP
from judge_engine.llm import LLMConfig
from judge_engine.llm.availability import backend_problem
from judge_engine.methods import METHODS, describe_parameters
from judge_engine.methods.base import Interval, OptionalInterval, Options, ParameterDoc
from judge_engine.records import Aspect, Dataset
from judge_engine.runs import QUICK_TEST, QUICK_TRAIN, Baseline, RunSpec
from judge_engine.runs import cost as run_cost
from judge_engine.store import NotFound, Store
from pages.ui import auth, fetch_offer, messages, once, readers, session
from pages.ui import glossary


def dependent_key(prefix: str, dataset: str, name: str) -> str:
    """Session key of a field whose choices depend on the dataset: each dataset keeps its own value."""
    return f"{prefix}_{name}__{dataset}"


def choose_dataset(prefix: str, *, slot: Any = st) -> Dataset | None:
    """Stored datasets and the built-in benchmarks in one list; a built-in one is imported when chosen, or offered
    for download when it is not here (None then: the page waits for the download)."""
    store = session.get_store()
    stored = [r["name"] for r in store.list_datasets()]
    builtin = [b for b in data.BENCHMARKS if b not in stored]
    here = set(data.available_benchmarks())

    def label(n: str) -> str:
        if n in stored:
            return n
        return f"{n} (built-in, imported when chosen)" if n in here else f"{n} (built-in, not downloaded)"

    name = slot.selectbox("Dataset", stored + builtin, key=f"{prefix}_dataset", format_func=label,
                          help="Your imported datasets, then the built-in meta-evaluation benchmarks. Import "
                               "your own on the Datasets page.")
    if name is None:
        return None
    if name not in stored and name not in here:  # not an error: offered for download, with source and license
        fetch_offer.offer(name, key=f"{prefix}_fetch_{name}")
        return None
    try:
        if not store.has_dataset(name):
            with st.spinner(f"Importing the built-in benchmark {name}..."):
                runs.ensure_dataset(store, name)
            st.rerun()  # once: the list then shows it among the stored datasets, not as "imported when chosen"
        return readers.load_dataset(store, name)
    except (ValueError, OSError, NotFound) as exc:
        st.error(messages.escape_markdown(f"Dataset {name} could not be loaded: {exc}"))
        return None


def choose_aspect(prefix: str, dataset: Dataset, *, label: str = "Aspect to judge", slot: Any = st) -> Aspect:
    """One of the dataset's human aspects, with the definition the prompts will use."""
    name = slot.selectbox(label, dataset.aspect_names, key=dependent_key(prefix, dataset.name, "aspect"),
                          help="The human score the judge learns from and is measured against. Its definition "
                               "is edited on the Datasets page.")
    aspect = dataset.aspect(name)
    st.caption(messages.escape_markdown(f"{aspect.name} ({aspect.low:g}-{aspect.high:g}): "
                            f"{aspect.definition or 'no definition; the prompts use the name'}"))
    return aspect


@dataclass(frozen=True)
class SplitChoice:
    train_size: int
    test_size: int
    seed: int


def split_fields(prefix: str, dataset: Dataset, *, train: int = 30, test: int = 40,
                 train_help: str = "") -> SplitChoice:
    """Training items, test items and the split's seed, in the same words on every page."""
    n = len(dataset.samples)
    train_value = min(train, n // 2)
    c = st.columns(3)
    train_size = c[0].number_input(
        "Training items", 0, max(0, n - 1), train_value, key=dependent_key(prefix, dataset.name, "train"),
        help="Human-scored items the method learns from (direct scoring learns nothing and needs none). "
             + train_help + " Test items come from other inputs than these, so the judge is measured on texts "
             "about sources it has not seen.")
    test_size = c[1].number_input(
        "Test items", 1, max(1, n - 2), min(test, max(1, n - 2), max(1, n - train_value)), key=dependent_key(prefix, dataset.name, "test"),
        help="Items the finished judge scores; its agreement with the humans is measured on them. Whole groups "
             "(all outputs for one input) are kept together.")
    seed = c[2].number_input("Split seed", 0, 1_000_000, 0, key=f"{prefix}_split_seed",
                             help="Which items land in training and test. The same seed and sizes give the same "
                                  "split, so runs started separately can be compared.")
    return SplitChoice(int(train_size), int(test_size), int(seed))


def _field(doc: ParameterDoc, key: str, value: Any, *, off_because: str = "") -> Any:
    constraint = doc.constraint
    if isinstance(constraint, Options):
        choices = list(constraint.values)
        if set(choices) == {True, False}:
            if off_because:  # its own key: the person's choice comes back when the other option is undone
                st.checkbox(doc.label, value=False, key=f"{key}_off", disabled=True,
                            help=f"Off: {off_because}. {doc.help}")
                return False
            return st.checkbox(doc.label, value=bool(value), key=key, help=doc.help)
        return st.selectbox(doc.label, choices, index=choices.index(value) if value in choices else 0, key=key,
                            format_func=lambda v: doc.choices.get(v, "automatic" if v is None else str(v)),
                            help=doc.help)
    if isinstance(constraint, Interval):
        optional = isinstance(constraint, OptionalInterval)
        kind = constraint.kind
        low = None if constraint.low is None else kind(constraint.low)
        high = None if constraint.high is None else kind(constraint.high)
        step = 1 if kind is int else 0.05
        shown = None if value is None else kind(value)
        got = st.number_input(doc.label, min_value=low, max_value=high, value=shown, step=step, key=key,
                              help=doc.help, placeholder="automatic (see help)" if optional else None,
                              format=None if kind is int else "%.3f")
        return None if got is None else kind(got)
    raise TypeError(f"{doc.name} has no form field (its value is a {doc.kind})")


def drawable(doc: ParameterDoc) -> bool:
    """Whether a parameter is a single number or choice a form field can hold (lists and texts are not)."""
    return isinstance(doc.constraint, (Options, Interval))


def parameter_fields(method: str, prefix: str, names: Iterable[str], *, values: dict[str, Any] | None = None,
                     columns: int = 3, turned_off_by: dict[str, tuple[str, str]] | None = None) -> dict[str, Any]:
    """Fields for ``names`` of ``method``'s parameters, from the method's description; returns their values.

    ``turned_off_by``: a yes/no parameter that another one, drawn before it, turns off while it is ticked
    (``{"reasoning": ("weighted", "why")}``): drawn unticked and disabled, with the reason in its help.
    """
    docs = {d.name: d for d in describe_parameters(METHODS[method])}
    values = values or {}
    turned_off_by = turned_off_by or {}
    names = [n for n in names if drawable(docs[n])]
    out: dict[str, Any] = {}
    cols = st.columns(columns)
    for i, name in enumerate(names):
        other, why = turned_off_by.get(name, ("", ""))
        with cols[i % columns]:
            out[name] = _field(docs[name], f"{prefix}_p_{name}", values.get(name, docs[name].default),
                               off_because=why if other and out.get(other) else "")
    return out


def other_parameters(method: str, shown: Iterable[str]) -> list[str]:
    """The method's form-drawable parameters not already in ``shown``, in the method's order."""
    shown = set(shown)
    return [d.name for d in describe_parameters(METHODS[method]) if d.name not in shown and drawable(d)]


def changed(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The parameters that differ from the paper defaults (what a run records as chosen)."""
    defaults = METHODS[method].default_params()
    return {k: v for k, v in params.items() if k not in defaults or v != defaults[k]}


def quick_note(method: str, smaller: dict[str, Any] | None = None, train_size: int = QUICK_TRAIN,
               test_size: int = QUICK_TEST) -> str:
    """What a quick first look changes, in the parameters' own words (``smaller``: what the backend's speed
    made smaller still, ``train_size`` and ``test_size``: its items, see :func:`judge_engine.runs.quick_look`)."""
    docs = {d.name: d for d in describe_parameters(METHODS[method])}
    chosen = {**METHODS[method].quick_params, **(smaller or {})}
    idle = METHODS[method].idle_parameters(chosen)
    # None is "no subset" for the settings a look makes smaller (validation items, items to rate each candidate on).
    # "full run", not "paper": some defaults are ours where the paper gives none (HPSS's reply limits).
    parts = [f"{docs[k].label.lower()} {v} (full run {'all' if docs[k].default is None else docs[k].default})"
             for k, v in chosen.items() if k not in idle]
    test = (f"{test_size} test items (read by source, as SummEval: at least {MIN_TEST_ITEMS_PER_GROUP} from "
            f"each of {MIN_TEST_GROUPS} sources)")
    return ", ".join([f"{train_size} training and {test}"] + parts)


@st.cache_data(ttl=30, show_spinner=False, max_entries=16)
def _method_speed(db_path: str, method: str, llm: LLMConfig) -> tuple[float | None, str]:
    return runs.method_speed(Store(db_path), method, llm)


def backend_speed(llm: LLMConfig, method: str) -> tuple[float | None, str]:
    """Seconds per counted request of ``method`` on ``llm``'s backend, read at most every 30 s (it scans the
    runs; a form draws several estimates per rerun)."""
    return _method_speed(str(session.get_store().path), method, llm)


@st.cache_data(ttl=30, show_spinner=False, max_entries=16)
def _quick_look(db_path: str, spec: RunSpec, baselines: tuple[Baseline, ...],
                params: dict[str, Any] | None) -> runs.QuickLook:
    return runs.quick_look(Store(db_path), spec, baselines, params)


def backend_ready(llm: LLMConfig) -> bool:
    """False, with the problem and its fix on the page, when ``llm``'s backend cannot work here
    (:func:`judge_engine.llm.availability.backend_problem`; a server's connection is tried at the start)."""
    problem = backend_problem(llm, api_key=session.api_key(), reach=False)
    if problem:
        st.error(messages.escape_markdown(f"No run can start on {llm.label}: {problem}"))
        st.page_link("pages/settings.py", label="Open Settings", icon=":material/settings:")
    return not problem


def estimate_box(spec: RunSpec) -> runs.Duration | None:
    """Requests and minutes before any cache hit; None (with the reason shown) when the spec is refused."""
    store = session.get_store()
    if not backend_ready(spec.llm):
        return None
    try:
        duration = runs.estimate_duration(store, spec, speed=backend_speed(spec.llm, spec.method))
    except (ValueError, NotFound) as exc:
        st.error(messages.escape_markdown(str(exc)))
        return None
    cost = run_cost.expected(store, spec, duration=duration)
    m = st.columns(4)
    m[0].metric("LLM requests to fit", f"{duration.fit_calls:,}",
                help="Upper bound for fitting the full configuration set in this form, before cache hits (a "
                     "request already made is answered by the cache). A quick first look sends fewer: its own "
                     "count is beside its button.")
    m[1].metric("LLM requests to score the test items", f"{duration.score_calls:,}", help=glossary.HELP["LLM requests to score the test items"])
    m[2].metric("Time on this backend", duration.label or "unknown",
                help=messages.escape_markdown(f"For the full configuration: {duration.describe()}"))
    priced = spec.llm.price_prompt_per_1k or spec.llm.price_completion_per_1k
    m[3].metric("Expected cost", run_cost.dollars(cost.dollars) if priced else "no price set",
                help="Before cache hits, at the prices per 1,000 tokens under Settings.")
    st.caption(messages.escape_markdown(f"Backend: {spec.llm.label} (change it under Settings). {duration.describe()}. "
                            f"Expected: {run_cost.describe(cost, spec.llm)} ({cost.basis}). "
                            "A call already made is answered by the cache and not paid again."))
    busy_caption(spec.llm, "this run")
    conclusive_caption(spec, "This run")
    return duration


def conclusive_caption(spec: RunSpec, what: str) -> None:
    """Says so before it starts when ``spec``'s test split cannot end in "ok", and what would
    (:func:`judge_engine.trust.split_note`)."""
    try:
        note = trust.split_note(runs.ensure_dataset(session.get_store(), spec.dataset), spec)
    except (ValueError, NotFound):
        return  # the estimate above names what is wrong with the spec
    if note:
        st.caption(messages.escape_markdown(f"{what} cannot conclude: {note}"))


def busy_caption(llm: LLMConfig, what: str) -> None:
    """Says so when other runs are using ``llm``'s one-call-at-a-time model now
    (:func:`judge_engine.runs.busy_with`): work started meanwhile takes turns with them."""
    note = runs.busy_note(runs.busy_with(session.get_store(), llm), llm, what=what)
    if note:
        st.caption(messages.escape_markdown(note))


def start(spec: RunSpec, *, baselines: Sequence[str | Baseline] = (), judge: Any = None, split: Any = None,
          label: str = "", key: str = "start") -> int | None:
    """Start ``spec`` (and ``baselines`` on its split) through the engine; flashes what started; the run's id.

    Once per click: the submission's token (:func:`pages.ui.once.token`, the same while the button ``key``
    would submit the same thing) makes a second click of a double click return the run the first started.
    """
    store = session.get_store()
    token = once.token(key, (spec, tuple(baselines), judge, split, label))
    try:
        started = runs.launch(store, spec, judge=judge, split=split, baselines=baselines, actor=auth.actor(),
                              api_key=session.api_key(), token=token, reach=True)
    except (ValueError, NotFound) as exc:
        st.error(messages.escape_markdown(str(exc)))
        return None
    main = started[0]
    if main.repeated:
        messages.flash("info", f"Run #{main.run_id}{label} was started by this click already; nothing new was "
                               "started (change a setting to start another).")
        return main.run_id
    words = [f"Started run #{main.run_id}{label}."]
    wanted = [b if isinstance(b, Baseline) else Baseline(b) for b in baselines]  # launch keeps their order
    for s, b in zip(started[1:], wanted):
        title = b.title or (METHODS[s.method].title if s.method in METHODS else s.method)
        words.append(f"Baseline {title}: run #{s.run_id}" + (" (already on this split, reused)." if s.reused else "."))
    for s in started:
        if s.worker_error:
            words.append(f"Run #{s.run_id} was created but its worker could not start ({s.worker_error}); "
                         "resume it under Runs.")
    messages.flash("warning" if any(s.worker_error for s in started) else "success", " ".join(words))
    return main.run_id


def start_button(label: str, key: str, *, missing: str = "") -> bool:
    """The primary start button; when something is missing it is disabled and says what."""
    clicked = st.button(label, type="primary", key=key, disabled=bool(missing))
    if missing:
        st.caption(messages.escape_markdown(f"{label} is unavailable: {missing}"))
    return clicked


PEER = "memalign"
"""MLflow's own alignment (MemAlign), offered beside the baselines as the peer a method is compared against."""


def peer_checkbox(prefix: str) -> tuple[str, ...]:
    """``("memalign",)`` when the person asks for MLflow's own alignment on the run's split and backend (off by
    default: it needs MLflow and DSPy, and its prompts are long), else ``()``; disabled, saying why, where it cannot
    run here."""
    from judge_engine.integrations.memalign_peer import peer_missing

    missing = peer_missing()
    chosen = st.checkbox("Also run MLflow's MemAlign as a peer", value=False, key=f"{prefix}_peer",
                         disabled=bool(missing),
                         help="MLflow's default judge alignment, run on exactly this run's split and backend, its "
                              "calls and cost counted like the method's: the trust report and Compare measure the "
                              "method against it. One already on this split is reused.")
    if missing:
        st.caption(messages.escape_markdown(f"MLflow's alignment peer is unavailable here: {missing}."))
    return (PEER,) if chosen and not missing else ()


def _baselines(baselines: Sequence[str | Baseline] | Callable[[dict[str, Any]], Sequence[str | Baseline]],
               params: dict[str, Any]) -> tuple[Baseline, ...]:
    chosen = baselines(params) if callable(baselines) else baselines
    return tuple(b if isinstance(b, Baseline) else Baseline(b) for b in chosen)


def quick_start(method: str, spec: RunSpec, *, key: str,
                baselines: Sequence[str | Baseline] | Callable[[dict[str, Any]], Sequence[str | Baseline]] = (),
                params: dict[str, Any] | None = None) -> int | None:
    """A one-click first look: ``spec`` with the method's quick parameters and a small split, sized to the
    backend's speed (:func:`judge_engine.runs.quick_look`), its time with the baselines shown.

    ``baselines`` may be a function of the look's parameters (HPSS's base prompt takes the search's settings):
    it is asked with the method's quick parameters for the estimate, then with the chosen look's."""
    if backend_problem(spec.llm, api_key=session.api_key(), reach=False):
        return None  # no look offered on a backend that cannot work here: the estimate box below says why
    wanted = _baselines(baselines, {**spec.params, **METHODS[method].quick_params, **(params or {})})
    try:
        look = _quick_look(str(session.get_store().path), spec, wanted, params)
        if callable(baselines):
            wanted = _baselines(baselines, look.spec.params)
    except (ValueError, NotFound) as exc:
        st.caption(messages.escape_markdown(f"No quick first look here: {exc}"))
        return None
    duration = look.estimate.duration
    minutes = duration.label or "time unknown"
    note = quick_note(method, look.smaller, look.train_size, look.test_size)
    clicked = st.button(f"Quick first look ({minutes})", key=key,
                        help=messages.escape_markdown(f"Starts at once with {note}: {duration.describe()}. "
                                          "The same procedure as the paper's, smaller; the form below runs the "
                                          "full configuration."))
    st.caption(messages.escape_markdown(f"Quick first look: {note}; at most {duration.calls:,} requests"
                                        + (" with the baselines" if wanted else "")
                                        + " (the full configuration's counts are in the estimate below)."))
    busy_caption(spec.llm, "this look")
    conclusive_caption(look.spec, "This look")
    if clicked:
        return start(look.spec, baselines=wanted, label=" (quick first look)", key=key)
    return None
