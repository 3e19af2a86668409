"""Views as index arithmetic, cat, and inputs that are not contiguous, sliced, or empty."""

from __future__ import annotations

import torch

from tests.backends.util import check, randn


def test_reshape_merge_and_split():
    check(lambda x: (x.view(-1, 2) * 2).sum(-1), (randn(4, 6),), (randn(5, 8),))
    check(lambda x: x.reshape(x.shape[0], 2, -1).sum(1) + 1, (randn(3, 8),), (randn(5, 8),))
    check(lambda x: x.flatten(1) * 3, (randn(2, 3, 4),), (randn(4, 3, 4),))


def test_permute_transpose_and_t():
    check(lambda x: x.permute(2, 0, 1) + 1, (randn(3, 4, 2),), (randn(5, 4, 2),))
    check(lambda x: x.transpose(0, 1).exp(), (randn(3, 4),), (randn(6, 4),))
    check(lambda x: (x * 2).t(), (randn(3, 4),), (randn(6, 4),))


def test_views_of_graph_outputs_alias_like_eager():
    def fn(x):
        return x.t(), x[1:]

    rec = check(fn, (randn(3, 4),), (randn(6, 4),))
    assert rec.last.kernel_count == 0


def test_slicing_select_unsqueeze_squeeze_expand():
    check(lambda x: x[:, 1:] * x[:, :-1], (randn(4, 6),), (randn(5, 8),))
    check(lambda x: x[..., -3:] + x[1, None, :3], (randn(4, 6),), (randn(5, 8),))
    check(lambda x: x[::2, 1] + 1, (randn(6, 3),), (randn(9, 3),))
    check(lambda x: x.unsqueeze(1).expand(-1, 3, -1) * 2, (randn(4, 5),), (randn(6, 5),))
    check(lambda x: x.squeeze(1) + 1, (randn(4, 1, 5),), (randn(6, 1, 5),))
    check(lambda x: torch.narrow(x, 1, 1, 2) + x.select(1, 0)[:, None], (randn(4, 5),), (randn(6, 5),),
          compiles=None)  # the frontend specializes narrow's input


def test_cat_is_masked_loads():
    check(lambda x, y: torch.cat([x, y * 2], 1), (randn(4, 6), randn(4, 3)), (randn(5, 8), randn(5, 2)))
    check(lambda x, y: torch.cat([x, y, x], 0).sum(-1), (randn(2, 3), randn(4, 3)), (randn(3, 3), randn(5, 3)))


def test_non_contiguous_inputs():
    check(lambda x: x.exp() + 1, (randn(6, 4).t(),), (randn(9, 5).t(),))
    check(lambda x: x.sum(-1), (randn(6, 8)[:, 2:],), (randn(9, 8)[:, 2:],))
    check(lambda x: torch.softmax(x, -1), (randn(6, 8)[1:, ::2],), (randn(9, 8)[1:, ::2],))


def test_contiguous_template_falls_back_for_a_transposed_call():
    """A graph compiled for contiguous inputs, called with a transposed one, is still right."""
    rec = check(lambda x: x * 2, (randn(4, 4),), (randn(4, 4).t(),), compiles=None)
    assert rec.graphs


def test_zero_size_inputs():
    check(lambda x: x * 2 + 1, (randn(0, 6),), (randn(0, 6),))
    check(lambda x: x.sum(0), (randn(0, 6),))
    check(lambda x: x.sum(-1), (randn(3, 0),))
