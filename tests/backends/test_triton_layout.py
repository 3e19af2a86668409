"""Layout-aware kernels: a pointwise kernel whose accesses disagree on the contiguous dim runs in 2-D
tiles (y by x) so each access walks its own contiguous dim; a reduction's launch follows which of
r or x its loads are contiguous along. Values are eager's for transposed, expanded, sliced and
channels-last operands, at two sizes with one compile."""

from __future__ import annotations

import torch

from tests.backends.util import check, randn


def tiled(rec) -> bool:
    return any("yindex = yoffset" in k for k in rec.last.kernel_sources)


def test_transposed_operand_runs_in_2d_tiles():
    rec = check(lambda x, y: (x.t() + y) * 0.5, (randn(6, 4), randn(4, 6)), (randn(9, 5), randn(5, 9)), kernels=1)
    assert tiled(rec), rec.last.kernel_sources[0]
    assert "_launch(" in rec.last.wrapper_source and rec.last.launchers[0].plans
    assert all(isinstance(k, tuple) and len(k) == 2 for k in rec.last.launchers[0].plans)  # (ynumel, xnumel)


def test_contiguous_operands_stay_1d():
    rec = check(lambda x, y: (x + y) * 0.5, (randn(6, 4), randn(6, 4)), (randn(9, 5), randn(9, 5)))
    assert not tiled(rec)
    rec = check(lambda x, b: x * b[:, None], (randn(6, 4), randn(6)), (randn(9, 5), randn(9)))
    assert not tiled(rec)  # an expanded operand (stride 0 along the last dim) reads nothing strided


def test_transposed_input_to_contiguous_output():
    rec = check(lambda x: x.t().contiguous() * 2, (randn(6, 4),), (randn(9, 5),))
    assert tiled(rec)
    rec = check(lambda x: x.permute(0, 2, 1) + 1, (randn(2, 6, 4),), (randn(3, 9, 5),))
    assert tiled(rec)  # output and input both contiguous along dim 1: tiles walk it for both


def test_transposed_with_expanded_and_sliced_operands():
    fn = lambda x, y, b: (x.t() + y[:, 1:]) * b  # noqa: E731
    rec = check(fn, (randn(7, 4), randn(4, 8), randn(4, 1)), (randn(9, 5), randn(5, 10), randn(5, 1)))
    assert tiled(rec)
    rec = check(lambda x, y: x[::2].t() - y, (randn(12, 4), randn(4, 6)), (randn(18, 5), randn(5, 9)))
    assert tiled(rec)


def test_channels_last_input_with_contiguous_output():
    def fn(x, y):
        return x + y

    def cl(*shape):
        return randn(*shape).contiguous(memory_format=torch.channels_last)

    rec = check(fn, (cl(2, 3, 4, 5), randn(2, 3, 4, 5)), (cl(3, 4, 5, 6), randn(3, 4, 5, 6)))
    assert tiled(rec), rec.last.kernel_sources[0]


def test_tile_blocks_follow_the_actual_extents():
    from pdyn.backends.triton.runtime import tile_config

    assert tile_config(4096, 4096) == (64, 64, 8)
    yblock, xblock, _ = tile_config(100000, 3)
    assert xblock == 4 and yblock > 64  # a thin x: longer y tiles
    assert tile_config(2, 3)[:2] == (2, 4)


def test_reduction_over_a_non_contiguous_dim_launches_as_outer():
    rec = check(lambda x: x.t().sum(-1), (randn(6, 4),), (randn(9, 70),))
    assert rec.last.launchers[0].inner is False
    rec = check(lambda x: x.sum(-1), (randn(6, 4),), (randn(9, 70),))
    assert rec.last.launchers[0].inner is True
    rec = check(lambda x: x.t().amax(-1) + x.t().sum(-1), (randn(6, 4),), (randn(300, 7),))
    assert rec.last.launchers[0].inner is False


def test_reduction_over_a_channels_last_dim():
    x = randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    y = randn(3, 4, 6, 7).contiguous(memory_format=torch.channels_last)
    check(lambda x: x.sum((2, 3)), (x,), (y,))
    rec = check(lambda x: x.mean(1), (x,), (y,))
    assert rec.last.launchers[0].inner is True  # channels are the contiguous dim


def test_tiled_kernels_with_cat_broadcasts_and_half_precision():
    fn = lambda x, y, b: torch.cat([x.t(), y], 1) * b[:, None] + 1  # noqa: E731
    rec = check(fn, (randn(6, 4), randn(4, 3), randn(4)), (randn(9, 5), randn(5, 2), randn(5)))
    assert tiled(rec)
    rec = check(lambda x, y: (x.t() + y) * 0.5, (randn(6, 4, dtype=torch.float16), randn(4, 6, dtype=torch.float16)),
                (randn(9, 5, dtype=torch.float16), randn(5, 9, dtype=torch.float16)))
    assert tiled(rec)
