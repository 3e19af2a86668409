"""A class's `__dict__` in generated guard code: its mappingproxy, hoisted once per class."""

from __future__ import annotations

import weakref
from typing import Any, Callable

Hoist = Callable[[Any, str], str]

_CLASS_DICTS: dict[int, tuple[Any, Any]] = {}  # id(cls) -> (weakref to cls, its mappingproxy)


def class_dict(cls: type, hoist: Hoist) -> str:
    """Source for `cls.__dict__`: the mappingproxy itself, hoisted (a live view of the class's own
    dict, which a class never replaces: 4x cheaper than making one on each read), unless a
    metaclass defines its own `__dict__`."""
    if any("__dict__" in vars(meta) for meta in type(cls).__mro__ if meta is not type):
        return f"{hoist(cls, cls.__name__)}.__dict__"
    ref, proxy = _CLASS_DICTS.get(id(cls), (None, None))
    if ref is None or ref() is not cls:  # by identity: a metaclass may define `==` (one proxy per class
        key = id(cls)                     # keeps the guard source's constants few)
        ref, proxy = weakref.ref(cls, lambda _: _CLASS_DICTS.pop(key, None)), cls.__dict__
        _CLASS_DICTS[key] = ref, proxy
    return hoist(proxy, f"{cls.__name__}_dict")
