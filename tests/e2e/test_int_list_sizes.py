"""`lengths: list[int]` arguments: each element a size symbol with its value as hint (0 and 1
included), the list's length guarded, `sum(lengths) == values.shape[0]` guarded once; one compile
serves every list of that length."""

import re

import torch

import pdyn
from tests.e2e.test_data_dependent import run


def split_sums(values, lengths):
    return [p.sum(0) for p in values.split(lengths)]


def test_distinct_lists_with_zeros_and_ones_compile_once():
    lists = [[1, 2, 3], [0, 4, 2], [5, 1, 1], [2, 2, 2], [1, 0, 7]]
    run(split_sums, [(torch.randn(sum(l), 2), l) for l in lists], graphs=1)


def test_the_sum_is_guarded_once_and_no_element_is_pinned():
    explanation = pdyn.explain(split_sums)(torch.randn(6, 2), [1, 0, 5])
    guards = explanation.guards[0]
    assert guards.count("L['lengths'][0] + L['lengths'][1] + L['lengths'][2] == L['values'].size(0)") == 1
    assert "len(lengths) != 3" in guards
    for i in range(3):  # no element pinned to its value
        assert not re.search(rf"L\['lengths'\]\[{i}\] == \d", guards) and f"lengths_{i} != " not in guards
    assert not any("specialized" in line for line in explanation.shape_decisions)


def test_another_length_or_a_wrong_sum_is_what_eager_does():
    calls = [(torch.randn(6, 2), [1, 2, 3]), (torch.randn(6, 2), [1, 2, 4]), (torch.randn(4, 2), [1, 3]),
             (torch.randn(5, 2), [2, 3])]
    run(split_sums, calls, graphs=2, compiles=2)  # one per list length; the wrong sum raises as eager


def test_a_negative_element_raises_as_eager():
    # the second call fails the `0 <= lengths[1]` guard; its trace raises eager's error itself
    run(split_sums, [(torch.randn(3, 2), [1, 2]), (torch.randn(3, 2), [4, -1])], graphs=1, compiles=1)


def test_an_element_used_as_a_broadcast_size_of_one_is_guarded_not_wrong():
    def f(x, shape):
        return x + torch.ones(shape)
    x = torch.randn(3, 4)
    run(f, [(x, [3, 4]), (x, [1, 4]), (x, [3, 1]), (x, [3, 4])], graphs=3, compiles=3)
