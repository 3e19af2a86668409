"""One cache miss end to end: trace, guards, graph, frame code -> CacheEntry (pdyn/hook/compile_frame.py)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import pdyn
from pdyn.hook.compile_frame import CacheEntry, compile_frame, title_of
from pdyn.base.config import Config
from pdyn.base.errors import Unsupported
from pdyn.hook.recompile_policy import CodeHistory, decide
from pdyn.sources import LocalSource, SizeSource
from tests.helpers import CountingBackend


def compile_for(fn: Any, *args: Any, backend: Any = None, fullgraph: bool = False,
                number: int = 1) -> tuple[CacheEntry, dict[str, Any]]:
    L = dict(zip(fn.__code__.co_varnames, args))
    entry = compile_frame(fn.__code__, L, fn.__globals__, backend or CountingBackend(), Config(), number,
                          lambda L: fn(**L), fullgraph)
    return entry, L


def scale_and_shift(x, w):
    return x * w + 1


def with_try(x):
    try:
        pdyn.graph_break()  # a break inside a try block: no resume function, the frame runs eagerly
        return x + 1
    except ValueError:
        return x


def test_title_names_function_file_and_first_line():
    assert title_of(scale_and_shift.__code__) == (
        f"scale_and_shift() at {__file__}:{scale_and_shift.__code__.co_firstlineno}")


def test_entry_runs_the_graph_and_its_guard_holds_for_the_same_inputs():
    backend = CountingBackend()
    x, w = torch.randn(3), torch.randn(3)
    entry, L = compile_for(scale_and_shift, x, w, backend=backend, number=4)
    assert entry.number == 4 and entry.eager_reason is None
    assert entry.guard.check(L, scale_and_shift.__globals__) is None
    torch.testing.assert_close(entry.run(L, scale_and_shift.__globals__), x * w + 1)
    assert len(backend.graphs) == 1 and entry.graph_module is backend.graphs[0]
    assert entry.guard.source.startswith("# pdyn guards for scale_and_shift() at ")
    assert ", cache entry 4" in entry.guard.source.splitlines()[0]
    assert "compiled_graph(L['x'], L['w'])" in entry.frame_source


def test_guard_fails_for_other_inputs():
    entry, L = compile_for(scale_and_shift, torch.randn(3), torch.randn(3))
    other = {"x": torch.randn(3, dtype=torch.float64), "w": L["w"]}
    assert entry.guard.check(other, scale_and_shift.__globals__) == "L['x'] is a float32 cpu tensor not requiring grad"


def test_function_without_tensor_ops_compiles_no_graph():
    def f(n):
        return n + 1

    backend = CountingBackend()
    entry, L = compile_for(f, 3, backend=backend)
    assert entry.graph_module is None and backend.graphs == []
    assert entry.run(L, f.__globals__) == 4


def test_unsupported_gives_an_eager_entry_with_the_reason():
    entry, L = compile_for(with_try, torch.ones(2))
    assert entry.graph_module is None
    assert entry.eager_reason is not None and entry.eager_reason.key == "graph_break"
    assert entry.eager_reason.loc.lineno == with_try.__code__.co_firstlineno + 2
    torch.testing.assert_close(entry.run(L, with_try.__globals__), torch.full((2,), 2.0))
    assert entry.frame_source == "# runs the original function eagerly\n"


def test_unsupported_with_fullgraph_raises():
    with pytest.raises(Unsupported) as error:
        compile_for(with_try, torch.ones(2), fullgraph=True)
    assert error.value.loc.filename == __file__


def resume_frames(fn: Any) -> list[Any]:
    """The Frames of the resume functions the entries of optimized `fn` call."""
    entries = fn._pdyn_frame.cache.entries
    return [value._pdyn_frame for entry in entries for value in entry.run.__globals__.values()
            if hasattr(value, "_pdyn_frame")]


def test_a_resume_function_knows_which_parent_size_each_of_its_sizes_is():
    def f(x, n):
        y = x + 1
        pdyn.graph_break()
        return y * n

    fn = pdyn.optimize(f)
    torch.testing.assert_close(fn(torch.ones(5), 3), (torch.ones(5) + 1) * 3)
    (resume,) = resume_frames(fn)
    x0, y0, n = SizeSource(LocalSource("x"), 0), SizeSource(LocalSource("y"), 0), SizeSource(LocalSource("n"), None)
    assert resume.inherited.parent_of == {y0: x0, n: n}   # n is passed on under its own name
    # once the parent has seen x.size(0) change, the resume function's plan starts with y.size(0) changing
    fn._pdyn_frame.cache.history.changed.add(x0)
    plan = decide(Config(), CodeHistory(), None, lambda size: None, resume.inherited)
    assert y0 in plan.changing and n not in plan.changing
