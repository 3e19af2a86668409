"""Loops over the rows of data-dependent results (the eager expert loop of mixture-of-experts
layers): a 0-d integer tensor used as an index is read as its value and selected, as eager
indexing does (a view, no break); the loop over `nonzero()` breaks once at its head and once per
iteration where Python needs a value, and the graph of the iteration body serves every iteration
and every call."""

import pytest
import torch

import pdyn
from tests.helpers import CountingBackend, assert_same


def _tensors(value):
    return list(value) if isinstance(value, tuple) else [value]


def run(fn, calls):
    """After pdyn.reset(): Each call compared with eager (outputs, exception types, writes to the arguments); the
    backend and the optimized function, for their counts."""
    pdyn.reset()
    backend = CountingBackend()
    optimized = pdyn.optimize(fn, backend=backend)
    for args in calls:
        eager_args = [a.clone() for a in args]
        try:
            expected, expected_exc = fn(*eager_args), None
        except Exception as e:  # noqa: BLE001
            expected, expected_exc = None, e
        try:
            actual, actual_exc = optimized(*args), None
        except Exception as e:  # noqa: BLE001
            actual, actual_exc = None, e
        assert type(actual_exc) is type(expected_exc), (actual_exc, expected_exc)
        if expected_exc is None:
            assert_same(actual, expected)
            for a, e in zip(_tensors(actual), _tensors(expected), strict=True):
                assert (a._base is None) == (e._base is None)  # a view where eager makes one
        assert_same(list(args), eager_args)
    return backend, pdyn.stats()   # resume functions included


def scalar_index_calls():
    return [(torch.randn(4, 3, 3), torch.tensor(2)), (torch.randn(5, 3, 3), torch.tensor(-1)),
            (torch.randn(4, 3, 3), torch.tensor(1, dtype=torch.int32)), (torch.randn(3, 3, 3), torch.tensor(7)),
            (torch.randn(3, 3, 3), torch.tensor(-4))]


def test_a_0d_index_is_a_select_in_the_graph_with_eagers_index_error():
    def f(m, e):
        return m[e] * 2
    backend, stats = run(f, scalar_index_calls())
    assert (len(backend.graphs), stats["graph_breaks"], stats["compiles"]) == (2, 0, 2)  # the 2nd: m's dim 0 dynamic
    assert "torch.select" in backend.graphs[0].code


def test_0d_indices_among_slices_none_and_ellipsis_select_the_dims_eager_selects():
    def f(m, e):
        return m[1:, e] + 1, m[..., e, None], m[None, e, :, 0], m[e, e]
    backend, stats = run(f, scalar_index_calls())
    assert (len(backend.graphs), stats["graph_breaks"], stats["compiles"]) == (2, 0, 2)


def test_a_write_through_the_selected_view_reaches_the_indexed_tensor():
    def f(m, e):
        row = m[e]
        row.add_(1)
        return row
    backend, stats = run(f, scalar_index_calls())
    assert (len(backend.graphs), stats["graph_breaks"], stats["compiles"]) == (2, 0, 2)


def test_a_0d_index_beside_an_index_tensor_stays_advanced_indexing():
    def f(m, e):
        return m[e, torch.tensor([0, 1])]
    run(f, scalar_index_calls()[:3])   # a break, as before: outputs and writes still as eager's


NUM_EXPERTS = 4


def experts(hidden, top_index, top_weight, weights):
    """The eager expert loop of transformers' MoE layers, as Mixtral's: experts hit by a token."""
    out = torch.zeros_like(hidden)
    mask = torch.nn.functional.one_hot(top_index, num_classes=NUM_EXPERTS + 1).permute(2, 1, 0)
    hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()
    for expert in hit:
        expert = expert[0]
        if expert == NUM_EXPERTS:   # the padding expert
            continue
        position, token = torch.where(mask[expert])
        current = hidden[token] @ weights[expert]
        out.index_add_(0, token, current * top_weight[token, position, None])
    return out


def expert_call(tokens, experts_hit, seed):
    g = torch.Generator().manual_seed(seed)
    top_index = torch.randint(0, experts_hit, (tokens, 2), generator=g)
    top_index[0, 0] = NUM_EXPERTS   # one token routed to the padding expert: the `continue`
    return (torch.randn(tokens, 6, generator=g), top_index, torch.rand(tokens, 2, generator=g),
            torch.randn(NUM_EXPERTS, 6, 6, generator=g))


def test_the_expert_loop_breaks_at_its_head_and_at_the_branch_and_reuses_the_body_graph():
    backend, stats = run(experts, [expert_call(8, 4, 0)])
    # graphs: the frame up to the loop, the loop's first item up to the branch, the body through the
    # next item's branch (every iteration); a 4th compile, no graph: the padding expert's `continue`
    # (the last item) ends the loop
    assert (len(backend.graphs), stats["graph_breaks"], stats["compiles"]) == (3, 3, 4)
    assert stats["frames"] == 1 + 1 + NUM_EXPERTS + 1   # one frame per iteration, none traced again
    backend, stats = run(experts, [expert_call(8, 4, 0), expert_call(13, 2, 1), expert_call(5, 3, 2),
                                   expert_call(21, 4, 3)])
    assert (stats["graph_breaks"], stats["compiles"]) == (3, 4)   # other token and expert counts: no compile


def test_under_triton_an_index_out_of_range_raises_index_error_as_eager():
    def f(m, e):
        return m[e] * 2
    optimized = pdyn.optimize(f, backend="triton")
    for m, e in scalar_index_calls():
        if -m.shape[0] <= int(e) < m.shape[0]:
            assert_same(optimized(m, e), f(m, e))
        else:
            with pytest.raises(IndexError):
                f(m, e)
            with pytest.raises(IndexError):
                optimized(m, e)
