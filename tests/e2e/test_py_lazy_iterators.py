"""map, filter and itertools.starmap are lazy, as in Python: the function runs when an item is
taken, in eager's order with the code around it, and only for the items taken."""

from __future__ import annotations

import itertools

import torch

import pdyn
from tests.helpers import check_calls


def _no_breaks(opt, compiles=1):
    stats = pdyn.stats(opt)
    assert stats["graph_breaks"] == 0 and stats["eager_fallbacks"] == 0 and stats["compiles"] == compiles, stats


def test_map_and_filter_over_tensors_and_sizes():
    def f(a, b):
        vals = list(map(lambda t: t + 1, [a, b]))
        evens = list(filter(lambda n: n % 2 == 0, range(a.size(0) + 3)))
        pairs = list(map(lambda t, n: t * n, [a, b], [2, 3, 4]))  # stops at the shorter
        kept = list(filter(None, [0, a.size(0), 0, 2]))
        return vals[0] * len(evens) + vals[1] + pairs[1] + kept[-1]

    _no_breaks(check_calls(f, *[(torch.randn(4), torch.randn(4))] * 3))


def test_the_function_runs_when_an_item_is_taken():
    def f(x, log):
        def step(t):
            log.append("step")
            return t * 2
        m = map(step, [x, x + 1, x + 2])
        log.append("made")
        first = next(m)
        log.append("between")
        rest = [t.sum() for t in m]
        return first, rest

    opt = check_calls(f, *[(torch.randn(3), [])] * 3)
    _no_breaks(opt)


def test_an_iterator_taken_halfway_calls_only_for_the_items_taken():
    def f(x, log):
        def keep(n):
            log.append(n)
            return n > 1
        it = filter(keep, [0, 1, 2, 3, 4])
        return x * next(it)

    _no_breaks(check_calls(f, *[(torch.randn(3), [])] * 2))


def test_starmap_is_lazy():
    def f(x, log):
        def mul(t, k):
            log.append(k)
            return t * k
        it = itertools.starmap(mul, [(x, 1), (x, 2), (x, 3)])
        log.append("made")
        return next(it) + next(it)

    _no_breaks(check_calls(f, *[(torch.randn(3), [])] * 2))


def test_a_map_object_crossing_a_break_runs_the_frame_correctly():
    def f(x, log):
        m = map(lambda t: t + 1, [x, x * 2])
        print("break")
        return list(m)

    check_calls(f, *[(torch.randn(3), [])] * 2)
