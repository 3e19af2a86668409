"""A function made per call (a lambda, a nested def, a closure) that crosses a graph break, or is
passed to an optimized function, is guarded by what Python's behaviour depends on: its code and
globals by identity, the shape of its defaults, and the values its defaults and closure cells
hold, read through their sources (`L['g'].__closure__[0].cell_contents`) and guarded as any input.
So a new function object each call does not recompile; an `is` that decides by the object pins it.
Each case against eager, with exact graphs, breaks and compiles over every frame pdyn compiled."""

from __future__ import annotations

import io

import torch

from tests.e2e.test_break_in_blocks import run

SINK = io.StringIO()


def test_a_new_lambda_each_call_compiles_the_resume_function_once():
    def f(x, k):
        scale = x.sum()
        g = lambda t: t * scale + k  # noqa: E731
        print("break", file=SINK)
        return g(x)

    calls = [(torch.randn(3), 2) for _ in range(6)]
    run(f, *calls, graphs=[["sum"], ["mul", "add"]], breaks=1, compiles=2)


def test_a_nested_def_with_a_default_crosses_the_break():
    def f(x, n):
        def inner(t, m=n):
            return t + m
        print("break", file=SINK)
        return inner(x) * 2

    # n is a size (2..7): the default is read as one, symbolic, so no value recompiles
    run(f, *[(torch.ones(2), n) for n in range(2, 8)], graphs=[["add", "mul"]], breaks=1, compiles=2)


def test_a_closure_over_a_list_reads_the_list_each_call():
    def f(x, items):
        total = [x]
        add = lambda t: t + sum(items) + total[0]  # noqa: E731
        print("break", file=SINK)
        return add(x)

    # the resume function reads each cell's contents through its source: a list of another
    # length is another compile, the same length is not
    run(f, (torch.ones(2), [torch.ones(2), torch.ones(2)]), (torch.ones(2), [torch.randn(2), torch.randn(2)]),
        (torch.ones(2), [torch.randn(2) for _ in range(3)]), graphs=[["add"] * 4, ["add"] * 5], breaks=2, compiles=4)


def make_scaler(c):
    return lambda t: t * c


def make_keyword(c):
    def scaled(t, *, s=c):
        return t * s
    return scaled


def test_a_closure_passed_as_an_argument_compiles_once():
    def f(x, fn):
        return fn(x) + 1

    run(f, *[(torch.ones(2), make_scaler(torch.full((2,), float(i)))) for i in range(6)],
        graphs=[["mul", "add"]], breaks=0, compiles=1)


def test_keyword_defaults_are_read_through_the_function():
    def f(x, fn):
        return fn(x)

    run(f, *[(torch.ones(2), make_keyword(torch.tensor(float(i)))) for i in range(3)],
        graphs=[["mul"]], breaks=0, compiles=1)


def test_changed_defaults_recompile():
    def f(x, fn):
        return fn(x)

    def made(n):
        def g(t, a=1.5):
            return t * a
        if n:
            g.__defaults__ = (3.0,)   # a float default is guarded by value
        return g

    run(f, (torch.ones(2), made(0)), (torch.ones(2), made(1)), (torch.ones(2), made(0)),
        graphs=[["mul"], ["mul"]], breaks=0, compiles=2)


SAVED = [make_scaler(2.0)]


def test_an_is_test_pins_the_function_itself():
    def f(x, fn):
        if fn is SAVED[0]:
            return x + 1
        return fn(x)

    # the is test decides by the object: each entry is pinned to the one it saw
    first = SAVED[0]
    run(f, (torch.ones(2), first), (torch.ones(2), make_scaler(2.0)), (torch.ones(2), first),
        (torch.ones(2), make_scaler(3.0)), graphs=[["add"], ["mul"], ["mul"]], breaks=0, compiles=3)


def test_an_is_none_test_does_not_pin_the_function():
    def f(x, fn):
        if fn is not None:
            x = fn(x)
        return x + 1

    run(f, *[(torch.ones(2), make_scaler(torch.full((2,), float(i)))) for i in range(4)],
        graphs=[["mul", "add"]], breaks=0, compiles=1)
