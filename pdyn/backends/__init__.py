"""Backends: callables `(gm, example_inputs) -> compiled`, the contract of torch.compile's custom
backends. Names resolve here; "auto" means "eager" until the Triton backend exists."""

from __future__ import annotations

from typing import Any, Callable

from pdyn.backends.eager import eager
from pdyn.errors import UserError

BACKENDS: dict[str, Callable[..., Any]] = {"eager": eager}


def resolve(backend: str | Callable[..., Any]) -> Callable[..., Any]:
    if callable(backend):
        return backend
    if backend == "auto":
        return BACKENDS["eager"]
    if backend not in BACKENDS:
        raise UserError(f"unknown backend {backend!r}; pass one of {sorted(BACKENDS)}, 'auto', or a callable "
                        "(gm, example_inputs) -> compiled")
    return BACKENDS[backend]
