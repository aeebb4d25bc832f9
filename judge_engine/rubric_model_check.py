"""The judge's own model reads what it generated (issue 65 item 2): one structured request per generated entry.

The rubric checks' rules (:mod:`judge_engine.rubric_checks`) read closed phrase lists of eight languages and the
shape of a text; a capable model reads an entry in any language. On a backend other than the embedded model, each
generated entry is put to the run's own model once, through the one LLM path (so it is cached and counted like
every request), with a JSON schema of seven yes/no questions (:data:`QUESTIONS`). Its verdict becomes a rule's
verdict: an entry the model says instructs the evaluator or refuses is refused (``model_check``); one it says is
not about the judged text's quality, names the scale or the raters, hedges, contradicts itself or lists keywords is
flagged (``model_check``); a person may override either like a rule's. On the embedded model the rules alone
apply (:func:`applies_to` says so): a 135M model cannot tell an order from a criterion.

Bad input has one recorded reason each and the run goes on: an empty reply, a reply that is not the schema's JSON,
a request the server refuses (:class:`~judge_engine.llm.base.RequestRejected`) give a verdict with no answers
(``answered`` False) and the reason; the entry then stands on the rules.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from . import structured
from .llm.base import GenerationParams, LLMError, Request, RequestRejected
from .prompting import fence, load_template

if TYPE_CHECKING:  # the rules' package compiles its phrase lists when imported: a third of `score`'s start-up,
    # where only TITLE is read (runs/rendering.py, the estimate printed first); combine() imports it when it runs
    from .rubric_checks import RubricCheck

RULE = "model_check"
QUESTIONS = ("about_quality", "instructs_evaluator", "names_scale_or_raters", "hedges", "contradicts",
             "lists_keywords", "refuses")
"""What the model is asked of each entry; ``about_quality`` is the one a good entry answers yes."""
REFUSING = ("instructs_evaluator", "refuses")
"""Answers that refuse an entry; the others flag it."""
TITLE = "rubric_model_check"
EMBEDDED_BACKENDS = frozenset({"llamacpp", "fake", "simulated"})
"""Backends the check does not run on: the embedded model (too small to tell an order from a criterion), the
tests' scripted fake (it answers by script; a test of the check names its fake backend otherwise) and the
benchmarks' simulated judge (it models scoring only, so the methods' replicated claims are measured without the
check; a check prompt would be an unrecognised prompt there)."""
MAX_TOKENS = 200


def schema() -> dict[str, Any]:
    """The reply's JSON schema: the seven booleans, the entry's language and a one-sentence reason."""
    props: dict[str, Any] = {q: {"type": "boolean"} for q in QUESTIONS}
    props["language"] = {"type": "string", "minLength": 2, "maxLength": 40}
    props["reason"] = {"type": "string", "minLength": 1, "maxLength": 300}
    return structured.object_schema(TITLE, props)


def applies_to(backend_name: str) -> bool:
    """Whether the model's check runs on this backend (not on the embedded model: the rules alone, said so)."""
    return backend_name not in EMBEDDED_BACKENDS


def backend_name(llm: Any) -> str:
    """The backend the check is decided by for ``llm``: its backend's name, or the one an estimate's rendering
    stands for (:class:`~judge_engine.runs.rendering.Recorder`'s ``stands_for``); "" without an LLM."""
    backend = getattr(llm, "backend", None)
    return str(getattr(backend, "stands_for", "") or getattr(backend, "name", "") or "")


def runs_on(llm: Any) -> bool:
    """Whether the check runs on ``llm`` (an LLM whose backend :func:`applies_to`; no LLM, no check)."""
    name = backend_name(llm)
    return bool(name) and applies_to(name)


@dataclass(frozen=True)
class ModelVerdict:
    """What the model said of one entry."""

    text: str
    answered: bool
    """False when there is no verdict (empty or unreadable reply, refused request): ``reason`` says why."""
    answers: dict[str, bool] = field(default_factory=dict)
    language: str = ""
    reason: str = ""

    @property
    def refuses(self) -> bool:
        return self.answered and any(self.answers.get(q) for q in REFUSING)

    @property
    def doubts(self) -> tuple[str, ...]:
        """The questions whose answer flags the entry."""
        if not self.answered:
            return ()
        return tuple(q for q in QUESTIONS if q not in REFUSING and (
            not self.answers.get(q) if q == "about_quality" else self.answers.get(q)))

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "answered": self.answered, "answers": dict(self.answers),
                "language": self.language, "reason": self.reason, "rule": RULE}


def messages_for(text: str, *, kind: str, aspect_name: str, an_output: str = "a response") -> list[dict[str, str]]:
    """The one request's messages: the entry fenced as data."""
    prompt = load_template(TITLE).render(an_output=an_output, aspect_name=aspect_name or "its quality",
                                         entry_kind=kind.replace("_", " "), entry_block=fence("entry", text))
    return [{"role": "user", "content": prompt}]


def params() -> GenerationParams:
    return GenerationParams(temperature=0.0, max_tokens=MAX_TOKENS, json_schema=structured.as_param(schema()))


def read_reply(text: str, reply: str) -> ModelVerdict:
    """The verdict in a reply; an empty or unreadable one is no verdict, with the reason."""
    if not (reply or "").strip():
        return ModelVerdict(text, False, reason="the model gave an empty reply to the check request")
    try:
        data = json.loads(reply[reply.find("{"): reply.rfind("}") + 1] if "{" in reply else reply)
    except (TypeError, ValueError):
        return ModelVerdict(text, False, reason="the model's reply to the check request is not JSON")
    if not isinstance(data, dict) or not all(isinstance(data.get(q), bool) for q in QUESTIONS):
        return ModelVerdict(text, False, reason="the model's reply to the check request lacks its yes/no answers")
    return ModelVerdict(text, True, {q: bool(data[q]) for q in QUESTIONS}, str(data.get("language") or "")[:40],
                        str(data.get("reason") or "")[:300])


def ask(llm: Any, texts: Sequence[str], *, kind: str, aspect_name: str,
        an_output: str = "a response") -> list[ModelVerdict]:
    """One structured request per entry through the run's LLM (cached, counted); a refused request is no
    verdict with the server's reason, and the others go on."""
    requests = [Request(tuple(messages_for(t, kind=kind, aspect_name=aspect_name, an_output=an_output)), params())
                for t in texts]
    out = []
    for text, request in zip(texts, requests):
        try:
            completion = llm.complete(list(request.messages), request.params)
        except RequestRejected as exc:
            out.append(ModelVerdict(text, False, reason=f"the server refused the check request: {exc.reason}"))
            continue
        except LLMError as exc:
            out.append(ModelVerdict(text, False, reason=f"the check request failed: {exc}"))
            continue
        out.append(read_reply(text, completion.texts[0] if completion.texts else ""))
    return out


def check_with_model(llm: Any, check: RubricCheck, *, kind: str, aspect_name: str, an_output: str = "a response",
                     emit: Any = None) -> RubricCheck:
    """``check`` combined with the model's verdict on its text when the check applies to ``llm``'s backend and the
    rules accepted it (a refused entry costs no request); the verdict is recorded with ``emit("model_check", ...)``,
    a verdict with no answers with its reason."""
    if not check.ok or not runs_on(llm):
        return check
    [said] = ask(llm, [check.text], kind=kind, aspect_name=aspect_name, an_output=an_output)
    if emit:
        emit("model_check", said.to_dict())
    return combine(check, said)


def combine(check: RubricCheck, verdict: ModelVerdict) -> RubricCheck:
    """A rule's verdict with the model's: refused when the model says it instructs the evaluator or refuses,
    flagged for its other doubts; a verdict with no answers adds nothing (its reason is recorded by the caller)."""
    from .rubric_checks import RubricCheck, RubricFlag

    if not check.ok or not verdict.answered:
        return check
    said = f" ({verdict.reason})" if verdict.reason else ""
    if verdict.refuses:
        which = ", ".join(q.replace("_", " ") for q in REFUSING if verdict.answers.get(q))
        return RubricCheck(check.text, False, RULE, f"the judge's own model says it {which}{said}")
    if verdict.doubts:
        which = ", ".join(("not about quality" if q == "about_quality" else q.replace("_", " "))
                          for q in verdict.doubts)
        return check.flagged(RubricFlag(RULE, f"the judge's own model says: {which}{said}"))
    return check


def estimate_calls(n_entries: int, backend: str | None) -> int:
    """Requests the check adds for ``n_entries`` generated entries: one each where it :func:`applies_to` the
    backend, 0 on the embedded model and when no backend is named (a count for no backend in particular)."""
    return int(n_entries) if backend and applies_to(backend) else 0


def passing_reply() -> str:
    """The verdict of a model that finds nothing wrong with an entry: what an estimate's rendering answers the
    check with, so that its fit takes the path a capable model's mostly real entries take."""
    return json.dumps({**{q: q == "about_quality" for q in QUESTIONS}, "language": "en", "reason": "none"})
