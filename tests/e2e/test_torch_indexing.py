"""End-to-end: tensor indexing, in-place ops and tensor attributes under pdyn, compared with eager."""

from __future__ import annotations

import torch

from tests.helpers import check


def test_getitem_ints_slices_negative():
    def f(x):
        return x[0], x[-1], x[1:3], x[:, -2:], x[::2, 1], x[-3:-1, ::-1 if False else 1]

    check(f, torch.randn(4, 5))


def test_getitem_ellipsis_and_none():
    def f(x):
        return x[..., 0], x[None], x[:, None, :, None], x[..., None, 1:], x[0, ...]

    check(f, torch.randn(2, 3, 4))


def test_getitem_integer_tensor_and_list():
    def f(x, idx):
        return x[idx], x[:, idx], x[[0, 2]], x[[0, 1], [1, 2]]

    check(f, torch.randn(3, 4), torch.tensor([2, 0, 1]))


def test_getitem_boolean_mask_is_one_graph():
    check(lambda x: x[x > 0].sum(), torch.randn(3, 4), graphs=1)


def test_getitem_out_of_range_raises_like_eager():
    check(lambda x: x[5] + 1, torch.randn(3, 4), graphs=0)


def test_setitem_on_local_copy():
    def f(x):
        y = x.clone()
        y[0] = 5
        y[:, 1] = torch.arange(3.0)
        y[..., -1] = y[..., 0]
        return y

    check(f, torch.randn(3, 3))


def test_setitem_boolean_mask_and_index_tensor():
    def f(x, idx):
        y = x.clone()
        y[y < 0] = 0.0
        y[idx] = -1.0
        return y

    check(f, torch.randn(4, 3), torch.tensor([1, 3]))


def test_setitem_mutates_input_like_eager():
    def f(x):
        x[0] = 5
        x[1:, 0] = -1.0
        return x.sum()

    check(f, torch.randn(3, 2))


def test_inplace_methods_on_input():
    def f(x, y):
        x.add_(1)
        x.mul_(y)
        y.clamp_(min=0)
        return x + y

    check(f, torch.randn(3), torch.randn(3))


def test_augmented_assignment_on_input():
    def f(x):
        x += 1
        x *= 2
        x -= x.mean()
        return x

    check(f, torch.randn(4))


def test_augmented_assignment_does_not_rebind_caller_alias():
    def f(x):
        y = x
        y += 1
        return x, y

    check(f, torch.randn(2))


def test_inplace_on_view_of_input():
    def f(x):
        x[0].zero_()
        x.t()[1].fill_(3.0)
        return x

    check(f, torch.randn(3, 3))


def test_inplace_on_local_then_return_input_untouched():
    def f(x):
        y = x * 1
        y.add_(1).relu_()
        return x, y

    check(f, torch.randn(5))


def test_inplace_dtype_error_raises_like_eager():
    def f(i):
        i.add_(0.5)
        return i

    check(f, torch.arange(3), graphs=0)


def test_tensor_metadata_attributes():
    def f(x):
        return x.dtype, x.device, x.ndim, x.shape, x.requires_grad, x.is_cuda, x.is_floating_point(), x.dim()

    check(f, torch.randn(2, 3), graphs=0)


def test_sizes_used_in_arithmetic():
    def f(x):
        n, c = x.shape
        return x * (x.size(1) + n) + x.numel() + len(x) + x.size()[0] + c

    check(f, torch.randn(2, 3))


def test_size_returned_as_torch_size():
    check(lambda x: (x.size(), x.shape[1:], x.size(-1)), torch.randn(2, 3), graphs=0)


def test_T_and_dtype_branches():
    def f(x):
        if x.dtype == torch.float32 and x.ndim == 2:
            return x.T * 2
        return x

    check(f, torch.randn(2, 3))


def test_iterate_over_tensor():
    def f(x):
        total = torch.zeros(3)
        for row in x:
            total = total + row
        return total, [r.sum() for r in x]

    check(f, torch.randn(4, 3))


def test_iterate_0d_tensor_raises_like_eager():
    def f(x):
        return [y for y in x.sum()]

    check(f, torch.randn(3), graphs=0)


def test_unpack_tensor_rows():
    def f(x):
        a, b = x
        return a - b

    check(f, torch.randn(2, 4))


def test_is_cuda_and_device_type_branch():
    def f(x):
        if x.is_cuda or x.device.type == "cuda":
            return x + 1
        return x - 1

    check(f, torch.randn(3))
