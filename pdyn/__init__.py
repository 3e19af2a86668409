"""pdyn: a JIT frontend for PyTorch programs whose shapes change from call to call.

The public API only: `optimize`, `explain`, `stats`, `reset`, `Unsupported`, `config`.
"""

from __future__ import annotations

import functools
import types
from typing import Any, Callable

import torch

from pdyn.base import logs
from pdyn.backends import resolve
from pdyn.backends.cudagraphs import with_cudagraphs
from pdyn.base.config import Config, config
from pdyn.base.errors import RecompileError, Unsupported, UserError
from pdyn.base.untraced import untraced
from pdyn.controls import error_on_graph_break, set_stance
from pdyn.hook.compile_frame import title_of
from pdyn.hook.eval_frame import CACHES, RECORDERS, CodeCache, Frame, Recorder, make_wrapper
from pdyn.explain import ExplainOutput
from pdyn.shapes.runtime_asserts import check, check_is_size

__all__ = ["optimize", "explain", "stats", "reset", "mark_dynamic", "mark_static", "graph_break", "check", "check_is_size", "Unsupported",
           "UserError", "config", "Config", "set_stance", "error_on_graph_break", "RecompileError", "mark_unbacked"]

logs.apply(config)
MODES = (None, "default", "reduce-overhead")


def optimize(fn: Any = None, *, backend: str | Callable[..., Any] = "auto", dynamic: bool | None = None,
             fullgraph: bool = False, mode: str | None = None, recompile_limit: int | None = None) -> Any:
    """Compile `fn` (a function, a bound method or an nn.Module) on its first call.

    Used bare (`@pdyn.optimize`) or with arguments (`@pdyn.optimize(backend="eager")`). An
    nn.Module is returned itself, with its `forward` optimized: same parameters, same state_dict.
    A wrapper from torch.distributed or torch.nn.parallel (DDP) keeps its own forward and has the
    modules it holds optimized instead (`pdyn/base/untraced.py`).
    `mode="reduce-overhead"` replays each compiled graph from CUDA graphs (as torch.compile's);
    `mode=None` (or "default") does so where `pdyn.config.cudagraphs` is on. `recompile_limit`:
    this function's compiles before it runs eagerly (default `pdyn.config.recompile_limit`).
    """
    if dynamic not in (None, False, True):
        raise UserError(f"dynamic must be None, False or True, not {dynamic!r}")
    if mode not in MODES:
        raise UserError(f"mode must be one of {sorted(m for m in MODES if m)} or None, not {mode!r}")
    if recompile_limit is not None and (not isinstance(recompile_limit, int) or recompile_limit < 1):
        raise UserError(f"recompile_limit must be a positive int, not {recompile_limit!r}")
    compiled_backend = with_cudagraphs(resolve(backend), always=mode == "reduce-overhead")
    if fn is None:
        return lambda f: optimize(f, backend=backend, dynamic=dynamic, fullgraph=fullgraph, mode=mode,
                                  recompile_limit=recompile_limit)
    return _optimize(fn, compiled_backend, fullgraph, None, dynamic, recompile_limit)


def _optimize(fn: Any, backend: Callable[..., Any], fullgraph: bool, cache: CodeCache | None,
              dynamic: bool | None = None, limit: int | None = None) -> Any:
    if isinstance(fn, torch.nn.Module):
        forward = type(fn).forward
        if untraced(forward) is not None:  # DDP: its Python runs as torch runs it (pdyn/base/untraced.py)
            for child in fn.children():
                _optimize(child, backend, fullgraph, cache, dynamic, limit)
            return fn
        if not isinstance(forward, types.FunctionType):
            raise UserError(f"{type(fn).__name__}.forward is not a Python function; pdyn cannot trace it")
        optimized = _optimize(forward, backend, fullgraph, cache, dynamic, limit)
        fn.forward = types.MethodType(optimized, fn)  # type: ignore[method-assign]
        return fn
    if isinstance(fn, types.MethodType):
        return types.MethodType(_optimize(fn.__func__, backend, fullgraph, cache, dynamic, limit), fn.__self__)
    if isinstance(fn, functools.partial):  # the function is compiled; the bound arguments stay Python's
        return functools.partial(_optimize(fn.func, backend, fullgraph, cache, dynamic, limit), *fn.args, **fn.keywords)
    call = getattr(type(fn), "__call__", None)
    if not isinstance(fn, (types.FunctionType, type)) and isinstance(call, types.FunctionType):
        return types.MethodType(_optimize(call, backend, fullgraph, cache, dynamic, limit), fn)  # a callable object
    if not isinstance(fn, types.FunctionType):
        raise UserError(f"pdyn.optimize takes a function, a bound method, a functools.partial, an object with a "
                        f"Python __call__ or an nn.Module, not {type(fn).__name__}")
    fn = getattr(fn, "_pdyn_original", fn)
    frame = Frame(fn, backend, config, fullgraph, cache, dynamic, recompile_limit=limit)
    if cache is None:  # the user's function (explain's private cache warns of nothing)
        frame.cache.root = config
    return make_wrapper(frame)


def graph_break() -> None:
    """End the graph here: pdyn compiles the graph so far, runs this call, and traces on afresh.

    Does nothing when called eagerly. (The tracer knows it by name and module.)
    """


def mark_dynamic(t: torch.Tensor, dim: int) -> None:
    """Keep `t`'s `dim` symbolic: a Python read of its value breaks the graph instead of specializing."""
    _mark(t, dim, "_pdyn_dynamic_dims")


def mark_unbacked(t: torch.Tensor, dim: int) -> None:
    """`t`'s `dim` is a symbol at every size, 0 and 1 included: no compile specializes it to 0 or 1
    (a question whose answer differs at 0 or 1, such as a broadcast, is a guard), and a Python read
    of its value breaks the graph (as `mark_dynamic`)."""
    _mark(t, dim, "_pdyn_unbacked_dims")


def mark_static(t: torch.Tensor, dim: int) -> None:
    """Compile for `t`'s current size in `dim` (TENSOR_MATCH_STATIC), as torch.compile's mark_static."""
    _mark(t, dim, "_pdyn_static_dims")


def _mark(t: torch.Tensor, dim: int, attr: str) -> None:
    if not isinstance(t, torch.Tensor):
        raise UserError(f"pdyn.{attr.strip('_').split('_')[1]}_... takes a tensor, not {type(t).__name__}")
    if not -t.dim() <= dim < max(t.dim(), 1):
        raise UserError(f"dim {dim} is out of range for a tensor with {t.dim()} dims")
    marks = set(getattr(t, attr, ()))
    marks.add(dim % max(t.dim(), 1))
    setattr(t, attr, frozenset(marks))


def reset() -> None:
    """Forget every compiled entry and counter."""
    for cache in CACHES.values():
        cache.clear()


def _cache_of(fn: Any) -> CodeCache:
    target = fn.forward if isinstance(fn, torch.nn.Module) else fn.func if isinstance(fn, functools.partial) else fn
    frame = getattr(target, "_pdyn_frame", None)
    if frame is None:
        raise UserError(f"{fn!r} is not optimized by pdyn; pass what pdyn.optimize returned")
    return frame.cache  # type: ignore[no-any-return]


def stats(fn: Any = None) -> dict[str, int]:
    """Counters (`pdyn.base.logs.COUNTERS`: frames, compiles, recompiles, cache_hits, graph_breaks,
    eager_fallbacks, graphs, ops_captured, frames_without_graph; from the backend: kernels,
    graphs_on_torch, nodes_on_torch, library_calls; see docs/backends.md) for one optimized function's own
    code, or summed over all optimized code (resume functions and callees included) since the last reset."""
    if fn is not None:
        return _cache_of(fn).stats()
    total = logs.empty_counters()
    for cache in CACHES.values():
        for key, value in cache.stats().items():
            total[key] += value
    return total


def explain(fn: Any, *, backend: str | Callable[..., Any] = "eager") -> Callable[..., ExplainOutput]:
    """`explain(fn)(*args, **kwargs)` compiles `fn` afresh for this one call and reports what it did."""
    original = getattr(fn, "_pdyn_original", fn)

    def run(*args: Any, **kwargs: Any) -> ExplainOutput:
        previous_forward = original.__dict__.get("forward") if isinstance(original, torch.nn.Module) else None
        cache = CodeCache(_code_of(original))
        target = _optimize(original, resolve(backend), False, cache)
        recorder = Recorder()
        RECORDERS.append(recorder)
        try:
            target(*args, **kwargs)
        finally:
            RECORDERS.remove(recorder)
            if isinstance(original, torch.nn.Module):  # explain patched it: put back what was there
                if previous_forward is not None:
                    original.forward = previous_forward
                else:
                    del original.forward
        return ExplainOutput.from_entries(recorder.entries, [title_of(code) for code in recorder.codes],
                                          [(title_of(code), why) for code, why in recorder.skipped])

    return run


def _code_of(fn: Any) -> Any:
    if isinstance(fn, torch.nn.Module):
        return type(fn).forward.__code__
    return getattr(fn, "__func__", fn).__code__


from pdyn import debug  # noqa: E402  # pdyn.debug.bisect (imports the hook, so last)
