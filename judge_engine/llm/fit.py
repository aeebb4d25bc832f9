"""Make a request fit the model's context window by a stated rule, instead of failing on it.

The rule: while the prompt is too long for the context window minus the
reply's ``max_tokens``, the longest fenced judged text (``<<<LABEL>>> ...
<<<END LABEL>>>``, see :func:`judge_engine.prompting.fence`) in the messages
loses the middle of its text: its beginning and end are kept and the cut is
marked in place as ``[... N characters cut to fit the model's context ...]``.
Instructions, rubrics and the answer format are never cut. Without a fenced
text, the middle of the longest message is cut the same way. The number of
characters cut is reported with the completion (``Completion.truncated_chars``)
and counted by the ledger.
"""

from __future__ import annotations

import re
from typing import Callable

from .base import Message

FENCED = re.compile(r"(<<<(?!END )([^<>\n]+)>>>\n)(.*?)(\n<<<END \2>>>)", re.DOTALL)
MARK = "[... {n} characters cut to fit the model's context ...]"
PER_MESSAGE_TOKENS = 8
"""Allowance for the chat template's tokens around each message."""
MAX_ROUNDS = 500
"""Cuts tried at most; one round cuts one text, so a prompt of many judged texts (a batch of
examples) needs a round for each text it shortens."""
MIN_KEEP = 200
"""Characters of a judged text always kept (half at each end)."""


CUT = re.compile(re.escape(MARK).replace(re.escape("{n}"), r"(\d+)"))


def _cut_middle(text: str, remove: int) -> tuple[str, int]:
    """``text`` without ``remove`` more characters from its middle; a text cut before keeps one mark
    counting every character cut, so each round shortens it by ``remove`` (the mark does not grow it)."""
    earlier = CUT.search(text)
    if earlier:
        head, tail, before = text[:earlier.start()], text[earlier.end():], int(earlier.group(1))
    else:
        half = len(text) // 2
        head, tail, before = text[:half], text[half:], 0
    remove = max(0, min(remove, len(head) + len(tail) - MIN_KEEP))
    if remove <= 0:
        return text, 0
    from_head = min(len(head), (remove + 1) // 2)
    from_tail = remove - from_head
    if from_tail > len(tail):
        from_head, from_tail = remove - len(tail), len(tail)
    return head[:len(head) - from_head] + MARK.format(n=before + remove) + tail[from_tail:], remove


def fit_messages(messages: list[Message], *, budget_tokens: int,
                 count_tokens: Callable[[str], int]) -> tuple[list[Message], int]:
    """``messages`` shortened to fit ``budget_tokens``; returns (messages, characters cut)."""
    def size(msgs: list[Message]) -> int:
        return sum(count_tokens(m["content"]) + PER_MESSAGE_TOKENS for m in msgs)

    msgs = [dict(m) for m in messages]
    total_cut = 0
    for _ in range(MAX_ROUNDS):
        used = size(msgs)
        if used <= budget_tokens:
            return msgs, total_cut
        chars = sum(len(m["content"]) for m in msgs)
        excess_chars = int((used - budget_tokens) * chars / max(used, 1) * 1.15) + 32 + len(MARK)
        best = None  # (length, message index, match)
        for i, m in enumerate(msgs):
            for match in FENCED.finditer(m["content"]):
                if best is None or len(match.group(3)) > best[0]:
                    best = (len(match.group(3)), i, match)
        if best is not None:
            _, i, match = best
            body, cut = _cut_middle(match.group(3), excess_chars)
            if cut == 0:
                best = None
            else:
                content = msgs[i]["content"]
                msgs[i]["content"] = content[:match.start(3)] + body + content[match.end(3):]
        if best is None:
            i = max(range(len(msgs)), key=lambda k: len(msgs[k]["content"]))
            body, cut = _cut_middle(msgs[i]["content"], excess_chars)
            if cut == 0:
                break
            msgs[i]["content"] = body
        total_cut += cut
    return msgs, total_cut
