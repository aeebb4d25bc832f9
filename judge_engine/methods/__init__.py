"""Methods registered by name.

Direct scoring and G-Eval are imported here; every other module of this package is imported when
:data:`METHODS` first needs it (:class:`~judge_engine.methods.base.MethodRegistry`: by name, the module of that
name; listed, all of them), so a new method only needs its own module with an ``@register``-decorated
:class:`Method` subclass, named as its method is when it should load alone.
"""

from .base import (METHODS, FitContext, Interval, Judge, Method, Options, ParameterDoc, describe_parameters, get_method,
                   import_methods, judge_warning, reordered, register)
from .direct import DirectScoring
from .geval import GEval

__all__ = ["METHODS", "DirectScoring", "FitContext", "GEval", "Interval", "Judge", "Method", "Options", "ParameterDoc",
           "describe_parameters", "get_method", "import_methods", "judge_warning", "reordered",
           "register"]
