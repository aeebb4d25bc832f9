"""sqlite-utils for the store, imported without loading pandas.

sqlite-utils imports pandas whenever it is installed, only to map ``pandas.Timestamp`` values to TEXT columns; the
store never writes one (its rows are JSON, numbers and text), and pandas cost 0.3 s on a quiet machine and 1.0-1.5 s
at load 13 before ``score`` or ``run`` could send its first request (issue 67 item 2). So, when pandas is not loaded
yet, sqlite-utils is imported with pandas marked absent (``sys.modules["pandas"] = None``, which Python's import
system reads as "not installed") and the mark is removed at once; pandas still imports normally afterwards. When
pandas is already loaded (the app, a notebook), sqlite-utils is imported as usual.
"""

from __future__ import annotations

import sys

if "pandas" in sys.modules or "sqlite_utils" in sys.modules:
    from sqlite_utils import Database, Migrations
else:
    sys.modules["pandas"] = None  # type: ignore[assignment]
    try:
        from sqlite_utils import Database, Migrations
    finally:
        if sys.modules.get("pandas", 0) is None:
            del sys.modules["pandas"]

__all__ = ["Database", "Migrations"]
