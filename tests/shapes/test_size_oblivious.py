"""Size-oblivious 0/1 (issue 31, items 1 and 2): a dim seen >= 2 is symbolic with a guard of
`1 <= size` until a decision of the trace needs it >= 2 (a broadcast that happens, a squeeze, a
branch on `size > 1`, an expand from 1); elsewhere size 1 shares the entry. `mark_unbacked` makes a
dim symbolic at 0 and 1 too; a list of lengths with 0 and 1 elements compiles once. A dim first
seen as 1: test_size_one_first.py."""

from __future__ import annotations

import torch
import torch.nn.functional as F

import pdyn
from pdyn.hook.eval_frame import RECORDERS, Recorder
from tests.helpers import check_calls

W1, W2 = torch.randn(16, 32), torch.randn(32, 8)


def rows(*batches, cols=3):
    return [(torch.randn(b, cols),) for b in batches]


def mlp(x):
    return F.gelu(x @ W1).softmax(-1) @ W2 + x.sum(1, keepdim=True)


def test_batch_one_shares_the_entry_of_other_batches():
    check_calls(mlp, *[(torch.randn(b, 16),) for b in (3, 1, 5, 1, 2)], compiles=1)


def test_the_binding_guard_admits_one():
    recorder = Recorder()
    RECORDERS.append(recorder)
    try:
        pdyn.optimize(lambda x, y: (x + y) * x.size(1), backend="eager")(torch.randn(4, 3), torch.randn(4, 3))
    finally:
        RECORDERS.remove(recorder)
    check = recorder.entries[0].guard.check
    assert check({"x": torch.randn(1, 3), "y": torch.randn(1, 3)}, {}) is None
    assert check({"x": torch.randn(0, 3), "y": torch.randn(0, 3)}, {}) == "1 <= L['x'].size(0)"


def test_same_symbol_pointwise_and_matmul_compile_once():
    def f(x, y):
        return (x * y).relu() @ y.t() + x.mean(0)

    check_calls(f, *[(torch.randn(b, 4), torch.randn(b, 4)) for b in (3, 1, 6, 1)], compiles=1)


def test_squeeze_specializes_where_it_squeezes():
    check_calls(lambda x: x.squeeze(0) * 2, *rows(3, 1, 5, 1), compiles=2)


def test_branch_on_size_greater_than_one():
    check_calls(lambda x: x * 2 if x.size(0) > 1 else x - 1, *rows(3, 1, 4, 1), compiles=2)


def test_broadcast_that_happens_recompiles_and_agrees():
    def f(x, y):
        return x + y

    calls = [(torch.randn(3, 2), torch.randn(3, 2)), (torch.randn(1, 2), torch.randn(1, 2)),
             (torch.randn(1, 2), torch.randn(4, 2)), (torch.randn(5, 2), torch.randn(5, 2))]
    check_calls(f, *calls, compiles=2)


def test_expand_from_one_recompiles_and_agrees():
    def f(x, n):
        return x.expand(n, 3) * 2

    calls = [(torch.randn(3, 3), 3), (torch.randn(1, 3), 1), (torch.randn(1, 3), 4), (torch.randn(4, 3), 4)]
    check_calls(f, *calls, compiles=2)


def test_mark_unbacked_compiles_once_from_batch_one():
    def marked(b):
        x = torch.randn(b, 16)
        pdyn.mark_unbacked(x, 0)
        return (x,)

    check_calls(mlp, *[marked(b) for b in (1, 2, 0, 5, 1)], compiles=1)
    pdyn.reset()
    check_calls(mlp, *[(torch.randn(b, 16),) for b in (0, 2, 5)], compiles=2)   # unmarked: 0 is a constant


def test_mark_unbacked_still_guards_a_broadcast():
    def f(x, y):
        return x * y

    def marked(a, b):
        x, y = torch.randn(a, 2), torch.randn(b, 2)
        pdyn.mark_unbacked(x, 0)
        pdyn.mark_unbacked(y, 0)
        return (x, y)

    check_calls(f, marked(1, 1), marked(3, 3), marked(1, 4), marked(2, 2), compiles=2)


LENGTHS = [[1, 0, 3, 1], [0, 2, 5, 1], [4, 1, 0, 0], [2, 2, 1, 3]]


def test_kjt_lengths_from_tolist_compile_once():
    def pool(values, lengths):
        pieces = values.split(lengths.tolist())
        return torch.stack([p.sum(0) for p in pieces]) + torch.stack([p.mean(0) for p in pieces]).nan_to_num()

    check_calls(pool, *[(torch.randn(sum(n), 3), torch.tensor(n)) for n in LENGTHS], compiles=1)


def test_list_of_lengths_compiles_once():
    def dense(values, sizes):
        m = max(sizes)
        pieces = values.split(sizes)
        return torch.stack([F.pad(p, (0, 0, 0, m - p.size(0))) for p in pieces]) * len(sizes)

    check_calls(dense, *[(torch.randn(sum(n), 3), n) for n in LENGTHS], compiles=1)


FEATURES, DIM = 3, 2
# per (feature, sample) lengths of 3 features over 4 samples: 0s and 1s in every call, a feature of
# no rows at all, a first call of one row in all (its values' size 1 is symbolic), every length 1;
# the list's length (12) is what is guarded
KJT_LENGTHS = [[0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0], [1, 0, 2, 1, 0, 0, 0, 1, 3, 1, 1, 0],
               [0, 0, 0, 0, 1, 1, 1, 1, 2, 0, 5, 1], [2, 2, 2, 2, 0, 3, 0, 0, 1, 1, 1, 1], [1] * 12]


def kjt_features(values, lengths, weights):
    """KeyedJaggedTensor-style: each feature's rows (`lengths.tolist()` sums), each sample's rows in
    it, sum-pooled, weighted per feature."""
    per_sample = lengths.view(FEATURES, -1)
    out = []
    for f, rows in enumerate(values.split(per_sample.sum(1).tolist())):
        pieces = rows.split(per_sample[f].tolist())
        out.append(torch.stack([p.sum(0) for p in pieces]) * weights[f])
    return torch.stack(out).sum(0)


def test_kjt_features_with_empty_and_one_row_pieces_compile_once():
    calls = [(torch.randn(sum(n), DIM), torch.tensor(n), torch.randn(FEATURES)) for n in KJT_LENGTHS]
    check_calls(kjt_features, *calls, compiles=1)


def test_split_sizes_list_with_zeros_and_ones_compiles_once():
    def f(values, sizes):
        return [p.sum(0) * (i + 1) for i, p in enumerate(torch.split(values, sizes))]

    check_calls(f, *[(torch.randn(sum(n), DIM), n) for n in KJT_LENGTHS], compiles=1)
