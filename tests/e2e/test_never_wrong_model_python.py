"""Python's object model as model code uses it, where a trace must not differ from eager: what
runs when CPython frees a value, and what a builtin raises."""

from __future__ import annotations

import copy

import torch

import pdyn
from tests.helpers import CountingBackend, assert_same


def _both(fn, *make_args):
    """`fn` eagerly and optimized (both backends) on copies of each maker's arguments: the same
    results and the same arguments afterwards."""
    for backend in ("eager", CountingBackend()):
        pdyn.reset()
        opt = pdyn.optimize(fn, backend=backend)
        for make in make_args:
            eager_args = make()
            opt_args = copy.deepcopy(eager_args)
            assert_same(opt(*opt_args), fn(*eager_args))
            assert_same(opt_args, eager_args, "arguments")


def test_a_generator_left_in_its_finally_block_runs_it_when_freed():
    def gen(x, log):
        try:
            yield x + 1
            yield x + 2
        finally:
            log.append("closed")
            x.add_(1)

    def broken_loop(x, log):   # the loop's iterator is freed at the break: `finally` runs then
        for y in gen(x, log):
            break
        return y * x

    def first_item(x, log):    # the temporary generator is freed right after next()
        y = next(gen(x, log))
        log.append("after")
        return y + x

    def returned_from_loop(x, log):
        for y in gen(x, log):
            return y * 2

    def guarded_exit(x, log):  # `except GeneratorExit` runs as well
        def inner():
            try:
                yield x
            except GeneratorExit:
                log.append(x.shape[0])
                raise
        for y in inner():
            break
        return y + 1

    for fn in (broken_loop, first_item, returned_from_loop, guarded_exit):
        _both(fn, lambda: (torch.zeros(3), []), lambda: (torch.zeros(5), []))


def test_indexing_a_tuple_out_of_range_raises_the_tuple_error():
    def f(x):
        y = x + 1
        errors = []
        for seq, key in ((tuple(x.shape), 5), ((1, 2), -3), (x.shape, "a"), ([1], 2)):
            try:
                seq[key]
            except (IndexError, TypeError) as e:
                errors.append((type(e).__name__, str(e)))
        return y, errors

    _both(f, lambda: (torch.randn(3, 4),), lambda: (torch.randn(5, 6),))


class Blocks(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.seq = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 4), torch.nn.Tanh())
        self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(4)])

    def forward(self, x):
        head = self.seq[:2]                  # a new Sequential of the same submodules
        y = head(x) + self.seq[:-1][1:](x)
        for layer in self.layers[::2]:
            y = layer(y)
        try:
            self.layers[1:][5]
        except IndexError as e:
            msg = str(e)
        return (y, type(head).__name__, isinstance(self.layers[1:], torch.nn.ModuleList), len(self.seq[1:]),
                bool(self.layers[4:]), head[-1] is self.seq[1], msg)


def test_a_slice_of_a_sequential_or_module_list_is_one_of_its_class():
    torch.manual_seed(0)
    model = Blocks()
    for backend in ("eager", CountingBackend()):
        pdyn.reset()
        opt = pdyn.optimize(Blocks(), backend=backend)
        opt.load_state_dict(model.state_dict())
        for n in (3, 5):
            x = torch.randn(n, 4)
            assert_same(opt(x), model(x))
        assert pdyn.stats(opt)["graph_breaks"] == 0


def test_a_returned_slice_of_a_sequential_is_a_new_sequential():
    def f(seq, x):
        part = seq[1:]
        return part(x), part

    seq = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    opt = pdyn.optimize(f, backend=CountingBackend())
    x = torch.randn(3, 4)
    out, part = opt(seq, x)
    torch.testing.assert_close(out, f(seq, x)[0])
    assert type(part) is torch.nn.Sequential and part is not seq and list(part) == list(seq)[1:]


def test_python_errors_on_sizes_and_keys_are_the_users_not_pdyns():
    """`"a" + n`, an unhashable dict key or set element, a zero slice step, `n < math.inf`: Python
    decides each (raising its own error, caught here), and the frame stays compiled."""
    import math

    def f(x):
        y = x + 1
        errors = []
        for make in (lambda: "size " + x.shape[0], lambda: {[x.shape[0]]: 1}, lambda: {[1], [2]},
                     lambda: tuple(x.shape)[::0]):
            try:
                make()
            except (TypeError, ValueError) as e:
                errors.append((type(e).__name__, str(e)))
        smallest = math.inf
        for d in x.shape:
            if d < smallest:
                smallest = d
        return y, errors, smallest

    _both(f, lambda: (torch.randn(3, 4),), lambda: (torch.randn(5, 2),))
    assert pdyn.stats()["eager_fallbacks"] == 0


class Builder:
    def __init__(self, n):
        self.n = n

    @classmethod
    def build(cls, n):
        return cls(n + 1)

    @staticmethod
    def double(n):
        return 2 * n


class ScaledBuilder(Builder):
    @classmethod
    def build(cls, n):
        obj = super().build(n)        # super(ScaledBuilder, cls): the class is its second argument
        obj.n = super().double(obj.n)
        return obj


def test_super_in_a_classmethod_binds_to_the_class():
    def f(x):
        return x * ScaledBuilder.build(x.shape[0]).n

    _both(f, lambda: (torch.randn(3, 2),), lambda: (torch.randn(5, 2),))
    assert pdyn.stats()["graphs"] >= 1
