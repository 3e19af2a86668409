"""A graph break inside a called function, for every form of call: the caller breaks at the call
instruction and the callee runs optimized on its own, so the callee's code before and after its
own break is compiled too. Each case is compared with eager and asserts, per code object, the
compiles, breaks and eager fallbacks and the ops of every graph."""

from __future__ import annotations

import functools

import pytest
import torch

import pdyn
from tests.break_counts import by_code, compiles_by_code
from tests.helpers import check_calls

# an internal error (pdyn runs the code eagerly and warns) fails the test
pytestmark = pytest.mark.filterwarnings("error:pdyn")

X, Y = torch.randn(3), torch.randn(3)
CALLS = [(X, Y), (X + 1, Y), (X, Y * 2)]     # same sizes: one compile per code object


def inner(x, y):
    a = x.sin()
    print("inner")
    return a + y.cos()


INNER = {"inner": {"compiles": 1, "breaks": 1, "eager": 0, "graphs": [("sin",)]},
         "inner.<resume 1>": {"compiles": 1, "breaks": 0, "eager": 0, "graphs": [("cos", "add")]}}


def run(fn, calls=CALLS):
    pdyn.reset()
    check_calls(fn, *calls)
    return by_code()


def caller(name):
    return {name: {"compiles": 1, "breaks": 1, "eager": 0, "graphs": [()]},
            f"{name}.<resume 1>": {"compiles": 1, "breaks": 0, "eager": 0, "graphs": [("mul",)]}}


def call_positional(x, y):
    return inner(x, y) * 2


def call_star_kwargs(x, y):
    return inner(*(x,), **{"y": y}) * 2


def call_star(x, y):
    args = (x, y)
    return inner(*args) * 2


def test_positional_call():
    assert run(call_positional) == {**caller("call_positional"), **INNER}


def test_star_args_and_kwargs_call():
    assert run(call_star_kwargs) == {**caller("call_star_kwargs"), **INNER}


def test_star_args_call():
    assert run(call_star) == {**caller("call_star"), **INNER}


def test_a_rebound_global_callee_is_guarded():
    def f(x, y):
        return helper(x, y) * 2

    def first(x, y):
        print("first")
        return x + y

    def second(x, y):
        print("second")
        return x - y
    pdyn.reset()
    opt = pdyn.optimize(f)
    for helper_fn in (first, second, first):
        globals()["helper"] = helper_fn
        assert torch.equal(opt(X, Y), f(X, Y))
    del globals()["helper"]
    assert pdyn.stats(opt)["compiles"] == 2


class Obj:
    def meth(self, x):
        x = x + 1
        print("meth")
        return x * 2

    def __call__(self, x):
        x = x - 1
        print("call")
        return x * 3


OBJ = Obj()


def test_method_call():
    counts = run(lambda x, y: OBJ.meth(x).relu() + y)
    assert counts["Obj.meth"] == {"compiles": 1, "breaks": 1, "eager": 0, "graphs": [("add",)]}
    assert counts["Obj.meth.<resume 1>"]["graphs"] == [("mul",)]
    assert sorted(compiles_by_code().values()) == [(1, 0, 0), (1, 0, 0), (1, 1, 0), (1, 1, 0)]


def test_callable_object():
    counts = run(lambda x, y: OBJ(x).relu() + y)
    assert counts["Obj.__call__"] == {"compiles": 1, "breaks": 1, "eager": 0, "graphs": [("sub",)]}
    assert counts["Obj.__call__.<resume 1>"]["graphs"] == [("mul",)]


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        x = self.lin(x)
        print("block")
        return x.relu()


class Wrapper(torch.nn.Module):
    """forward(*args, **kwargs) delegating to a submodule: the shape of many model layers."""

    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, *args, **kwargs):
        return self.block(*args, **kwargs) * 2


def test_module_callee():
    block = Block()
    counts = run(lambda x, y: block(x) + y)
    assert counts["Block.forward"] == {"compiles": 1, "breaks": 1, "eager": 0, "graphs": [("linear",)]}
    assert counts["Block.forward.<resume 1>"]["graphs"] == [("relu",)]


def test_module_forward_with_star_args_two_levels():
    wrapper = Wrapper()
    counts = run(lambda x, y: wrapper(x) + y)
    assert counts["Wrapper.forward"] == {"compiles": 1, "breaks": 1, "eager": 0, "graphs": [()]}
    assert counts["Wrapper.forward.<resume 1>"]["graphs"] == [("mul",)]
    assert counts["Block.forward"]["graphs"] == [("linear",)]
    assert counts["Block.forward.<resume 1>"]["graphs"] == [("relu",)]


def test_module_with_a_hook_added_later_runs_it():
    block = Block()
    calls = []

    def f(x):
        return block(x) + 1
    pdyn.reset()
    opt = pdyn.optimize(f)
    assert torch.equal(opt(X), f(X))
    handle = block.register_forward_hook(lambda m, args, out: calls.append(1))
    assert torch.equal(opt(X), f(X))
    assert calls == [1, 1]     # eager's call and pdyn's
    handle.remove()


def test_module_forward_patched_later_is_called():
    block = Block()

    def f(x):
        return block(x) + 1
    pdyn.reset()
    opt = pdyn.optimize(f)
    assert torch.equal(opt(X), f(X))
    block.forward = lambda x: x * 10
    try:
        assert torch.equal(opt(X), X * 10 + 1)
    finally:
        del block.forward


def deco(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


@deco
def decorated(x, y):
    x = x + y
    print("decorated")
    return x * 2


def test_decorator_wrapper():
    counts = run(lambda x, y: decorated(x, y=y).relu())
    assert counts["deco.<locals>.wrapper"] == {"compiles": 1, "breaks": 1, "eager": 0, "graphs": [()]}
    assert counts["decorated"] == {"compiles": 1, "breaks": 1, "eager": 0, "graphs": [("add",)]}
    assert counts["decorated.<resume 1>"]["graphs"] == [("mul",)]


LAMBDA = lambda x: (x + 1, print("lambda"))[0] * 2  # noqa: E731


def make_closure(k):
    def closure(x):
        x = x + k
        print("closure")
        return x * k
    return closure


CLOSURE = make_closure(3)


def test_lambda():
    counts = run(lambda x, y: LAMBDA(x) - y)
    assert counts["<lambda>"] == {"compiles": 1, "breaks": 1, "eager": 0, "graphs": [("add",)]}


def test_closure():
    counts = run(lambda x, y: CLOSURE(x) - y)
    assert counts["make_closure.<locals>.closure"] == {"compiles": 1, "breaks": 1, "eager": 0, "graphs": [("add",)]}
    assert counts["make_closure.<locals>.closure.<resume 1>"]["graphs"] == [("mul",)]


def level2(x):
    x = x.cos()
    print("level2")
    return x.sin()


def level1(x):
    return level2(x + 1) * 2


def test_two_levels_deep():
    counts = run(lambda x, y: level1(x) - y)
    assert counts["level1"] == {"compiles": 1, "breaks": 1, "eager": 0, "graphs": [("add",)]}
    assert counts["level1.<resume 1>"]["graphs"] == [("mul",)]
    assert counts["level2"] == {"compiles": 1, "breaks": 1, "eager": 0, "graphs": [("cos",)]}
    assert counts["level2.<resume 1>"]["graphs"] == [("sin",)]


def test_a_function_made_in_the_frame_runs_as_it_is():
    def f(x, y):
        def local(t):
            print("local")
            return t + y
        return local(x) * 2

    counts = run(f)
    assert counts["test_a_function_made_in_the_frame_runs_as_it_is.<locals>.f"]["breaks"] == 1
    assert all(c["eager"] == 0 for c in counts.values())


def test_callee_sizes_change_compiles_callee_once():
    calls = [(torch.randn(n), torch.randn(n)) for n in range(2, 8)]
    counts = run(call_positional, calls)
    assert compiles_by_code() == {"call_positional": (1, 1, 0), "call_positional.<resume 1>": (1, 0, 0),
                                  "inner": (1, 1, 0), "inner.<resume 1>": (1, 0, 0)}
    assert counts["inner"]["graphs"] == [("sin",)]


class Breaking(torch.nn.Module):
    def forward(self, x):
        y = x.sin()
        print("breaking")
        return y.cos()


class CallWrapped(Breaking):
    """transformers' layers: `__call__(*args, **kwargs)` ending in `super().__call__(...)`."""

    def __call__(self, *args, **kwargs):
        if getattr(self, "checkpointing", False):
            return None
        return super().__call__(*args, **kwargs)


WRAPPED = CallWrapped()


def test_a_break_under_super_call_of_an_overriding_call_breaks_that_frame_not_runs_it_eagerly():
    counts = run(lambda x, y: WRAPPED(x * 2) + y)
    assert counts["CallWrapped.__call__"] == {"compiles": 1, "breaks": 1, "eager": 0, "graphs": [()]}
    assert counts["Breaking.forward"] == {"compiles": 1, "breaks": 1, "eager": 0, "graphs": [("sin",)]}
    assert counts["Breaking.forward.<resume 1>"]["graphs"] == [("cos",)]
