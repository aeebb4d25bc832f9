"""What every metric does to its inputs first: scores as float arrays (``None`` becoming NaN), labels as integer
codes, and a context that silences scipy's degenerate-input warnings and numpy's NaN noise."""

from __future__ import annotations

import math
import warnings
from typing import Any, Hashable, Iterable, Sequence

import numpy as np

from ._records import COEFFICIENTS

# scipy.stats is imported inside the functions that use it: this package is imported by the methods, the runs and
# the exported judge, and scipy.stats took most of a second before `score` or `run` could send its first request
# (issue 67 item 2)


def _scipy_warnings() -> tuple[type[Warning], ...]:
    """scipy's degenerate-input warnings (those this scipy has); scipy.stats is loaded by then, as the code that
    raises them is scipy's."""
    from scipy import stats

    return tuple(w for w in (getattr(stats, "ConstantInputWarning", None),
                             getattr(stats, "NearConstantInputWarning", None),
                             getattr(stats, "DegenerateDataWarning", None)) if w is not None)


class _Quiet:
    """Suppress scipy degenerate-input warnings and numpy NaN/zero-division noise."""

    def __enter__(self) -> "_Quiet":
        self._cm = warnings.catch_warnings()
        self._cm.__enter__()
        for w in _scipy_warnings():
            warnings.simplefilter("ignore", w)
        warnings.simplefilter("ignore", RuntimeWarning)
        self._np = np.errstate(divide="ignore", invalid="ignore")
        self._np.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._np.__exit__(*exc)
        self._cm.__exit__(*exc)


def _as_float_array(values: Iterable[Any], name: str) -> np.ndarray:
    """Convert scores to a float array, ``None`` becoming NaN."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "fiub":
        return np.asarray(values, dtype=float).ravel()
    out = []
    for i, v in enumerate(values):
        if v is None:
            out.append(math.nan)
            continue
        try:
            out.append(float(v))
        except (TypeError, ValueError):
            raise ValueError(f"{name}[{i}] is not a number: {v!r}") from None
    return np.asarray(out, dtype=float)


def _codes(labels: Sequence[Hashable], n: int, name: str) -> tuple[np.ndarray, list[Hashable]]:
    """Map labels to integer codes in order of first appearance."""
    labels = list(labels)
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} entries, expected {n}")
    index: dict[Hashable, int] = {}
    codes = np.empty(n, dtype=np.intp)
    for i, lab in enumerate(labels):
        codes[i] = index.setdefault(lab, len(index))
    return codes, list(index)


def _is_constant(x: np.ndarray) -> bool:
    """True when all values are exactly equal (``len(set(x)) == 1``) or x is empty."""
    return x.size == 0 or bool(np.all(x == x[0]))


def _nan_result() -> dict[str, float]:
    return {m: math.nan for m in COEFFICIENTS}
