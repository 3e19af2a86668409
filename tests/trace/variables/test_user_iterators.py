"""Iterating a user object through the old protocol, `__getitem__` from 0 until IndexError
(pdyn/trace/variables/iterators/user_iterators.py): traced in one graph, and carried across a
break at its position."""

from __future__ import annotations

import torch

from tests.break_counts import by_code
from tests.helpers import check


class Indexed:
    def __init__(self, *items):
        self.items = items

    def __getitem__(self, i):
        return self.items[i]


class Stops:
    def __getitem__(self, i):
        if i == 2:
            raise StopIteration
        return i * 10


class Fails:
    def __getitem__(self, i):
        raise KeyError(i)


def test_getitem_iteration_is_one_graph():
    def f(a, b):
        return [t * 2 for t in Indexed(a, b)], sum(Stops()), list(enumerate(Indexed(a)))

    check(f, torch.randn(3), torch.randn(3), graphs=1)


def test_other_errors_of_getitem_propagate():
    def f(a):
        return [t for t in Fails()], a

    check(f, torch.randn(3), graphs=0)


def test_a_break_in_the_loop_resumes_at_the_position():
    def f(a, b):
        out = []
        for t in Indexed(a, b, a + b):
            print("break")
            out.append(t + 1)
        return out

    check(f, torch.randn(3), torch.randn(3), graphs=4)   # the frame's, the resume's at positions 1, 2 and 3
    assert [c["eager"] for c in by_code().values()] == [0, 0], by_code()


class Logged:
    def __init__(self, log, *items):
        self.log, self.items = log, items

    def __getitem__(self, i):
        self.log.append(i)
        return self.items[i]


def test_the_end_of_a_received_iterator_with_effects_breaks_and_matches_eager():
    def f(a, log):
        out = []
        for t in Logged(log, a, a * 2):
            print("break")
            out.append(t + 1)
        return out, log

    check(f, torch.randn(3), [], graphs=2)
