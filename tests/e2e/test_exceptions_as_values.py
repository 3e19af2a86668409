"""Exceptions as values: an input exception's fields, str and repr traced with guards on what is
read; the exception the caller is handling when the frame starts (a new exception's `__context__`,
`sys.exc_info()`) guarded, so a call from inside a caller's `except` is right. Each case against
eager, with exact graphs (their ops), breaks and compiles."""

from __future__ import annotations

import sys

import torch

import pdyn
from tests.e2e.test_break_in_handlers import same_as_eager
from tests.helpers import CountingBackend, assert_same


class Coded(Exception):
    pass


class Described(Exception):
    def __str__(self):
        return f"described {self.args[0]}"


def ops_of(backend):
    return [[n.name.rstrip("_0123456789") for n in g.graph.nodes if n.op not in ("placeholder", "output")]
            for g in backend.graphs]


def counts():
    stats = pdyn.stats()
    return stats["graph_breaks"], stats["compiles"], stats["eager_fallbacks"]


def run_on(fn, calls, *, graphs, breaks, compiles):
    """`fn(*args)` for each call against eager on the very same arguments (reading an exception
    changes nothing), then the graphs' ops and the counts."""
    pdyn.reset()
    backend = CountingBackend()
    opt = pdyn.optimize(fn, backend=backend)
    for args in calls:
        assert_same(opt(*args), fn(*args))
    assert ops_of(backend) == graphs
    assert counts() == (breaks, compiles, 0), pdyn.stats()


def test_reading_an_input_exception_is_traced_with_guards_on_what_it_reads():
    def f(x, e):
        kind = (type(e) is ValueError, e.__class__.__name__, isinstance(e, LookupError))
        return x + e.args[1], str(e), repr(e), kind, e.__cause__, e.__context__, len(e.args)

    one, other = ValueError("a", 2), ValueError("a", 2)
    run_on(f, [(torch.ones(2), one), (torch.ones(3), other)], graphs=[["add"]], breaks=0, compiles=1)
    # str and repr read the args' values: other args are another entry; another class too
    run_on(f, [(torch.ones(2), one), (torch.ones(2), ValueError("b", 2)), (torch.ones(2), KeyError("a", 2))],
           graphs=[["add"]] * 3, breaks=0, compiles=3)


def test_str_and_repr_follow_the_class_of_the_exception():
    def f(x, e):
        return x * 2, str(e), repr(e)

    run_on(f, [(torch.ones(2), KeyError("k"))], graphs=[["mul"]], breaks=0, compiles=1)  # str is repr(arg)
    run_on(f, [(torch.ones(2), ValueError())], graphs=[["mul"]], breaks=0, compiles=1)
    run_on(f, [(torch.ones(2), Described(7))], graphs=[["mul"]], breaks=0, compiles=1)  # __str__ inlined


def test_attributes_set_on_an_input_exception_and_its_cause():
    def f(x, e):
        return x * e.code, e.__cause__.args[0], e.__suppress_context__

    def make(code):
        try:
            try:
                raise KeyError("why")
            except KeyError as cause:
                raise Coded("c") from cause
        except Coded as e:
            e.code = code
            return e

    run_on(f, [(torch.ones(2), make(3)), (torch.ones(2), make(4))], graphs=[["mul"]], breaks=0, compiles=1)


def test_except_as_e_with_a_print_costs_one_break():
    def f(x):
        y = x + 1
        try:
            raise ValueError(3)
        except ValueError as e:
            print("handling", e)
            return y * e.args[0]

    # the resume function reads e.args of the exception it re-enters with, no second break
    same_as_eager(f, (torch.ones(2),), (torch.ones(3),), graphs=[["add"], ["mul"]], breaks=1, compiles=2)


def test_a_caught_exceptions_context_is_the_callers_handled_exception():
    def f(x):
        y = x + 1
        try:
            raise ValueError("inside")
        except ValueError as e:
            context = repr(e.__context__)
        return y, context

    # called as is: traced with a guard that no exception is being handled when it starts
    same_as_eager(f, (torch.ones(2),), (torch.ones(2),), graphs=[["add"]], breaks=0, compiles=1)
    # called inside a caller's handler: reading the context breaks (Python reads it, the resume
    # function re-enters the handler), and the entry traced for calls handling none does not apply
    same_as_eager(f, (torch.ones(2),), outer=KeyError, graphs=[["add"]], breaks=1, compiles=2)


def test_calls_inside_and_outside_a_handler_each_get_their_entry():
    def f(x):
        try:
            raise ValueError("inside")
        except ValueError as e:
            return x - 1, repr(e.__context__)

    pdyn.reset()
    opt = pdyn.optimize(f, backend=CountingBackend())
    for outer in (None, KeyError, None, KeyError, RuntimeError):
        args = (torch.ones(2),)
        if outer is None:
            assert_same(opt(*args), f(*args))
            continue
        try:
            raise outer("outer")
        except Exception:
            assert_same(opt(*args), f(*args))
    # one entry handling none, one for calls handling any (breaking where the context is read); its
    # resume function receives the context: one entry per class of it
    assert counts() == (1, 4, 0), pdyn.stats()


def test_sys_exc_info_at_frame_start():
    def f(x):
        return x + 1, sys.exc_info()

    same_as_eager(f, (torch.ones(2),), (torch.ones(2),), graphs=[["add"]], breaks=0, compiles=1)
    same_as_eager(f, (torch.ones(2),), (torch.ones(2),), outer=KeyError, graphs=[["add"]], breaks=1, compiles=2)


def test_f_strings_of_an_input_exception():
    def f(x, e):
        return x + 1, f"failed: {e}", f"{e!r} / {e!s}"

    run_on(f, [(torch.ones(2), KeyError("k")), (torch.ones(3), KeyError("k"))], graphs=[["add"]], breaks=0,
           compiles=1)
    run_on(f, [(torch.ones(2), Described(3))], graphs=[["add"]], breaks=0, compiles=1)


def test_a_raise_from_an_input_exception_with_its_message():
    def f(x, e):
        y = x * 2
        if y.shape[0] > 1:
            raise RuntimeError(f"wrapped: {e}") from e
        return y

    pdyn.reset()
    opt = pdyn.optimize(f, backend=CountingBackend())
    cause = ValueError("inner")
    for fn in (f, opt):
        try:
            fn(torch.ones(2), cause)
        except RuntimeError as err:
            assert (str(err), err.__cause__) == ("wrapped: inner", cause)
    assert_same(opt(torch.ones(1), cause), f(torch.ones(1), cause))
