"""The frame-evaluation hook: intercepting calls of optimized code, the per-code cache, guard
dispatch, compiling on a miss, and eager fallback.

pdyn intercepts at the call boundary: `optimize(fn)` returns a wrapper with `fn`'s exact signature
(so CPython binds the arguments) and runs each cache entry's guard on the frame's locals `L` and
globals `G`: the first entry whose guard holds runs; a miss compiles a new entry (`Frame.miss`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
import sys
import threading
import types
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from pdyn.backends.report import COUNT_LATER, BackendReport, report_of
from pdyn.base import logs
from pdyn.hook.compile_frame import CLOSURE_KEY, EMPTY_CELL, CacheEntry, closure_at_call, compile_frame, title_of
from pdyn.base.config import Config, Settings, snapshot
from pdyn.base.errors import InternalError, RecompileError, SkipFrame, Unsupported, UserException
from pdyn.guards.codegen import origin
from pdyn.hook.recompile_policy import CodeHistory, InheritedSizes, RunEager, decide
from pdyn.hook.trace_record import record_compile, record_eager
from pdyn.sources import SizeSource, Source
from pdyn.shapes.trace_plan import TracePlan
from pdyn.shapes.validation import ValidationFailure
from pdyn.trace.breaks.loops import routed_function

recompile_log = logs.topic("recompiles")
log = logging.getLogger(__name__)


@dataclass
class CodeCache:
    """Everything pdyn keeps for one code object: its entries, counters and history."""

    code: types.CodeType
    entries: list[CacheEntry] = field(default_factory=list)
    # NOTE: (entry.guard.check, entry.run) of each entry, the list the generated wrappers loop over;
    # changed in place only, never rebound, since wrappers hold it.
    checks: list[tuple[Any, Any]] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=logs.empty_counters)
    run_eagerly: bool = False          # an internal error or the recompile limit
    routed: Callable[..., Any] | None = None   # runs without a graph (trace/breaks/loops.py)
    warned_limit: bool = False
    # the settings of a function the user optimized (None for a resume function or a callee pdyn
    # optimized for it): it warns once when it keeps running without any graph, its own or its children's
    root: Config | Settings | None = None
    warned_no_graph: bool = False
    warned_on_torch: bool = False     # a graph the backend ran wholly with torch warns once
    no_graph_reason: str | None = None   # the first reason a call of this code ran no graph
    # the caches of the resume functions and callees this code's graph breaks call
    children: list[CodeCache] = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)   # held while one thread compiles
    history: CodeHistory = field(default_factory=CodeHistory)
    # under `explain`: the caches of the resume functions and callees of its breaks, kept apart
    private: dict[types.CodeType, CodeCache] = field(default_factory=dict)

    def add(self, entry: CacheEntry) -> None:
        """Append `entry`; one without a graph runs through a wrapper that counts its calls."""
        self.entries.append(entry)
        run = entry.run
        if entry.graph_module is None:
            reason = entry.eager_reason or entry.break_reason
            self.no_graph_reason = self.no_graph_reason or (str(reason) if reason is not None else None)
            run = functools.partial(_run_counted, self, entry.run)
        else:
            self.counters["graphs"] += 1
            self.counters["ops_captured"] += ops_in(entry.graph_module)
            self.count_backend(report_of(entry.graph_module))
            entry.graph_module.meta[COUNT_LATER] = functools.partial(self.count_backend, backward=True)
        self.checks.append((entry.guard.check, run))

    def count_backend(self, report: BackendReport | None, backward: bool = False) -> None:
        """The backend's counters for one graph (`backward`: a backward graph compiled at its
        graph's first backward); a graph it ran wholly with torch warns once."""
        self.counters["backward_graphs"] += backward
        if report is None:
            return
        self.counters["kernels"] += report.kernels
        self.counters["nodes_on_torch"] += report.nodes_on_torch
        self.counters["library_calls"] += report.library_calls
        if report.on_torch is None:
            return
        self.counters["graphs_on_torch"] += 1
        if not self.warned_on_torch:
            self.warned_on_torch = True
            warnings.warn(f"pdyn: a graph of {title_of(self.code)} runs wholly with torch on the {report.backend} "
                          f"backend: {report.on_torch}. pdyn.explain(fn)(...) lists each graph's torch calls.",
                          stacklevel=_user_stacklevel())

    def clear(self) -> None:
        self.entries.clear()
        self.checks.clear()
        self.counters.update(logs.empty_counters())
        self.run_eagerly = False
        self.routed = None
        self.warned_limit = False
        self.warned_no_graph = False
        self.warned_on_torch = False
        self.no_graph_reason = None
        self.children.clear()
        self.history = CodeHistory()

    def tree(self) -> list[CodeCache]:
        """This cache and, transitively, its children's (each once)."""
        seen: dict[int, CodeCache] = {}
        stack = [self]
        while stack:
            cache = stack.pop()
            if id(cache) not in seen:
                seen[id(cache)] = cache
                stack.extend(cache.children)
        return list(seen.values())

    def stats(self) -> dict[str, int]:
        """The counters; a hit counts only `cache_hits` on the hot path, so frames adds them here."""
        out = dict(self.counters)
        out["frames"] += out["cache_hits"]
        return out


def ops_in(gm: torch.fx.GraphModule) -> int:
    """The torch ops a graph captured: its nodes other than inputs, outputs and attribute reads."""
    return sum(node.op in ("call_function", "call_method", "call_module") for node in gm.graph.nodes)


# calls of an optimized function without any graph after which it warns (once)
NO_GRAPH_WARN_AFTER = 3


def _run_counted(cache: CodeCache, run: Callable[..., Any], L: dict[str, Any], G: dict[str, Any]) -> Any:
    ran_without_graph(cache)
    return run(L, G)


def _user_stacklevel() -> int:
    """The warnings stacklevel of the first frame outside this module and the generated wrappers."""
    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_code.co_filename == __file__
                                 or frame.f_code.co_filename.startswith("<pdyn wrapper")):
        frame, level = frame.f_back, level + 1
    return level


def ran_without_graph(cache: CodeCache) -> None:
    """Count a call of `cache`'s code that runs no graph; the third such call of a function the user
    optimized, with no graph compiled for it or its children, warns once (pdyn.config.warn_no_graph)."""
    cache.counters["frames_without_graph"] += 1
    if cache.root is None or cache.warned_no_graph or cache.counters["frames_without_graph"] < NO_GRAPH_WARN_AFTER:
        return
    tree = cache.tree()
    if any(c.counters["graphs"] for c in tree):
        cache.warned_no_graph = True   # a graph exists: it never warns
        return
    cache.warned_no_graph = True
    if not snapshot(cache.root).warn_no_graph:
        return
    reason = next((c.no_graph_reason for c in tree if c.no_graph_reason), None)
    first = f"; the first break: {reason}" if reason else " (it has no torch ops to capture)"
    warnings.warn(f"pdyn: {title_of(cache.code)} has run {cache.counters['frames_without_graph']} times and no graph "
                  f"was compiled for it: it runs eagerly{first}. PDYN_WARN_NO_GRAPH=0 (pdyn.config.warn_no_graph = "
                  "False) silences this.", stacklevel=_user_stacklevel())


# NOTE: keyed by backend too: an entry compiled for one backend never serves a wrapper made for another
CACHES: dict[tuple[types.CodeType, Any], CodeCache] = {}


@dataclass
class Recorder:
    """What `pdyn.explain` collects while its one call runs."""

    entries: list[CacheEntry] = field(default_factory=list)
    codes: list[types.CodeType] = field(default_factory=list)   # the code each entry was compiled for
    # frames that run without a graph from a break inside a loop on: (code, the break), no entry
    skipped: list[tuple[types.CodeType, Unsupported]] = field(default_factory=list)


RECORDERS: list[Recorder] = []


def cache_for(code: types.CodeType, backend: Any) -> CodeCache:
    key = (code, backend)
    if key not in CACHES:
        CACHES[key] = CodeCache(code)
    return CACHES[key]


class Frame:
    """The optimized view of one function: its cache and how to call it eagerly."""

    def __init__(self, fn: types.FunctionType, backend: Callable[..., Any], config: Config | Settings, fullgraph: bool,
                 cache: CodeCache | None = None, dynamic: bool | None = None, caller: str | None = None,
                 inherited: InheritedSizes | None = None, recompile_limit: int | None = None):
        """`caller`: the module eager's caller of `fn` is in (code that reads its caller's
        `__name__`, as namedtuple does, sees it); by default `fn`'s own. `inherited`: for a resume
        function, its parent frame's sizes and history. `recompile_limit`: this function's own limit
        (`optimize(recompile_limit=)`), else `config.recompile_limit`."""
        self.fn = fn
        self.recompile_limit = recompile_limit
        self.dynamic = dynamic
        self.code = fn.__code__
        self.backend = backend
        self.config = config
        self.fullgraph = fullgraph
        self.cache = cache if cache is not None else cache_for(self.code, backend)
        self.call_original = _make_caller(fn, caller or fn.__globals__.get("__name__", "__main__"))
        self.call_rebound: Callable[[dict[str, Any]], Any] | None = None
        self.inherited = inherited

    def miss(self, L: dict[str, Any]) -> Any:
        """No entry's guard holds: compile a new entry, or run eagerly. One thread compiles at a
        time per code object; a thread that waited first tries the entries added meanwhile."""
        G = self.fn.__globals__
        seen = len(self.cache.checks)
        with self.cache.lock:
            run = self._entry_for(L, G, seen)
        return run(L, G)

    def _eagerly(self, L: dict[str, Any], G: dict[str, Any]) -> Any:
        return self.call_original(L)

    def rebound(self, L: dict[str, Any]) -> Any:
        """A call after `fn.__code__` was replaced: `fn` itself runs it, eagerly (counted)."""
        if self.call_rebound is None:
            _, _, call = _signature_text(self.code)  # the wrapper's parameters: the code optimized
            scope: dict[str, Any] = {"fn": self.fn}
            exec(f"def call_rebound(L):\n    return fn({call})\n", scope)
            self.call_rebound = scope["call_rebound"]
        ran_without_graph(self.cache)
        return self.call_rebound(L)

    def _entry_for(self, L: dict[str, Any], G: dict[str, Any], seen: int) -> Callable[..., Any]:
        cache = self.cache
        for check, run in cache.checks[seen:]:
            if check(L, G) is None:
                cache.counters["cache_hits"] += 1
                return run
        cache.counters["frames"] += 1
        if cache.run_eagerly:
            return self._eagerly_counted
        if cache.routed is not None:
            return cache.routed
        compiles = cache.counters["compiles"]
        config = snapshot(self.config)  # NOTE: pdyn.config may change between compiles, not during one
        if self.recompile_limit is not None:
            config = dataclasses.replace(config, recompile_limit=self.recompile_limit)
        if cache.entries and config.stance != "default":
            if config.stance == "eager_on_recompile":
                return self._eagerly  # NOTE: no compile; the entries still serve the calls they match
            raise RecompileError(f"pdyn: {title_of(self.code)} would recompile under set_stance(\"fail_on_recompile\"): "
                                 + "; ".join(self._miss_reasons(L, G)))
        plan = decide(config, cache.history, self.dynamic, lambda size: _read(size, L, G), self.inherited)
        if isinstance(plan, RunEager):
            if not cache.warned_limit:
                cache.warned_limit = True
                cache.counters["eager_fallbacks"] += 1
                warnings.warn(f"pdyn: {title_of(self.code)} {plan.reason}; calls that match no compiled entry now "
                              "run eagerly. Raise pdyn.config.recompile_limit or see PDYN_LOGS=recompiles.",
                              stacklevel=4)
            cache.no_graph_reason = cache.no_graph_reason or plan.reason
            record_eager(config, self.code, self.backend, plan.reason)
            return self._eagerly_counted
        reasons = self._recompile_reasons(L, G, config) if cache.entries else []
        if reasons:
            self._log_recompile(reasons, compiles + 1, plan, config)
        fullgraph = self.fullgraph or config.error_on_graph_break
        # NOTE: eager runs outside the `except` blocks: inside one, CPython changes some of the
        # exceptions user code raises (`f(**a, **b)` raises KeyError for TypeError)
        entry = None
        try:
            entry = compile_frame(self.code, L, G, self.backend, config, compiles + 1,
                                  self.call_original, fullgraph, plan, optimize=self.optimize_callee)
        except UserException:
            pass  # eager raises the user's exception for real
        except SkipFrame as skip:
            return self._skip(skip, config)
        except (Unsupported, ValidationFailure):
            raise
        except Exception as e:
            if fullgraph:
                raise
            cache.run_eagerly = True
            cache.counters["eager_fallbacks"] += 1
            cache.no_graph_reason = cache.no_graph_reason or f"internal error: {type(e).__name__}: {e}"
            warnings.warn(f"pdyn: internal error while compiling {title_of(self.code)}; running it eagerly "
                          f"from now on. {type(e).__name__}: {e}. {InternalError.__doc__}", stacklevel=4)
            record_eager(config, self.code, self.backend, cache.no_graph_reason)
            log.debug("internal error", exc_info=True)
        if entry is None:
            return self._eagerly_counted
        cache.history.record(entry.pinned, plan.changing)
        cache.add(entry)
        cache.counters["compiles"] += 1
        cache.counters["recompiles"] += int(compiles > 0)
        cache.counters["eager_fallbacks"] += int(entry.eager_reason is not None)
        cache.counters["graph_breaks"] += int(entry.break_reason is not None)
        for recorder in RECORDERS:
            recorder.entries.append(entry)
            recorder.codes.append(self.code)
        record_compile(config, self.code, entry, self.backend, compiles + 1, reasons, plan.decisions)
        return cache.checks[-1][1]

    def _eagerly_counted(self, L: dict[str, Any], G: dict[str, Any]) -> Any:
        ran_without_graph(self.cache)
        return self.call_original(L)

    def _skip(self, skip: SkipFrame, config: Config) -> Callable[..., Any]:
        """From now on a call that matches no entry runs the frame's code with its calls routed
        through pdyn, without a graph: one graph break, a frame without graph per call, no compile."""
        cache = self.cache
        caller = _make_caller(routed_function(self.fn, skip, self.optimize_callee), self.call_original.__module__)
        cache.routed = functools.partial(_run_counted, cache, lambda L, G: caller(L))
        cache.counters["graph_breaks"] += 1
        reason = f"a graph break inside a loop, with nothing captured before it: {skip.reason.message}"
        cache.no_graph_reason = cache.no_graph_reason or reason
        logs.topic("graph_breaks").info("running %s without a graph, its calls through pdyn: %s",
                                        title_of(self.code), skip.reason)
        record_eager(config, self.code, self.backend, reason)
        for recorder in RECORDERS:
            recorder.skipped.append((self.code, skip.reason))
        return cache.routed

    def optimize_callee(self, fn: types.FunctionType, sizes: dict[SizeSource, SizeSource] | None = None,
                        at_call: bool = False) -> types.FunctionType:
        """`fn` (a resume function, or a function a graph break calls) optimized as this frame is:
        in the shared caches, or under `explain` in caches private to that call. `sizes` maps the
        sizes `fn` receives to this frame's, so its policy sees what this frame learned. `at_call`:
        the wrapper takes the function object first (see `make_wrapper`)."""
        cache = None
        if CACHES.get((self.code, self.backend)) is not self.cache:
            private = self.cache.private
            cache = private.setdefault(fn.__code__, CodeCache(fn.__code__, private=private))
        inherited = InheritedSizes(sizes, self.cache.history, self.inherited) if sizes else None
        frame = Frame(fn, self.backend, self.config, self.fullgraph, cache, self.dynamic,
                      caller=self.call_original.__module__, inherited=inherited, recompile_limit=self.recompile_limit)
        if frame.cache is not self.cache and all(c is not frame.cache for c in self.cache.children):
            self.cache.children.append(frame.cache)
        return make_wrapper(frame, nesting_limit=NESTING_LIMIT, fn_at_call=at_call)

    def _miss_reasons(self, L: dict[str, Any], G: dict[str, Any]) -> list[str]:
        """Why each entry's guard failed for this call, as sentences (with where the guard came from)."""
        return _reason_texts(self._recompile_reasons(L, G, self.config, always=True))

    def _recompile_reasons(self, L: dict[str, Any], G: dict[str, Any], config: Any,
                           always: bool = False) -> list[dict[str, Any]]:
        """Why no entry served this call: each entry's failing guard, this call's value of what it
        checks, and where the guard came from (the user's line). Empty unless logged or recorded."""
        if not always and not recompile_log.isEnabledFor(logging.INFO) and not config.trace_dir:
            return []
        reasons = []
        for entry in self.cache.entries:
            sentence = entry.guard.check(L, G)
            guard = entry.guard.by_sentence.get(sentence or "")
            actual = _actual(guard, L, G) if guard is not None and guard.source is not None else ""
            reasons.append({"entry": entry.number, "guard": sentence, "now": actual.strip(),
                            "where": origin(guard) if guard is not None else ""})
        return reasons

    def _log_recompile(self, reasons: list[dict[str, Any]], number: int, plan: TracePlan, config: Any) -> None:
        if not recompile_log.isEnabledFor(logging.INFO):
            return
        decided = "".join(f"; {d}" for d in plan.decisions)
        recompile_log.info("recompiling %s, compile %d/%d: %s%s", title_of(self.code), number,
                           config.recompile_limit, "; ".join(_reason_texts(reasons)), decided)


def _reason_texts(reasons: list[dict[str, Any]]) -> list[str]:
    texts = []
    for reason in reasons:
        where = reason["where"]
        if where and not where.startswith("argument") and "  " in where:
            where = "{}  `{}`".format(*where.split("  ", 1))
        where = f", {where}" if where.startswith("argument") else f", set at {where}" if where else ""
        actual = f" {reason['now']}" if reason["now"] else ""
        texts.append(f"entry {reason['entry']}: {reason['guard']} failed{actual}{where}")
    return texts


def _read(source: Source, L: dict[str, Any], G: dict[str, Any]) -> Any:
    """`source`'s value (`L['x'].size(1)`) in this call; None where it cannot be read."""
    try:
        return source.read(L, G)
    except Exception:
        return None


def _actual(guard: Any, L: dict[str, Any], G: dict[str, Any]) -> str:
    """This call's value of what `guard` checks: a dim's size for size guards, else the object."""
    dim = getattr(guard, "dim", None)
    source = guard.source if dim is None else SizeSource(guard.source, dim)
    try:
        value = source.read(L, G)
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


def _make_caller(fn: types.FunctionType, caller: str) -> Callable[[dict[str, Any]], Any]:
    _, _, call = _signature_text(fn.__code__)
    scope: dict[str, Any] = {"original": fn, "__name__": caller}
    # NOTE: the cache is per code object: an entry that calls the function eagerly serves every
    # closure of that code, so it calls this call's closure (L's cells), never the compiling one's
    if fn.__code__.co_freevars:
        scope["original"] = functools.partial(types.FunctionType, fn.__code__, fn.__globals__, fn.__name__, None)
        exec(f"def call_original(L):\n    return original(L[{CLOSURE_KEY!r}])({call})\n", scope)
        return scope["call_original"]  # type: ignore[no-any-return]
    exec(f"def call_original(L):\n    return original({call})\n", scope)
    return scope["call_original"]  # type: ignore[no-any-return]


# A loop whose body breaks the graph calls its resume function from the resume function's own
# compiled code, once per iteration: after this many nested calls the rest runs eagerly (eager's
# loop runs in one frame, and must not hit a RecursionError that eager never would).
NESTING_LIMIT = 64


def _closure_items(fn: types.FunctionType, fn_at_call: bool, params: str, taken: set[str],
                   scope: dict[str, Any], items: list[str]) -> tuple[str, str]:
    """The closure cells' entries of L, added to `items` (their constants to `scope`): passed by
    the caller (a resume function), read from the function object the call passes (`fn_at_call`),
    or `fn`'s own. Returns the parameter list with what the caller passes first, and the name of
    the function object before a default's name (`fn_at_call`), else ""."""
    code = fn.__code__
    if closure_at_call(fn):  # a resume function: the caller passes the frame's cells first
        closure = _unused("closure", taken)
        scope[_unused("contents", taken)] = _contents
        items += [f"{name!r}: {_unused('contents', taken)}({closure}[{i}])" for i, name in enumerate(code.co_freevars)]
        items.append(f"{CLOSURE_KEY!r}: {closure}")
        return (f"{closure}, {params}" if params else closure), ""
    if fn_at_call:
        function = _unused("function", taken)
        if code.co_freevars:
            scope[_unused("contents", taken)] = _contents
            items += [f"{name!r}: {_unused('contents', taken)}({function}.__closure__[{i}])"
                      for i, name in enumerate(code.co_freevars)]
            items.append(f"{CLOSURE_KEY!r}: {function}.__closure__")
        return (f"{function}, {params}" if params else function), f"{function}, "
    if code.co_freevars:
        for i, (name, cell) in enumerate(zip(code.co_freevars, fn.__closure__ or ())):
            scope[_unused(f"cell{i}", taken)] = cell
            items.append(f"{name!r}: {_unused(f'cell{i}', taken)}.cell_contents")
        scope[_unused("closure", taken)] = fn.__closure__
        items.append(f"{CLOSURE_KEY!r}: {_unused('closure', taken)}")
    return params, ""


def make_wrapper(frame: Frame, nesting_limit: int | None = None, fn_at_call: bool = False) -> types.FunctionType:
    """A function with the same signature as `frame.fn`: the first entry whose guard holds runs, else
    `frame.miss`. With `nesting_limit` (resume functions), a call nested that deep in calls of the
    same wrapper runs `fn` eagerly. With `fn_at_call`, the wrapper takes first the function object
    it runs as, of `frame.fn`'s code (a function from the frame a break calls: guarded by its code,
    not its identity), whose closure cells and defaults it reads on each call, never `frame.fn`'s.

    The hot path of a cache hit is this wrapper's body: build L, loop over (check, run) pairs, count
    the hit. Everything fixed per function (globals, closure cells, the entry list) is a constant
    of its scope; those names are chosen not to collide with the user's parameter names.
    """
    fn = frame.fn
    code = fn.__code__
    params, local_names, _ = _signature_text(code)
    taken = set(local_names)
    names = {k: _unused(k, taken) for k in ("L", "G", "checks", "counters", "check", "run", "miss", "unset",
                                            "default", "depth", "eagerly", "fn", "code", "rebound")}
    L, G = names["L"], names["G"]
    scope: dict[str, Any] = {names["G"]: fn.__globals__, names["checks"]: frame.cache.checks,
                             names["counters"]: frame.cache.counters, names["miss"]: frame.miss,
                             names["unset"]: UNSET, names["default"]: functools.partial(current_default, fn)}
    items = [f"{n!r}: {n}" for n in local_names]
    params, first = _closure_items(fn, fn_at_call, params, taken, scope, items)
    if first:  # a default is read from the function object the call passes
        scope[names["default"]] = current_default
    defaulted = _defaulted(fn)
    dispatch = [
        f"    for {names['check']}, {names['run']} in {names['checks']}:",
        f"        if {names['check']}({L}, {G}) is None:",
        f"            {names['counters']}['cache_hits'] += 1",
        f"            return {names['run']}({L}, {G})",
        f"    return {names['miss']}({L})",
    ]
    if nesting_limit is None and not closure_at_call(fn):
        # `fn.__code__ = other` after optimizing: eager runs the new code, and so does this call
        scope[names["fn"]], scope[names["code"]], scope[names["rebound"]] = fn, code, frame.rebound
        dispatch.insert(0, f"    if {names['fn']}.__code__ is not {names['code']}: return {names['rebound']}({L})")
    if nesting_limit is not None:
        depth = names["depth"]
        scope[depth], scope[names["eagerly"]] = [0], frame.call_original
        dispatch = [f"    if {depth}[0] >= {nesting_limit}:",
                    f"        return {names['eagerly']}({L})",
                    f"    {depth}[0] += 1",
                    "    try:",
                    *("    " + line for line in dispatch),
                    "    finally:",
                    f"        {depth}[0] -= 1"]
    source = "\n".join([
        f"def wrapper({params}):",
        *(f"    if {n} is {names['unset']}: {n} = {names['default']}({first}{n!r})" for n in defaulted),
        f"    {L} = {{{', '.join(items)}}}",
        *dispatch,
    ]) + "\n"
    exec(compile(source, f"<pdyn wrapper {code.co_name}>", "exec"), scope)
    wrapper: types.FunctionType = scope["wrapper"]
    # defaults are read from `fn` on each call (a later `fn.__defaults__ = ...` applies, as in eager)
    wrapper.__defaults__ = (UNSET,) * len(fn.__defaults__ or ())
    wrapper.__kwdefaults__ = dict.fromkeys(fn.__kwdefaults__, UNSET) if fn.__kwdefaults__ else None
    wrapper.__code__ = wrapper.__code__.replace(co_name=code.co_name, co_qualname=code.co_qualname)
    functools.update_wrapper(wrapper, fn)
    wrapper._pdyn_original = fn  # type: ignore[attr-defined]
    wrapper._pdyn_frame = frame  # type: ignore[attr-defined]
    wrapper._pdyn_source = source  # type: ignore[attr-defined]
    return wrapper


def _contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return EMPTY_CELL


class _Unset:
    """The wrapper's default for a parameter that has one: the argument was not passed."""

    def __repr__(self) -> str:
        return "<default>"


UNSET = _Unset()


def _defaulted(fn: types.FunctionType) -> list[str]:
    code = fn.__code__
    positional = code.co_varnames[code.co_argcount - len(fn.__defaults__ or ()):code.co_argcount]
    return [*positional, *(fn.__kwdefaults__ or {})]


def current_default(fn: types.FunctionType, name: str) -> Any:
    """`fn`'s default for parameter `name` now; CPython's TypeError where it no longer has one."""
    code = fn.__code__
    if name in code.co_varnames[:code.co_argcount]:
        defaults = fn.__defaults__ or ()
        at = code.co_varnames.index(name) - (code.co_argcount - len(defaults))
        if at >= 0:
            return defaults[at]
        raise TypeError(f"{code.co_qualname}() missing 1 required positional argument: {name!r}")
    kwdefaults = fn.__kwdefaults__ or {}
    if name in kwdefaults:
        return kwdefaults[name]
    raise TypeError(f"{code.co_qualname}() missing 1 required keyword-only argument: {name!r}")


def _unused(name: str, taken: set[str]) -> str:
    """`name`, or `name_2`, `name_3`, ... : the first that is not a parameter of the wrapper."""
    candidate, n = f"pdyn_{name}", 1
    while candidate in taken:
        n += 1
        candidate = f"pdyn_{name}_{n}"
    return candidate
