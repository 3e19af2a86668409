"""The call boundary: wrapper signature, argument errors, cache hits and misses, stats, reset,
the recompile limit and eager fallback (pdyn/hook/eval_frame.py, pdyn/__init__.py)."""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable

import pytest
import torch

import pdyn
from pdyn.backends.eager import eager
from pdyn.base.config import Config
from pdyn.hook.eval_frame import Frame, make_wrapper


def optimized(fn: Callable[..., Any], config: Config | None = None, backend: Any = eager,
              fullgraph: bool = False) -> Any:
    """pdyn.optimize with its own Config, as optimize() would build it."""
    return make_wrapper(Frame(fn, backend, config or Config(), fullgraph))


def signature_zoo(a, b=2, /, c=3, *args, d, e=5, **kwargs):
    return a + b + c + sum(args) + d + e + sum(kwargs.values())


def test_wrapper_keeps_the_signature_name_and_defaults():
    w = pdyn.optimize(signature_zoo)
    assert inspect.signature(w) == inspect.signature(signature_zoo)
    assert str(inspect.signature(w.__wrapped__)) == "(a, b=2, /, c=3, *args, d, e=5, **kwargs)"
    assert w.__code__.co_varnames[:7] == signature_zoo.__code__.co_varnames[:7]
    assert w.__code__.co_argcount == 3 and w.__code__.co_posonlyargcount == 2
    assert w.__code__.co_kwonlyargcount == 2
    assert (w.__name__, w.__qualname__) == ("signature_zoo", "signature_zoo")
    assert len(w.__defaults__) == 2 and set(w.__kwdefaults__) == {"e"}


def test_defaults_changed_after_optimize_apply_as_in_eager():
    def f(x, k=2, *, m=1):
        return x * k + m

    w = pdyn.optimize(f)
    x = torch.ones(2)
    assert w(x).tolist() == [3.0, 3.0]
    f.__defaults__ = (5,)
    f.__kwdefaults__ = {"m": 0}
    assert w(x).tolist() == f(x).tolist() == [5.0, 5.0]
    assert w(x, 3, m=1).tolist() == [4.0, 4.0]   # passed explicitly: the defaults do not apply
    f.__defaults__ = None
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'k'"):
        w(x)


@pytest.mark.parametrize("args, kwargs", [
    ((torch.ones(2),), {"d": 1}),
    ((torch.ones(2), 1, 1, 1, 1), {"d": 1, "e": 1, "z": torch.ones(2)}),
    ((torch.ones(2),), {"c": torch.ones(2), "d": 2, "q": 3}),
])
def test_every_way_of_passing_arguments_matches_eager(args, kwargs):
    w = pdyn.optimize(signature_zoo)
    torch.testing.assert_close(w(*args, **kwargs), signature_zoo(*args, **kwargs))
    torch.testing.assert_close(w(*args, **kwargs), signature_zoo(*args, **kwargs))
    assert pdyn.stats(w)["cache_hits"] == 1


@pytest.mark.parametrize("args, kwargs", [
    ((), {}),
    ((1,), {}),
    ((1, 2, 3), {"d": 1, "c": 2}),
    ((1,), {"d": 1, "x": 2, "strict": True}),
    ((1,), {"a": 2, "d": 1, "strict": True}),
    ((1, 2), {"d": 1, "strict": True}),
])
def test_bad_arguments_raise_the_same_type_error_as_eager(args, kwargs):
    fn = strict if kwargs.pop("strict", False) else signature_zoo
    with pytest.raises(TypeError) as eager_error:
        fn(*args, **kwargs)
    with pytest.raises(TypeError) as pdyn_error:
        pdyn.optimize(fn)(*args, **kwargs)
    assert str(pdyn_error.value) == str(eager_error.value)


def strict(a, /, *, d):
    return a + d


def test_positional_only_name_passed_by_keyword_lands_in_kwargs():
    w = pdyn.optimize(signature_zoo)
    x = torch.ones(2)
    torch.testing.assert_close(w(x, d=1, a=torch.full((2,), 5.0)), signature_zoo(x, d=1, a=torch.full((2,), 5.0)))


def test_parameter_names_that_clash_with_wrapper_names_still_work():
    def f(L, G, pdyn_L, pdyn_checks, check, run, miss):
        return L + G + pdyn_L + pdyn_checks + check + run + miss

    w = pdyn.optimize(f)
    ones = [torch.ones(2) * i for i in range(7)]
    torch.testing.assert_close(w(*ones), f(*ones))
    torch.testing.assert_close(w(*ones), f(*ones))
    assert pdyn.stats(w)["cache_hits"] == 1


def test_closure_variables_are_read_on_every_call():
    scale = 2.0

    def f(x):
        return x * scale

    w = pdyn.optimize(f)
    torch.testing.assert_close(w(torch.ones(2)), torch.full((2,), 2.0))
    scale = 3.0
    torch.testing.assert_close(w(torch.ones(2)), torch.full((2,), 3.0))
    assert pdyn.stats(w)["compiles"] == 2


def test_hits_and_misses_are_counted_per_function():
    f = pdyn.optimize(lambda x: x + 1)
    g = pdyn.optimize(lambda x: x - 1)
    for _ in range(3):
        f(torch.ones(2))
    f(torch.ones(2, dtype=torch.float64))
    g(torch.ones(2))
    assert pdyn.stats(f) == {"frames": 4, "compiles": 2, "recompiles": 1, "cache_hits": 2, "graph_breaks": 0,
                             "eager_fallbacks": 0, "graphs": 2, "ops_captured": 2, "frames_without_graph": 0,
                             "kernels": 0, "graphs_on_torch": 0, "nodes_on_torch": 0, "library_calls": 0,
                             "backward_graphs": 0}
    assert pdyn.stats(g)["frames"] == 1 and pdyn.stats(g)["cache_hits"] == 0
    total = pdyn.stats()
    assert total["frames"] >= 5 and total["compiles"] >= 3


def test_global_stats_sum_over_functions():
    f = pdyn.optimize(lambda x: x + 1)
    g = pdyn.optimize(lambda x: x - 1)
    f(torch.ones(2)), f(torch.ones(2)), g(torch.ones(2))
    expected = {k: pdyn.stats(f)[k] + pdyn.stats(g)[k] for k in pdyn.stats(f)}
    assert pdyn.stats() == expected


def test_reset_forgets_entries_and_counters():
    f = pdyn.optimize(lambda x: x + 1)
    f(torch.ones(2)), f(torch.ones(2))
    pdyn.reset()
    assert pdyn.stats(f) == dict.fromkeys(pdyn.stats(f), 0)
    f(torch.ones(2))
    assert pdyn.stats(f)["compiles"] == 1 and pdyn.stats(f)["cache_hits"] == 0


def test_stats_of_a_plain_function_is_a_user_error():
    with pytest.raises(pdyn.UserError, match="not optimized by pdyn"):
        pdyn.stats(lambda x: x)


def test_recompile_limit_warns_once_then_runs_eagerly():
    def f(x):
        return x * 2

    w = optimized(f, Config(recompile_limit=2))
    dtypes = [torch.float32, torch.float64, torch.float16, torch.int32, torch.int64]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for dtype in dtypes:
            torch.testing.assert_close(w(torch.ones(3, dtype=dtype)), torch.full((3,), 2, dtype=dtype))
    limit = [str(c.message) for c in caught if "recompile limit" in str(c.message)]
    assert len(limit) == 1, limit
    assert "f() at " in limit[0] and "(2)" in limit[0]
    assert pdyn.stats(w)["compiles"] == 2 and pdyn.stats(w)["frames"] == 5
    w(torch.ones(3))
    assert pdyn.stats(w)["cache_hits"] == 1  # earlier entries still serve


def failing_backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
    raise RuntimeError("backend exploded")


def test_internal_error_falls_back_to_eager_with_one_warning():
    def f(x):
        return x + 1

    w = optimized(f, backend=failing_backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (2, 3, 2):
            torch.testing.assert_close(w(torch.ones(n, n)), torch.full((n, n), 2.0))
    messages = [str(c.message) for c in caught]
    assert len(messages) == 1, messages
    assert "internal error while compiling f()" in messages[0] and "backend exploded" in messages[0]
    assert pdyn.stats(w)["compiles"] == 0 and pdyn.stats(w)["frames"] == 3


def test_user_exception_is_raised_as_eager_raises_it():
    def f(x):
        return x @ x

    with pytest.raises(RuntimeError) as eager_error:
        f(torch.ones(2, 3))
    with pytest.raises(RuntimeError) as pdyn_error:
        pdyn.optimize(f)(torch.ones(2, 3))
    assert str(pdyn_error.value) == str(eager_error.value)


class OwnInit(Exception):
    """An exception whose class has its own __init__: pdyn cannot rebuild it for a resume function."""

    def __init__(self, what):
        super().__init__(what)


def uses_try(x):
    try:
        raise OwnInit("traced")
    except OwnInit:
        return pdyn.graph_break() or x + 1  # a break handling OwnInit: no resume function


def test_fullgraph_raises_unsupported_naming_the_user_file_and_line():
    w = optimized(uses_try, fullgraph=True)
    with pytest.raises(pdyn.Unsupported) as error:
        w(torch.ones(2))
    line = uses_try.__code__.co_firstlineno + 4
    assert error.value.loc.filename == __file__ and error.value.loc.lineno == line
    assert f"{__file__}:{line}" in str(error.value)
    assert "return pdyn.graph_break() or x + 1" in str(error.value)


def test_without_fullgraph_unsupported_runs_eagerly_and_counts_a_fallback():
    w = optimized(uses_try)
    torch.testing.assert_close(w(torch.ones(2)), torch.full((2,), 2.0))
    torch.testing.assert_close(w(torch.ones(2)), torch.full((2,), 2.0))
    stats = pdyn.stats(w)
    assert stats["eager_fallbacks"] == 1 and stats["compiles"] == 1 and stats["cache_hits"] == 1


def test_optimize_accepts_a_partial_and_a_callable_object():
    def scaled(x, y, scale):
        return x * scale + y

    class Affine:
        def __init__(self, a):
            self.a = a

        def __call__(self, x):
            return x * self.a

    p = pdyn.optimize(functools.partial(scaled, scale=2))
    x = torch.ones(3)
    assert p(x, x).tolist() == [3.0] * 3 and p(x, x, scale=3).tolist() == [4.0] * 3
    assert pdyn.stats(p)["compiles"] == 1 and pdyn.stats(p)["cache_hits"] == 1   # scale is a symbolic int
    a = pdyn.optimize(Affine(4.0))
    assert a(x).tolist() == [4.0] * 3 and pdyn.stats(a)["compiles"] == 1


def test_optimize_rejects_what_it_cannot_trace():
    with pytest.raises(pdyn.UserError, match="takes a function"):
        pdyn.optimize(42)
    with pytest.raises(pdyn.UserError, match="dynamic must be"):
        pdyn.optimize(lambda x: x, dynamic="yes")


def test_optimize_as_decorator_with_arguments_and_on_a_method():
    @pdyn.optimize(backend="eager")
    def f(x):
        return x + 1

    class Box:
        def scale(self, x):
            return x * 3

    m = pdyn.optimize(Box().scale)
    torch.testing.assert_close(f(torch.ones(2)), torch.full((2,), 2.0))
    torch.testing.assert_close(m(torch.ones(2)), torch.full((2,), 3.0))


def test_entries_are_kept_per_backend():
    """One function optimized for two backends: each call runs what its own backend compiled,
    and a second optimize() with the same backend shares the first one's entries."""
    ran: list[str] = []

    def backend_named(name: str) -> Callable[..., Any]:
        def backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
            def run(*args: Any) -> Any:
                ran.append(name)
                return gm.forward(*args)
            return run
        return backend

    def f(x):
        return x * 2

    first, second = backend_named("first"), backend_named("second")
    a, b, a_again = pdyn.optimize(f, backend=first), pdyn.optimize(f, backend=second), pdyn.optimize(f, backend=first)
    x = torch.ones(3)
    for g in (a, b, a_again):
        torch.testing.assert_close(g(x), x * 2)
    assert ran == ["first", "second", "first"]
    assert pdyn.stats(a)["compiles"] == 1 and pdyn.stats(b)["compiles"] == 1
    assert pdyn.stats(a_again)["cache_hits"] == 1
