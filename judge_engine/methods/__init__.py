"""Methods registered by name.

Direct scoring and G-Eval are imported here; every other module of this package is imported when
:data:`METHODS` first needs it (:class:`~judge_engine.methods.base.MethodRegistry`: by name, the module of that
name; listed, all of them), so a new method only needs its own module with an ``@register``-decorated
:class:`Method` subclass, named as its method is when it should load alone.
"""

import importlib
import pkgutil

from .base import (METHODS, FitContext, Interval, Judge, Method, Options, ParameterDoc, describe_parameters, get_method,
                   judge_warning, reordered, register)
from .direct import DirectScoring
from .geval import GEval

_MODULES = tuple(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_") and m.name != "base")
_ALL_IMPORTED: list[bool] = [False]


def import_methods(name: str | None = None) -> None:
    """Import the method module called ``name`` if there is one (its methods register themselves), or, for
    ``None``, every method module of this package."""
    if name is None:
        if not _ALL_IMPORTED[0]:
            for module in _MODULES:
                importlib.import_module(f"{__name__}.{module}")
            _ALL_IMPORTED[0] = True
    elif name in _MODULES:
        importlib.import_module(f"{__name__}.{name}")


__all__ = ["METHODS", "DirectScoring", "FitContext", "GEval", "Interval", "Judge", "Method", "Options", "ParameterDoc",
           "describe_parameters", "get_method", "import_methods", "judge_warning", "reordered",
           "register"]
