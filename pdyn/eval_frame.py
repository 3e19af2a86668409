"""The frame-evaluation hook: intercepting calls of optimized code, the per-code cache, guard
dispatch, compiling on a miss, and eager fallback.

pdyn intercepts at the call boundary: `optimize(fn)` returns a wrapper with `fn`'s exact signature
(so CPython binds the arguments), which hands the frame's locals `L` and globals `G` to `dispatch`.
The first cache entry whose guard holds runs; a miss compiles a new entry.
"""

from __future__ import annotations

import functools
import inspect
import logging
import types
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

from pdyn import logs
from pdyn.compile_frame import CacheEntry, compile_frame, title_of
from pdyn.config import Config
from pdyn.errors import InternalError, Unsupported, UserException

recompile_log = logs.topic("recompiles")
log = logging.getLogger(__name__)


@dataclass
class CodeCache:
    """Everything pdyn keeps for one code object: its entries, counters and history."""

    code: types.CodeType
    entries: list[CacheEntry] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=logs.empty_counters)
    run_eagerly: bool = False          # an internal error or the recompile limit
    warned_limit: bool = False

    def clear(self) -> None:
        self.entries.clear()
        self.counters = logs.empty_counters()
        self.run_eagerly = False
        self.warned_limit = False


CACHES: dict[types.CodeType, CodeCache] = {}


@dataclass
class Recorder:
    """What `pdyn.explain` collects while its one call runs."""

    entries: list[CacheEntry] = field(default_factory=list)


RECORDERS: list[Recorder] = []


def cache_for(code: types.CodeType) -> CodeCache:
    if code not in CACHES:
        CACHES[code] = CodeCache(code)
    return CACHES[code]


class Frame:
    """The optimized view of one function: its cache and how to call it eagerly."""

    def __init__(self, fn: types.FunctionType, backend: Callable[..., Any], config: Config, fullgraph: bool,
                 cache: CodeCache | None = None):
        self.fn = fn
        self.code = fn.__code__
        self.backend = backend
        self.config = config
        self.fullgraph = fullgraph
        self.cache = cache if cache is not None else cache_for(self.code)
        self.call_original = _make_caller(fn)

    def dispatch(self, L: dict[str, Any]) -> Any:
        cache = self.cache
        counters = cache.counters
        counters["frames"] += 1
        if self.code.co_freevars:
            for name, cell in zip(self.code.co_freevars, self.fn.__closure__):  # type: ignore[arg-type]
                L[name] = cell.cell_contents
        G = self.fn.__globals__
        for entry in cache.entries:
            if entry.guard.check(L, G) is None:
                counters["cache_hits"] += 1
                return entry.run(L, G)
        return self._miss(L, G)

    def _miss(self, L: dict[str, Any], G: dict[str, Any]) -> Any:
        cache = self.cache
        if cache.run_eagerly:
            return self.call_original(L)
        compiles = cache.counters["compiles"]
        if compiles >= self.config.recompile_limit:
            if not cache.warned_limit:
                cache.warned_limit = True
                warnings.warn(f"pdyn: {title_of(self.code)} reached the recompile limit "
                              f"({self.config.recompile_limit}); calls that match no compiled entry now run "
                              "eagerly. Raise pdyn.config.recompile_limit or see PDYN_LOGS=recompiles.",
                              stacklevel=3)
            return self.call_original(L)
        if cache.entries:
            self._log_recompile(L, G, compiles + 1)
        try:
            entry = compile_frame(self.code, L, G, self.backend, self.config, compiles + 1,
                                  self.call_original, self.fullgraph)
        except UserException:
            return self.call_original(L)  # eager raises the user's exception for real
        except Unsupported:
            raise
        except Exception as e:
            if self.fullgraph:
                raise
            cache.run_eagerly = True
            warnings.warn(f"pdyn: internal error while compiling {title_of(self.code)}; running it eagerly "
                          f"from now on. {type(e).__name__}: {e}. {InternalError.__doc__}", stacklevel=3)
            log.debug("internal error", exc_info=True)
            return self.call_original(L)
        cache.entries.append(entry)
        cache.counters["compiles"] += 1
        cache.counters["recompiles"] += int(compiles > 0)
        cache.counters["eager_fallbacks"] += int(entry.eager_reason is not None)
        for recorder in RECORDERS:
            recorder.entries.append(entry)
        return entry.run(L, G)

    def _log_recompile(self, L: dict[str, Any], G: dict[str, Any], number: int) -> None:
        if not recompile_log.isEnabledFor(logging.INFO):
            return
        reasons = []
        for entry in self.cache.entries:
            sentence = entry.guard.check(L, G)
            guard = entry.guard.by_sentence.get(sentence or "")
            where = f", set at {guard.loc} `{guard.loc.source_line().strip()}`" if guard and guard.loc else ""
            actual = _actual(guard.source, L, G) if guard is not None and guard.source is not None else ""
            reasons.append(f"entry {entry.number}: {sentence} failed{actual}{where}")
        recompile_log.info("recompiling %s, compile %d/%d: %s", title_of(self.code), number,
                           self.config.recompile_limit, "; ".join(reasons))


def _actual(source: Any, L: dict[str, Any], G: dict[str, Any]) -> str:
    import sys

    import torch

    try:
        value = eval(source.expr(), {"L": L, "G": G, "_modules": sys.modules})
    except Exception as e:
        return f" ({type(e).__name__})"
    if isinstance(value, torch.Tensor):
        grad = ", requires_grad" if value.requires_grad else ""
        return f" (now {str(value.dtype).removeprefix('torch.')} {value.device} size {tuple(value.shape)}{grad})"
    text = repr(value)
    return f" (now {text if len(text) < 60 else text[:57] + '...'})"


def _signature_text(code: types.CodeType) -> tuple[str, list[str], str]:
    """(parameter list with `=_d` placeholders, the names in L, a call of the original from L)."""
    names = code.co_varnames
    n_pos, n_posonly, n_kwonly = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    params: list[str] = []
    call: list[str] = []
    for i, name in enumerate(names[:n_pos]):
        params.append(name)
        call.append(f"L[{name!r}]")
        if i == n_posonly - 1:
            params.append("/")
    index = n_pos + n_kwonly
    if code.co_flags & inspect.CO_VARARGS:
        params.append("*" + names[index])
        call.append(f"*L[{names[index]!r}]")
        index += 1
    elif n_kwonly:
        params.append("*")
    for name in names[n_pos:n_pos + n_kwonly]:
        params.append(name)
        call.append(f"{name}=L[{name!r}]")
    local_names = [p.lstrip("*") for p in params if p not in ("/", "*")]
    if code.co_flags & inspect.CO_VARKEYWORDS:
        params.append("**" + names[index])
        call.append(f"**L[{names[index]!r}]")
        local_names.append(names[index])
    return ", ".join(params), local_names, ", ".join(call)


def _make_caller(fn: types.FunctionType) -> Callable[[dict[str, Any]], Any]:
    _, _, call = _signature_text(fn.__code__)
    scope: dict[str, Any] = {"original": fn}
    exec(f"def call_original(L):\n    return original({call})\n", scope)
    return scope["call_original"]  # type: ignore[no-any-return]


def make_wrapper(frame: Frame) -> types.FunctionType:
    """A function with the same signature as `frame.fn` whose body hands its locals to dispatch."""
    fn = frame.fn
    params, local_names, _ = _signature_text(fn.__code__)
    build = ", ".join(f"{n!r}: {n}" for n in local_names)
    scope: dict[str, Any] = {"pdyn_dispatch": frame.dispatch}
    exec(f"def wrapper({params}):\n    return pdyn_dispatch({{{build}}})\n", scope)
    wrapper: types.FunctionType = scope["wrapper"]
    wrapper.__defaults__ = fn.__defaults__
    wrapper.__kwdefaults__ = fn.__kwdefaults__
    wrapper.__code__ = wrapper.__code__.replace(co_name=fn.__code__.co_name, co_qualname=fn.__code__.co_qualname)
    functools.update_wrapper(wrapper, fn)
    wrapper._pdyn_original = fn  # type: ignore[attr-defined]
    wrapper._pdyn_frame = frame  # type: ignore[attr-defined]
    return wrapper
