"""Backends: callables `(gm, example_inputs) -> compiled`, the contract of torch.compile's custom
backends. Names resolve here; "auto" means "triton" where CUDA is available and "eager" elsewhere.
The Triton backend is imported on first use (importing triton costs time and sets up its
interpreter on machines without a GPU)."""

from __future__ import annotations

from typing import Any, Callable

from pdyn.backends.eager import eager
from pdyn.base.errors import UserError


def triton(gm: Any, example_inputs: list[Any]) -> Callable[..., Any]:
    from pdyn.backends.triton import triton_backend

    return triton_backend(gm, example_inputs)


BACKENDS: dict[str, Callable[..., Any]] = {"eager": eager, "triton": triton}


def resolve(backend: str | Callable[..., Any]) -> Callable[..., Any]:
    if callable(backend):
        return backend
    if backend == "auto":
        import torch

        return BACKENDS["triton" if torch.cuda.is_available() else "eager"]
    if backend not in BACKENDS:
        raise UserError(f"unknown backend {backend!r}; pass one of {sorted(BACKENDS)}, 'auto', or a callable "
                        "(gm, example_inputs) -> compiled")
    return BACKENDS[backend]
