"""Functions as values: their attributes (`__code__`, `__name__`, `__wrapped__`, defaults), decorators
made with functools.wraps that read them, functions in containers, callable() and id() comparisons.
Each read is guarded: a rebound attribute recompiles."""

from __future__ import annotations

import functools

import torch

import pdyn
from tests.helpers import check_calls


def arg_aware(func):
    """As transformers' decorators do: read the wrapped function's argument names at call time."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        names = func.__code__.co_varnames[:func.__code__.co_argcount]
        if "scale" in names and func.__name__.startswith("scaled"):
            return func(*args, **kwargs) * names.index("scale")
        return func(*args, **kwargs)
    return wrapper


@arg_aware
def scaled_add(x, scale=2.0):
    """Adds."""
    return x + scale


def plain(x):
    return x - 1


def test_decorator_reads_code_of_wrapped_function():
    def f(x):
        return scaled_add(x) + scaled_add.__wrapped__(x, 3.0)

    opt = check_calls(f, (torch.randn(3),), (torch.randn(5),), (torch.randn(7),), compiles=1)
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_function_attributes_are_constants():
    def f(x):
        n = len(plain.__name__) + len(scaled_add.__qualname__) + len(plain.__module__)
        doc = scaled_add.__doc__
        return x * n + scaled_add.__wrapped__.__defaults__[0] + (doc == "Adds.") + plain.__code__.co_argcount

    opt = check_calls(f, (torch.randn(2, 3),), (torch.randn(4, 3),), compiles=1)
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_rebound_defaults_recompile():
    def target(x, k=2.0):
        return x * k

    def f(x):
        return x + target.__defaults__[0]

    opt = pdyn.optimize(f, backend="eager")
    x = torch.ones(2)
    assert opt(x).tolist() == [3.0, 3.0]
    target.__defaults__ = (5.0,)
    assert opt(x).tolist() == [6.0, 6.0]
    assert pdyn.stats(opt)["compiles"] == 2


def test_method_attributes():
    class M(torch.nn.Module):
        def forward(self, x):
            return x * len(self.helper.__name__) + (self.helper.__self__ is self) + (self.helper.__func__ is M.helper)

        def helper(self):
            return 1

    opt = check_calls(M(), (torch.randn(3),), (torch.randn(4),), compiles=1)
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_nested_function_attributes_and_wraps_inside_the_trace():
    def f(x):
        def inner(y, k=3):
            return y * k

        @functools.wraps(inner)
        def outer(y):
            return inner(y) + 1

        return outer(x) + len(outer.__name__) + outer.__wrapped__.__defaults__[0] + len(inner.__qualname__)

    opt = check_calls(f, (torch.randn(3),), (torch.randn(6),), compiles=1)
    assert pdyn.stats(opt)["graph_breaks"] == 0


TABLE = {"relu": torch.relu, "plain": plain}


def test_functions_in_dicts_and_lists_callable_and_id():
    def f(x, name):
        fns = [plain, TABLE[name]]
        out = x
        for fn in fns:
            if callable(fn):
                out = fn(out)
        return out + (id(fns[0]) == id(plain)) + (id(TABLE[name]) != id(plain)) + callable(3)

    opt = check_calls(f, (torch.randn(3), "relu"), (torch.randn(5), "relu"), (torch.randn(5), "plain"), compiles=2)
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_inspect_signature_of_a_bound_method_is_a_constant():
    """transformers' apply_chunking_to_forward reads `inspect.signature(forward_fn).parameters`."""
    import inspect

    class Block:
        def forward(self, hidden, mask=None):
            return hidden

    block = Block()

    def f(x):
        params = inspect.signature(block.forward).parameters
        return x * len(params), "mask" in params, list(params)

    opt = check_calls(f, (torch.randn(3),), (torch.randn(5),), compiles=1)
    assert pdyn.stats(opt)["graph_breaks"] == 0
