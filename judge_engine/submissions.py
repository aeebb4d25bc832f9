"""One click, one action: a submission's token is claimed once, in the store.

Part of the store: the SQL here touches the ``submissions`` table only (its primary key is the token, so a
second row with the same token cannot exist). It lives beside :mod:`judge_engine.store` because that module
is at the project's 700-line limit.

A page issues a token when it draws a button (``pages/ui/once.py``) and hands it with the click. Clicked
twice before the page is drawn again, the button sends the same token twice: :func:`once` does the action
for the first and, for the second, returns what the first did, without doing it again. The check and the
action's writes share one write transaction (``BEGIN IMMEDIATE``), so two processes or threads with the same
token cannot both act: whichever comes second waits for the first to commit and then finds its row. A wait or
a disabled button would not do: Streamlit runs the second click's script after the first one's, with the
first one's writes already done and its "started" message not yet shown.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable

from .store import Store

__all__ = ["once", "claimed"]


def claimed(store: Store, token: str) -> dict[str, Any] | None:
    """What the submission ``token`` did (the result :func:`once` recorded); None when it was never made."""
    rows = list(store.db.query("select result from submissions where token = ?", [token]))
    return json.loads(rows[0]["result"]) if rows else None


def once(store: Store, token: str, kind: str, action: Callable[[], dict[str, Any]], *, actor: str = "",
         still_there: Callable[[dict[str, Any]], bool] | None = None) -> tuple[dict[str, Any], bool]:
    """Do ``action`` for the submission ``token`` unless it was done already; ``(result, first)``.

    ``action`` returns a JSON-native record of what it did (e.g. the runs it created); it runs inside the
    store's write transaction (its own writes nest as a savepoint), so its writes and the token's row are
    committed together or not at all: an action that raises leaves the token unclaimed, and the same
    click may be tried again. ``still_there``: whether what an earlier submission made still exists (a run
    deleted meanwhile); when it does not, the token is claimed anew and the action done again, since
    returning a deleted run would leave the person with nothing. An empty token always acts.
    """
    if not token:
        return action(), True
    with store.write() as db:
        rows = list(db.query("select result from submissions where token = ?", [token]))
        if rows:
            result = json.loads(rows[0]["result"])
            if still_there is None or still_there(result):
                return result, False
            db.execute("delete from submissions where token = ?", [token])
        result = action()
        # a plain insert: the primary key refuses a second row for the token whatever happens above
        db.execute("insert into submissions (token, kind, result, actor, created) values (?, ?, ?, ?, ?)",
                   [token, kind, json.dumps(result), actor, time.time()])
    return result, True
