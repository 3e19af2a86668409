"""Library code pdyn never traces: it runs as Python, as torch runs it, around the user's code.

`torch.distributed` and `torch.nn.parallel` (DDP's forward and reducer, FSDP2's sharding hooks,
collectives) drive C++ state, process groups and autograd hooks that a graph cannot hold; torch.compile
skips them too. The rule is by module, not by class: a function, a module hook or a wrapper's
`forward` defined under one of `UNTRACED` runs as is. Who applies it: `pdyn.optimize` (a wrapper
module: its children are optimized instead), the translator (a call is a graph break that runs the
call) and module calls (a module with such hooks runs with them, its forward optimized on its own).
"""

from __future__ import annotations

import functools
from typing import Any

UNTRACED: tuple[str, ...] = ("torch.distributed", "torch.nn.parallel")


def untraced_module(name: str | None) -> bool:
    """Whether a Python module of this name is under one of `UNTRACED`."""
    return name is not None and any(name == p or name.startswith(p + ".") for p in UNTRACED)


def untraced(fn: Any) -> str | None:
    """The module of `fn` (a function, a bound method, a partial) where pdyn does not trace it, else None."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    fn = getattr(fn, "__func__", fn)
    name = getattr(fn, "__module__", None)
    if not isinstance(name, str):
        globals_ = getattr(fn, "__globals__", None)
        name = globals_.get("__name__") if isinstance(globals_, dict) else None
    return name if untraced_module(name) else None
