"""`del x` of a variable a closure shares (DELETE_DEREF): traced, the real cell emptied after the
graph, a later read raising eager's NameError."""

import torch

import pdyn
from tests.helpers import check


def test_deleting_a_shared_variable_then_reading_it_through_the_closure_raises_as_eager():
    def f(x):
        y = x + 1
        g = lambda: y  # noqa: E731
        z = g() * 2
        del y
        try:
            g()
        except NameError:
            return z, "unbound"
        return z, "bound"

    opt = check(f, torch.ones(2))
    assert pdyn.stats(opt)["eager_fallbacks"] == 0


def test_a_deleted_cell_is_empty_across_a_break_and_rebinding_it_is_seen_by_the_closure():
    def f(x):
        y = x + 1
        g = lambda: y * 3  # noqa: E731
        del y
        print("break")
        y = x * 5
        return g()

    opt = check(f, torch.ones(2), graphs=2)
    assert pdyn.stats(opt)["graph_breaks"] == 1
