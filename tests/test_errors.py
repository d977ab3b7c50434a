"""One exception tree (CONVENTIONS; issue 14): every exception class loopact defines is a
LoopactError, and the tree drawn in errors.py names every class errors.py defines."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import loopact
from loopact import errors


def _modules() -> list[object]:
    mods = []
    for info in pkgutil.walk_packages(loopact.__path__, "loopact."):
        if info.name.endswith("__main__"):
            continue
        try:
            mods.append(importlib.import_module(info.name))
        except ImportError:  # an optional extra that is not installed here
            continue
    return mods


def test_every_exception_class_is_in_the_tree() -> None:
    outside = sorted(
        f"{cls.__module__}.{cls.__qualname__}"
        for mod in _modules()
        for _, cls in inspect.getmembers(mod, inspect.isclass)
        if cls.__module__ == mod.__name__  # type: ignore[attr-defined]
        and issubclass(cls, BaseException)
        and not issubclass(cls, errors.LoopactError)
    )
    assert outside == []


def test_the_drawing_names_every_class() -> None:
    drawn = errors.__doc__ or ""
    defined = [
        name
        for name, cls in inspect.getmembers(errors, inspect.isclass)
        if cls.__module__ == errors.__name__
    ]
    assert [n for n in defined if n not in drawn] == []
