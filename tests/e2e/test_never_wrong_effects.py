"""Exceptions and side effects as in eager, what users pass to `optimize`, and threads: each test
runs one compiled function over calls that cross its guards and compares with eager."""

from __future__ import annotations

import collections
import threading
import warnings

import pytest
import torch

import pdyn
from tests.helpers import check_calls

LOG: list = []
COUNT = 0


@pytest.fixture(autouse=True)
def empty_log():
    global COUNT
    LOG.clear()
    COUNT = 0
    yield
    LOG.clear()


def run_both(fn, *calls, backend="eager"):
    """Eager's and pdyn's (result or exception type, LOG, COUNT) for each call."""
    global COUNT
    outcomes = []
    for runner in (fn, pdyn.optimize(fn, backend=backend)):
        LOG.clear()
        COUNT = 0
        seen = []
        for args in calls:
            try:
                value = runner(*args)
                seen.append(("ok", value.tolist() if isinstance(value, torch.Tensor) else value))
            except Exception as e:
                seen.append(("raised", type(e).__name__))
        outcomes.append((seen, list(LOG), COUNT))
    return outcomes


@pytest.mark.parametrize("backend", ["eager", "triton"])
def test_side_effects_before_an_op_that_raises_at_run_time_happen(backend):
    def f(x):
        global COUNT
        LOG.append(x.shape[0])
        COUNT += 1
        return x.abs().max()   # max() of an empty tensor raises

    eager, compiled = run_both(f, (torch.ones(3, 2),), (torch.ones(0, 2),), (torch.ones(4, 2),), backend=backend)
    assert compiled == eager
    assert eager[0][1] == ("raised", "RuntimeError") and eager[1] == [3, 0, 4] and eager[2] == 3


def test_a_graph_that_raises_after_a_random_op_draws_as_eager_draws():
    def f(x, i):
        LOG.append(1)
        return torch.dropout(x, 0.5, True)[i]

    torch.manual_seed(0)
    with pytest.raises(IndexError):
        f(torch.ones(4), torch.tensor(7))
    expected = torch.rand(3)
    g = pdyn.optimize(f)
    g(torch.ones(4), torch.tensor(1))
    torch.manual_seed(0)
    with pytest.raises(IndexError):
        g(torch.ones(4), torch.tensor(7))
    assert torch.equal(torch.rand(3), expected)


def test_a_graph_that_writes_its_input_is_not_run_twice():
    def f(x, i):
        x.add_(1)
        return x[i]

    eager_x, pdyn_x = torch.zeros(3), torch.zeros(3)
    g = pdyn.optimize(f)
    for x, fn in ((eager_x, f), (pdyn_x, g)):
        fn(x, torch.tensor(0))
        with pytest.raises(IndexError):
            fn(x, torch.tensor(5))
    assert torch.equal(pdyn_x, eager_x)


def gen_until(n):
    for i in range(n):
        if i == 2:
            raise ValueError("two")
        yield i


def test_an_exception_inside_a_traced_generator_reaches_the_caller():
    def f(x, n):
        return x + sum(gen_until(n)), len(list(gen_until(n)))

    check_calls(f, (torch.ones(2), 1), (torch.ones(2), 2), (torch.ones(2), 5), (torch.ones(2), 2))


def keywords(**kw):
    return kw


def test_a_duplicate_keyword_raises_type_error():
    def f(x, kw, extra):
        return x + len(keywords(**kw, **extra)), dict(**kw, **extra)

    check_calls(f, (torch.ones(2), {"a": 1}, {"b": 2}), (torch.ones(2), {"a": 1}, {"a": 2}),
                (torch.ones(2), {"a": 1}, {"c": 2}))


def test_the_users_zero_division_is_not_an_internal_error():
    def f(x, n):
        return x * (10 // n)

    with warnings.catch_warnings():
        warnings.simplefilter("error")   # an internal-error warning fails the test
        g = check_calls(f, (torch.ones(2), 5), (torch.ones(2), 0), (torch.ones(2), 3), (torch.ones(2), 2))
    stats = pdyn.stats(g)
    assert stats["eager_fallbacks"] == 0 and stats["cache_hits"] >= 1


def test_a_namedtuple_made_inside_gets_the_callers_module():
    def f(x):
        Point = collections.namedtuple("Point", ["a", "b"])
        p = Point(x + 1, x.shape[0])
        return p.b, type(p).__module__, type(p).__name__

    check_calls(f, (torch.ones(2),), (torch.ones(3),))


def test_a_slice_argument():
    def f(x, s):
        return x[s], s.start, s.step

    check_calls(f, (torch.arange(10), slice(1, 5)), (torch.arange(12), slice(2, None, 2)),
                (torch.arange(10), slice(None)), (torch.arange(10), slice(-3, None)))


def test_concurrent_first_calls_compile_once():
    @pdyn.optimize
    def f(x):
        return (x * 2).sum(0) + x.shape[0]

    xs = [torch.randn(5, 3) for _ in range(8)]
    start = threading.Barrier(len(xs))
    out: list = [None] * len(xs)

    def work(i):
        start.wait()
        out[i] = f(xs[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(torch.equal(out[i], (xs[i] * 2).sum(0) + 5) for i in range(len(xs)))
    assert pdyn.stats(f)["compiles"] == 1 and pdyn.stats(f)["cache_hits"] == len(xs) - 1


def test_a_generator_consumed_after_a_graph_break_yields_every_item():
    def f(r):
        return ",".join(str(d) for d in r), [str(d) for d in r]

    check_calls(f, (torch.arange(3),), (torch.arange(4),))


def test_a_graph_that_writes_an_input_and_raises_keeps_the_side_effects_before_the_raise():
    """Fuzz seeds 11943 and 13578: `LOG.extend(...)` deferred after a graph that zeroes an input
    and then raises (an index out of range of an empty dim). The inputs the graph writes are
    copied before it runs and put back, so the eager rerun writes them once and logs first."""
    log = []

    def f(x1, x0):
        log.extend(x0.shape)
        t = x1[[0, 0]]
        x0.zero_()
        return t

    for shape in ((0, 0, 0), (2, 3, 1)):
        log.clear()
        check_calls(f, (torch.ones(*shape), torch.ones(*shape)))
        assert log == [*shape, *shape]  # eager's call, then pdyn's


def test_comprehensions_that_break_on_every_item_keep_every_item():
    """3.12 inlines comprehensions: the list, dict or set being built crosses each break as an input,
    and what LIST_APPEND, MAP_ADD and SET_ADD add to it is replayed after the graph."""
    def f(r):
        return ([str(d) for d in r], {i: str(d) for i, d in enumerate(r)}, {str(d) for d in r},
                [*(str(d) for d in r)])

    check_calls(f, (torch.arange(3),), (torch.arange(4),))


def test_displays_being_built_when_a_break_happens_keep_what_is_added_after_it():
    """`[a, *b, f(x), *c]` and `{**d, 'k': f(x), **e}`: the container being built is on the stack at
    the break, an input of the resume function, and what is added to it after the break is kept."""
    def f(x, d, e):
        return [1, *d, str(x.sum()), *e], {**d, "k": str(x.sum()), **e}, {*d, str(x.sum()), *e}

    check_calls(f, (torch.arange(3), {"a": 1}, {"b": 2}), (torch.arange(4), {"a": 1, "z": 0}, {"b": 2}))
