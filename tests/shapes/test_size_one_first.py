"""A dim first seen as 1 (issue 31, item 1): a symbol in [1, inf) whose guard is `1 <= size`, so
the entry compiled at batch 1 serves every batch, unless a question of the trace depended on the
size being 1 (a broadcast that happens, squeeze, an expand from 1, a branch, a view whose validity
depends on strides): then the guard pins it (`size == 1`) and another size compiles its own entry.
Each adversarial program here would return a wrong value (or not raise) if that guard were missing."""

from __future__ import annotations

import io

import pytest
import torch
import torch.nn.functional as F

import pdyn
from pdyn.hook.eval_frame import RECORDERS, Recorder
from tests.helpers import check_calls

W1, W2 = torch.randn(16, 32), torch.randn(32, 8)
SINK = io.StringIO()


def mlp(x):
    return F.gelu(x @ W1).softmax(-1) @ W2 + x.sum(1, keepdim=True)


def rows(*batches, cols=4):
    return [(torch.randn(b, cols),) for b in batches]


def first_guard_sentences(fn, *args) -> tuple[list[str], object]:
    """The sentences of the size guards of the entry `fn(*args)` compiles, and its check."""
    recorder = Recorder()
    RECORDERS.append(recorder)
    try:
        pdyn.optimize(fn, backend="eager")(*args)
    finally:
        RECORDERS.remove(recorder)
    entry = recorder.entries[0]
    return list(entry.guard.by_sentence), entry.guard.check


def test_batch_one_first_compiles_once():
    check_calls(mlp, *[(torch.randn(b, 16),) for b in (1, 2, 5, 1, 3, 7)], compiles=1)


def test_the_entry_of_batch_one_guards_one_or_more_and_no_equality():
    sentences, check = first_guard_sentences(mlp, torch.randn(1, 16))
    assert "1 <= L['x'].size(0)" in sentences
    assert not any("== 1" in s for s in sentences), sentences
    assert check({"x": torch.randn(6, 16)}, globals()) is None
    assert check({"x": torch.randn(0, 16)}, globals()) == "1 <= L['x'].size(0)"


def test_broadcast_against_a_fixed_size_pins_one():
    def f(x, y):
        return x + y

    sentences, check = first_guard_sentences(f, torch.randn(1, 4), torch.randn(3, 4))
    assert any("L['x'].size(0)" in s and "1" in s and "<=" not in s for s in sentences), sentences
    assert check({"x": torch.randn(3, 4), "y": torch.randn(3, 4)}, globals()) is not None
    pdyn.reset()
    calls = [(torch.randn(1, 4), torch.randn(3, 4)), (torch.randn(3, 4), torch.randn(3, 4)),
             (torch.randn(2, 4), torch.randn(3, 4)), (torch.randn(1, 4), torch.randn(3, 4))]
    check_calls(f, *calls, compiles=2)   # the broadcast, the equal sizes (the mismatch raises as eager)


def test_broadcast_of_two_batches_first_seen_as_one_unifies_them():
    def f(x, y):
        return x * y

    calls = [(torch.randn(1, 2), torch.randn(1, 2)), (torch.randn(4, 2), torch.randn(4, 2)),
             (torch.randn(1, 2), torch.randn(4, 2)), (torch.randn(5, 2), torch.randn(5, 2))]
    check_calls(f, *calls, compiles=2)


def test_a_broadcast_against_a_parameter_of_one_row_asks_nothing():
    bias = torch.nn.Parameter(torch.randn(1, 4))   # a parameter's sizes are the model's: a constant 1
    check_calls(lambda x: x + bias, *rows(1, 3, 1, 6), compiles=1)


def test_two_inputs_first_seen_as_one_are_guarded_equal():
    # which of them stays 1 is not known at the first call: an equality guard, and a second entry
    check_calls(lambda x, b: x + b, *[(torch.randn(n, 4), torch.randn(1, 4)) for n in (1, 3, 1, 6)], compiles=2)


def test_squeeze_of_the_dim_pins_it():
    check_calls(lambda x: x.squeeze(0) * 2, *rows(1, 4, 1, 2), compiles=2)


def test_expand_from_one_pins_it():
    def f(x):
        return x.expand(4, 4) * 2

    check_calls(f, *rows(1, 4, 2, 1), compiles=2)   # 2 raises as eager does


def test_expand_of_a_constant_one_to_the_batch_asks_nothing():
    bias = torch.nn.Parameter(torch.randn(1, 1, 4))

    def f(x):
        return bias.expand(x.size(0), -1, -1) + x

    check_calls(f, *[(torch.randn(b, 3, 4),) for b in (1, 2, 5)], compiles=1)


def test_branch_on_equal_to_one():
    def f(x):
        return x * 2 if x.shape[0] == 1 else x - 1

    sentences, _ = first_guard_sentences(f, torch.randn(1, 4))
    assert any("== 1" in s for s in sentences), sentences
    pdyn.reset()
    check_calls(f, *rows(1, 3, 1, 5), compiles=2)


def test_branch_on_greater_than_one():
    check_calls(lambda x: x.sum(0) if x.size(0) > 1 else x[0], *rows(1, 3, 1, 6), compiles=2)


def test_value_read_pins_it():
    check_calls(lambda x: (x * 2, str(x.shape[0])), *rows(1, 3, 1), compiles=2)


def test_a_list_repeated_by_the_size_pins_it():
    check_calls(lambda x: (x * 2, [0] * x.size(0)), *rows(1, 2, 1), compiles=2)


def test_view_of_a_contiguous_input_stays_symbolic():
    check_calls(lambda x: x.view(-1) * 2 + x.reshape(x.size(0), 2, 2).sum(-1).view(-1).sum(), *rows(1, 3, 6),
                compiles=1)


@pytest.mark.parametrize("backend", ["eager", "triton"])
def test_view_whose_validity_depends_on_the_size_pins_it(backend):
    """`x.t().view(-1)` is valid at batch 1 only (a size-1 dim's stride is free): at 3 eager raises."""
    def f(x):
        return x.t().view(-1) * 2

    sentences, _ = first_guard_sentences(f, torch.randn(1, 4))
    assert "L['x'].size(0) == 1" in sentences, sentences
    pdyn.reset()
    check_calls(f, *rows(1, 3, 1, 3), compiles=1, backend=backend)   # at 3 the trace raises, as eager


def test_view_merging_dims_whose_strides_involve_the_size():
    """Dims 0 and 1 of `x.permute(0, 2, 1)` merge only where x.size(1) is 1 (stride s*b against b)."""
    def f(x):
        y = (x.permute(0, 2, 1) + 1)
        return y.view(y.size(0) * y.size(1), -1)

    sentences, _ = first_guard_sentences(f, torch.randn(2, 1, 3))
    assert "L['x'].size(1) == 1" in sentences, sentences
    pdyn.reset()
    check_calls(f, *[(torch.randn(2, s, 3),) for s in (1, 4, 1)], compiles=1)   # at 4 eager raises


def test_view_after_contiguous_and_layer_norm_stays_symbolic():
    def f(x):
        heads = x.view(x.size(0), x.size(1), 2, 2).transpose(1, 2).contiguous()
        merged = heads.transpose(1, 2).contiguous().view(x.size(0), -1)
        return F.layer_norm(merged, (merged.size(-1),)).view(-1)

    check_calls(f, *[(torch.randn(b, 3, 4),) for b in (1, 2, 5)], compiles=1)


def test_layout_read_of_a_transposed_input_pins_it():
    check_calls(lambda x: (x.t().is_contiguous(), x.t().contiguous() * 2), *rows(1, 3, 1), compiles=2)


def test_cat_matmul_reductions_compile_once():
    def f(x, y):
        z = torch.cat([x, y], 0) @ W1[:4]
        return z.sum(0), z.amax(0), z.mean(), x.var(0, correction=0), x[0], x[-1]

    check_calls(f, *[(torch.randn(b, 4), torch.randn(b + 1, 4)) for b in (1, 2, 4, 1)], compiles=1)


def test_index_out_of_range_at_one_raises_as_eager():
    check_calls(lambda x: x[1] * 2, *rows(1, 3, 1), compiles=1)   # at 1 the trace raises, as eager


def test_setitem_of_a_one_row_value_broadcasts():
    def f(y, x):
        y = y.clone()
        y[:] = x
        return y

    calls = [(torch.zeros(3, 4), torch.randn(1, 4)), (torch.zeros(3, 4), torch.randn(3, 4)),
             (torch.zeros(3, 4), torch.randn(1, 4))]
    check_calls(f, *calls, compiles=2)


def test_size_zero_first_is_a_constant_then_one_is_symbolic():
    check_calls(mlp, *[(torch.randn(b, 16),) for b in (0, 1, 2, 0, 5)], compiles=2)


def test_int_tensor_of_batch_one_with_its_mask():
    def f(ids, mask):
        emb = torch.nn.functional.embedding(ids, W1)
        return (emb * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)

    calls = [(torch.randint(0, 16, (b, s)), torch.ones(b, s)) for b, s in ((1, 5), (2, 7), (1, 1), (3, 4))]
    check_calls(f, *calls, compiles=1)


def test_a_size_of_one_crossing_a_graph_break_stays_symbolic():
    def f(x):
        new = x.size()[:-1] + (2, 2)
        print("break", file=SINK)
        return x.view(*new) * 2

    check_calls(f, *[(torch.randn(2, n, 4),) for n in (1, 3, 1, 5)])
    stats = pdyn.stats()   # the frame and its resume function, once each
    assert (stats["compiles"], stats["recompiles"], stats["graph_breaks"]) == (2, 0, 1), stats


@pytest.mark.parametrize("backend", ["eager", "triton"])
def test_item_of_a_one_element_tensor_raises_as_eager_at_three(backend):
    def f(x):
        return torch.arange(4) * x.item()

    check_calls(f, *[(torch.tensor([2] * n),) for n in (1, 3, 1)], backend=backend)


@pytest.mark.parametrize("backend", ["eager", "triton"])
def test_in_place_write_into_an_expanded_row_raises_as_eager_at_three(backend):
    def f(y):
        z = torch.zeros(1, 4).expand(y.size(0), 4)   # a constant 1 stretches without a question
        z.add_(y)   # at 3 rows every row is one memory location: eager raises
        return z

    check_calls(f, *rows(1, 3, 1), backend=backend)
