"""A generator made in the trace (a generator function called, a generator expression) that is
live across a graph break. One not started yet is made again by the frame code, by the same call
(which runs none of its code); one the trace started exists only in the trace, so the trace
restarts with a graph break at the instruction that made it (pdyn/trace/variables/restart.py)
and it crosses that break as a real generator (consumed for real after it). Each case against
eager (the generator's body logs each step: each runs once, in eager's order), with exact
graphs, breaks, compiles and fallbacks over every frame pdyn compiled."""

from __future__ import annotations

import io
import types

import torch

import pdyn
from tests.e2e.test_break_in_blocks import run
from tests.helpers import assert_same

SINK = io.StringIO()


def steps(x, n, log):
    for i in range(n):
        log.append(("step", i))
        yield x * i
    log.append("done")


def test_a_generator_not_started_is_made_again_after_the_break():
    def f(x, log):
        g = steps(x + 1, 3, log)
        print("break", file=SINK)
        return sum(g)

    # f [add]; its resume function breaks at sum() over the real generator, which runs there
    run(f, (torch.ones(2), []), (torch.ones(2), []), graphs=[["add"]], breaks=2, compiles=3)


def test_a_generator_expression_not_started_is_made_again():
    def f(x):
        g = (t * 2 for t in [x, x + 1])
        print("break", file=SINK)
        return list(g)

    run(f, (torch.ones(2),), (torch.ones(2),), graphs=[["add"]], breaks=2, compiles=3)


def test_a_generator_the_trace_started_breaks_where_it_was_made():
    def f(x, log):
        g = steps(x + 1, 3, log)
        first = next(g)
        print("break", file=SINK)
        return first + sum(g)

    # f [add] restarts and breaks at the call that made the generator; next(), print and sum()
    # then break in the resume functions (a real generator runs only for real); the last [add]
    run(f, (torch.ones(2), []), (torch.ones(2), []), graphs=[["add"], ["add"]], breaks=4, compiles=5)


def test_a_loop_over_a_generator_with_a_break_in_its_body():
    def f(x, log):
        out = x
        for t in steps(x * 2, 3, log):
            out = out + t
            print("break", file=SINK)
        return out

    # f [mul] breaks at the call that made the generator; the loop over the real generator runs
    # eagerly in its resume function (pdyn cannot advance a real generator in a trace)
    run(f, (torch.ones(2), []), (torch.ones(2), []), graphs=[["mul"]], breaks=2, compiles=3, fallbacks=1)


def test_a_generator_both_held_and_on_the_stack_stays_one_generator():
    def f(x, log):
        g = steps(x, 4, log)
        it = iter(g)
        print("break", file=SINK)
        return next(it) + next(g), it is g

    run(f, (torch.ones(2), []), (torch.ones(2), []), graphs=[["add"]], breaks=3, compiles=4)


def returned(fn, *args):
    """`fn`'s generator drained, and the log, eagerly and optimized; and pdyn's counters."""
    out = []
    for call in (fn, pdyn.optimize(fn)):
        log = []
        gen = call(*args, log)
        assert type(gen) is types.GeneratorType
        out.append((log[:], list(gen), log))
    (log_e, items_e, end_e), (log_c, items_c, end_c) = out
    assert log_c == log_e and end_c == end_e
    assert_same(items_c, items_e)
    stats = pdyn.stats()
    return stats["graph_breaks"], stats["compiles"], stats["eager_fallbacks"]


def test_a_returned_generator_not_started_is_made_after_the_graph():
    def f(x, log):
        return steps(x + 1, 2, log)

    pdyn.reset()
    assert returned(f, torch.ones(2)) == (0, 1, 0)


def test_a_returned_generator_the_trace_started_breaks_where_it_was_made():
    def f(x, log):
        g = steps(x + 1, 3, log)
        next(g)
        return g

    pdyn.reset()
    assert returned(f, torch.ones(2)) == (2, 3, 0)
