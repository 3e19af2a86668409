"""More of Python's object model as model code uses it, mixed with tensor work: what
`type.__call__` and `object.__new__` check (an abstract class, an `__init__` that returns a
value) must raise under pdyn as eagerly."""

from __future__ import annotations

import abc

import torch

import pdyn

from tests.helpers import check_calls


class Head(abc.ABC):
    @abc.abstractmethod
    def forward(self, x): ...


class HalfDone(Head):
    pass


class Done(Head):
    def forward(self, x):
        return x + 1


def test_instantiating_an_abstract_class_raises():
    def make(x, kind):
        try:
            head = kind()
        except TypeError as e:
            return x * 0, str(e)
        return head.forward(x)

    def bare(x):
        return Head().forward(x)

    x = torch.ones(2)
    check_calls(make, (x, HalfDone), (x, Done), (x, HalfDone))
    check_calls(lambda x: object.__new__(HalfDone) and x, (x,))
    check_calls(bare, (x,), (x,))


class InitReturns:
    def __init__(self, x):
        self.x = x
        return x.sum() > 0 if x.dim() else 1


def test_an_init_that_returns_a_value_raises():
    def f(x):
        try:
            InitReturns(x)
        except TypeError as e:
            return x, str(e)
        return x + 1

    check_calls(f, (torch.ones(2),), (torch.tensor(1.),), (torch.ones(2),))


class Bag:
    """A container whose `__iter__` is a generator: each item is made as the loop asks for it."""

    def __init__(self, items, log):
        self.items, self.log = items, log

    def __iter__(self):
        for v in self.items:
            self.log.append(("yield", v))
            yield v


class Countdown:
    """An iterator class: `__iter__` returns self, `__next__` raises StopIteration."""

    def __init__(self, n, log):
        self.n, self.log = n, log

    def __iter__(self):
        return self

    def __next__(self):
        self.log.append(("next", self.n))
        if self.n == 0:
            raise StopIteration
        self.n -= 1
        return self.n


class NotAnIterator:
    def __iter__(self):
        return [1, 2]


def test_a_loop_over_a_user_object_takes_one_item_at_a_time():
    def loop(x, items, log):
        bag, out = Bag(items, log), x
        for v in bag:
            log.append(("body", v))
            if v == 1:
                bag.items.append(10)   # the generator reads the list live
            out = out + v
        return out

    def countdown(x, n, log):
        out = x
        for v in Countdown(n, log):
            log.append(("body", v))
            out = out * (v + 1)
        return out, sum(Countdown(2, log)), list(Countdown(1, log))

    def crossing_a_break(x, log):
        it, out = Countdown(3, log), x
        for v in it:
            out = out + v
            if v == 1:
                pdyn.graph_break()
                log.append(("left", it.n))
        return out

    def not_an_iterator(x):
        try:
            for v in NotAnIterator():
                x = x + v
        except TypeError as e:
            return x, str(e)
        return x

    x = torch.ones(2)
    check_calls(loop, (x, [1, 2], []), (x, [3], []))
    check_calls(countdown, (x, 3, []), (x, 3, []))
    check_calls(crossing_a_break, (x, []), (x, []))
    check_calls(not_an_iterator, (x,), (x,))
