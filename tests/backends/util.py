"""Helpers for Triton backend tests: compile through pdyn with a recording backend, compare with
eager in an fp32 reference with tolerances per dtype."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import torch
from torch.utils._pytree import tree_leaves

import pdyn
from pdyn.backends.triton import CompiledGraph, triton_backend

TOLERANCES = {torch.float32: (1e-4, 1e-5), torch.float16: (2e-3, 2e-3),
              torch.bfloat16: (2e-2, 2e-2), torch.float64: (1e-7, 1e-7)}
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Recorder:
    """A backend that compiles with Triton and keeps every CompiledGraph."""

    def __init__(self) -> None:
        self.graphs: list[CompiledGraph | None] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        compiled = triton_backend(gm, example_inputs)
        self.graphs.append(getattr(compiled, "pdyn_triton", None))
        return compiled

    @property
    def last(self) -> CompiledGraph:
        graph = self.graphs[-1]
        assert graph is not None, "the graph ran eagerly"
        return graph


def upcast(x: Any) -> Any:
    if isinstance(x, torch.Tensor) and x.dtype in (torch.float16, torch.bfloat16):
        return x.float()
    return x


def assert_matches(out: Any, ref: Any, dtype: torch.dtype | None = None) -> None:
    outs = out if isinstance(out, (tuple, list)) else [out]
    refs = ref if isinstance(ref, (tuple, list)) else [ref]
    assert len(outs) == len(refs)
    for o, r in zip(outs, refs):
        if isinstance(r, torch.Tensor):
            assert o.shape == r.shape, (o.shape, r.shape)
            assert o.dtype == r.dtype, (o.dtype, r.dtype)
            rtol, atol = TOLERANCES.get(dtype or r.dtype, (0, 0))
            torch.testing.assert_close(upcast(o), upcast(r), rtol=rtol, atol=atol, equal_nan=True)
        else:
            assert o == r


def check(fn: Callable[..., Any], *calls: tuple[Any, ...], compiles: int | None = 1,
          kernels: int | None = None) -> Recorder:
    """Run `fn` through pdyn+Triton on each argument tuple; compare with eager (low-precision
    inputs are compared against eager run on fp32 copies)."""
    rec = Recorder()
    compiled = pdyn.optimize(fn, backend=rec)
    for args in calls:
        out = compiled(*args)
        low = next((a.dtype for a in args if isinstance(a, torch.Tensor)
                    and a.dtype in (torch.float16, torch.bfloat16)), None)
        ref = fn(*[upcast(a) for a in args]) if low else fn(*args)
        if low:
            ref = _recast(ref, out)
        assert_matches(out, ref, low)
    if compiles is not None:
        assert pdyn.stats(compiled)["compiles"] == compiles
    if kernels is not None:
        assert rec.last.kernel_count == kernels, rec.last.wrapper_source
    return rec


def _recast(ref: Any, out: Any) -> Any:
    if isinstance(ref, (tuple, list)):
        return type(ref)(_recast(r, o) for r, o in zip(ref, out))
    if isinstance(ref, torch.Tensor) and isinstance(out, torch.Tensor):
        return ref.to(out.dtype)
    return ref


def randn(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, device=DEVICE).to(dtype)


def check_like_eager(fn: Callable[..., Any], *calls: tuple[Any, ...], backend: Any = "triton") -> None:
    """Each call through pdyn raises what eager raises (the same exception type) or returns what
    eager returns, with eager's strides."""
    def same(out: Any, ref: Any) -> None:
        out, ref = tree_leaves(out), tree_leaves(ref)
        assert_matches(out, ref)
        assert_strides(out, ref)

    each_call_like_eager(fn, pdyn.optimize(fn, backend=backend), calls, same)


def each_call_like_eager(fn: Callable[..., Any], compiled: Callable[..., Any], calls: tuple[tuple[Any, ...], ...],
                         same: Callable[[Any, Any], None]) -> None:
    """`compiled(*args)` raises the type eager raises, or `same(its result, eager's)` holds."""
    for args in calls:
        try:
            ref = fn(*args)
        except Exception as e:  # noqa: BLE001  # whatever eager raises, pdyn must raise
            with pytest.raises(type(e)):
                compiled(*args)
            continue
        same(compiled(*args), ref)


def assert_strides(out: Any, ref: Any) -> None:
    outs = out if isinstance(out, (tuple, list)) else [out]
    refs = ref if isinstance(ref, (tuple, list)) else [ref]
    for o, r in zip(outs, refs):
        if isinstance(r, torch.Tensor):
            assert o.stride() == r.stride(), (tuple(o.shape), o.stride(), r.stride())
