"""Methods registered by name; importing this package registers all of them.

Every module in this package is imported here, so a new method only needs
its own module with an ``@register``-decorated :class:`Method` subclass.
"""

import importlib
import pkgutil

from .base import (METHODS, FitContext, Interval, Judge, Method, Options, ParameterDoc, describe_parameters, get_method,
                   judge_warning, reordered, register)
from .direct import DirectScoring
from .geval import GEval

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_") and _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["METHODS", "DirectScoring", "FitContext", "GEval", "Interval", "Judge", "Method", "Options", "ParameterDoc",
           "describe_parameters", "get_method", "judge_warning", "reordered",
           "register"]
