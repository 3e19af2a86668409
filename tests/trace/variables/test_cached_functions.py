"""functools.lru_cache / functools.cache functions called in the trace
(pdyn/trace/variables/stdlib/cached_functions.py): the cache filled and read as eager does, no break."""

import functools
import typing

import torch

import pdyn
from tests.helpers import check_calls

CALLS = []


@functools.lru_cache
def scale_for(name: str) -> float:
    CALLS.append(name)  # a miss runs the body: counted to compare with eager
    return {"small": 0.5, "big": 2.0}[name]


@functools.cache
def optional_of(kind):
    return typing.Optional[kind]


@functools.lru_cache(maxsize=None)
def head_dim(hidden, heads):
    return hidden // heads


@functools.lru_cache
def mask_for(n):
    return torch.ones(n, n).tril()


@functools.lru_cache
def noisy(n):
    CALLS.append(n)
    return n * 2


def test_constant_arguments_read_the_cache_as_eager_does():
    def f(x, name):
        return x * scale_for(name) + (1 if optional_of(int) is not None else 0)

    CALLS.clear()
    scale_for.cache_clear()
    opt = pdyn.optimize(f, backend="eager")
    for name in ("small", "small", "big", "small"):
        x = torch.randn(3)
        torch.testing.assert_close(opt(x, name), f(x, name))
    assert CALLS == ["small", "big"]  # one miss per key, as eager alone would make
    stats = pdyn.stats(opt)
    assert (stats["graph_breaks"], stats["eager_fallbacks"], stats["graphs"], stats["compiles"]) == (0, 0, 2, 2), stats


def test_a_cleared_cache_is_called_again():
    def f(x):
        return x * scale_for("big")

    CALLS.clear()
    scale_for.cache_clear()
    opt = pdyn.optimize(f, backend="eager")
    x = torch.randn(2)
    opt(x), opt(x)
    scale_for.cache_clear()
    torch.testing.assert_close(opt(x), x * 2.0)
    assert CALLS == ["big", "big"]  # the guard's call refills the cache as eager's call would
    assert (pdyn.stats(opt)["eager_fallbacks"], pdyn.stats(opt)["graphs"]) == (0, 1)


def test_symbolic_sizes_trace_the_wrapped_function():
    def f(x, w):
        d = head_dim(x.shape[-1], 2)
        return x.view(x.shape[0], 2, d) * w

    opt = check_calls(f, (torch.randn(3, 8), 2.0), (torch.randn(5, 6), 2.0), (torch.randn(4, 10), 2.0), compiles=1)
    assert (pdyn.stats(opt)["eager_fallbacks"], pdyn.stats(opt)["graph_breaks"]) == (0, 0)


def test_cached_tensors_and_impure_bodies_break_cleanly():
    def f(x, n):
        return x + mask_for(x.shape[0]).sum() + noisy(n)

    CALLS.clear()
    check_calls(f, (torch.randn(3), 4), (torch.randn(4), 4), (torch.randn(3), 5))
    reasons = [r.reason for r in pdyn.explain(f)(torch.randn(3), 4).break_reasons]
    assert any("cache keys it" in r or "the one cached object" in r for r in reasons), reasons


def test_wrapper_attributes():
    def f(x):
        return x * len(scale_for.__name__) if scale_for.__wrapped__ is not None else x

    opt = check_calls(f, (torch.randn(3),), (torch.randn(4),))
    assert (pdyn.stats(opt)["eager_fallbacks"], pdyn.stats(opt)["graph_breaks"]) == (0, 0)
