"""Methods registered by name; importing this package registers all of them."""

from .base import METHODS, Interval, Judge, Method, Options, get_method, register
from .direct import DirectScoring
from .geval import GEval

__all__ = ["METHODS", "DirectScoring", "GEval", "Interval", "Judge", "Method", "Options", "get_method", "register"]
