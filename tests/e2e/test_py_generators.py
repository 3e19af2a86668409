"""Generators made during the trace run lazily, one `yield` per `next()`, as CPython runs them."""

import torch

import pdyn
from tests.helpers import check


def test_generator_expressions_in_builtins():
    def f(x, ws):
        total = sum(w * x for w in ws)
        parts = tuple(x + i for i in range(3))
        return total, parts, max(len(p) for p in parts)

    check(f, torch.randn(3), [1.0, 2.0, 3.0])


def test_unpacking_a_generator_expression():
    def f(x):
        q, k, v = (z.relu() for z in (x, x + 1, x - 1))
        return q + k * v

    check(f, torch.randn(4))


def test_any_stops_at_the_first_true_item_like_eager():
    def f(x, seen):
        def check_one(i):
            seen.append(i)
            return i > 1

        found = any(check_one(i) for i in range(5))
        return x * 2, found

    check(f, torch.randn(2), [])


def test_break_out_of_a_generator_loop_leaves_the_rest_unrun():
    def f(x, seen):
        def numbers():
            for i in range(10):
                seen.append(i)
                yield i

        for i in numbers():
            if i == 2:
                break
            x = x + i
        return x

    check(f, torch.randn(3), [])


def test_generator_function_with_closure_and_next():
    def f(x):
        scale = 3

        def scaled(n):
            for i in range(n):
                yield x * scale * i

        gen = scaled(4)
        first = next(gen)
        second = next(gen)
        rest = list(gen)
        return first, second, rest, next(gen, None)

    check(f, torch.randn(2))


def test_optimizing_a_generator_function_itself_runs_it_eagerly():
    def gen(x):
        yield x + 1
        yield x * 2

    optimized = pdyn.optimize(gen)
    x = torch.randn(2)
    for got, want in zip(optimized(x), gen(x), strict=True):
        torch.testing.assert_close(got, want)
    assert pdyn.stats(optimized)["eager_fallbacks"] == 1


def test_a_sequence_iterator_left_suspended_is_closed_silently():
    # `x in seq` for a collections.abc.Sequence stops its generator `__iter__` inside
    # `try: ... except IndexError`: closing it runs no user code, so the frame keeps its graph
    import collections.abc

    class Pair(collections.abc.Sequence):
        def __init__(self, a, b):
            self.items = (a, b)

        def __getitem__(self, i):
            return self.items[i]

        def __len__(self):
            return 2

    def f(x):
        pair = Pair(1, 2)
        return x + (1 if 1 in pair else 0)

    opt = pdyn.optimize(f, backend="eager")
    assert torch.equal(opt(torch.ones(2)), f(torch.ones(2)))
    stats = pdyn.stats()
    assert (stats["graphs"], stats["eager_fallbacks"]) == (1, 0), stats
