"""Broadcasts of data-dependent sizes: the runtime assert is eager's exact condition (a size of 1
broadcasts to any other, 0 included), and the result's size is eager's; torch's vehicle deciding
a size its own way (u0 == 5 after a broadcast) does not break the graph. Ranges: a size from
values (bincount) has no bound from its input's numel."""

import torch

import pdyn
from tests.e2e.test_data_dependent import run


def mask(*true):
    m = torch.zeros(6, dtype=torch.bool)
    m[list(true)] = True
    return m


def test_two_data_dependent_sizes_broadcast_as_eager_one_with_zero_included():
    def f(x, m, n):
        return x[m] + x[n]
    x = torch.randn(6)
    calls = [(x, mask(0, 1, 2), mask(3, 4, 5)), (x, mask(2), mask()), (x, mask(), mask(2)),
             (x, mask(2), mask(0, 1, 3)), (x, mask(0, 1, 3), mask(4)), (x, mask(0, 1), mask(2, 3, 4))]
    run(f, calls, graphs=1)  # the last call raises in eager and compiled alike


def test_a_size_torch_pins_after_a_broadcast_stays_pdyns_symbol():
    def f(x, m, z):
        y = x[m] + z
        return y.view(-1) * 2, x[m].view(-1, 1)
    x, z = torch.randn(8), torch.randn(5)
    run(f, [(x, torch.arange(8) < 5, z), (x, torch.arange(8) < 1, z), (x, torch.arange(8) >= 3, z)], graphs=1)


def test_a_size_from_values_has_no_bound_from_the_input_numel():
    """bincount's and repeat_interleave's sizes come from values: a one-element input says
    nothing about them (a range [0, 1] would decide `y[:3]` to be u0 long)."""
    def f(x, r):
        return torch.bincount(x)[:3] * 2, torch.repeat_interleave(r)[:4] + 1
    explanation = pdyn.explain(f)(torch.tensor([7]), torch.tensor([5]))
    ranges = [line.split(", in ")[1] for line in explanation.shape_decisions if " = " in line]
    # one per op at least (torch 2.11's fake slicing of a data-dependent dim adds its own symbols)
    assert len(ranges) >= 2 and set(ranges) == {"[0, inf]"}, ranges
    run(f, [(torch.tensor([k]), torch.tensor([k])) for k in (7, 0, 2)], graphs=1)


def test_a_selection_is_bounded_by_the_static_numel_it_selects_from():
    def f(x):
        return torch.nonzero(x)
    x = torch.ones(1, 1)
    pdyn.mark_static(x, 0)   # static sizes (a size of 1 is otherwise a symbol)
    pdyn.mark_static(x, 1)
    explanation = pdyn.explain(f)(x)
    assert explanation.shape_decisions[0].endswith("in [0, 1]"), explanation.shape_decisions
