"""End-to-end: what pdyn hands back (identity of returned inputs, structseqs, nested containers) and
tensors reaching the frame in less usual ways (globals, closures, containers, unbound methods)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tests.helpers import check

G_BIAS = torch.randn(3)


def test_structseq_returned_directly():
    check(lambda x: (x.max(1), torch.sort(x, descending=True), [torch.min(x, 0)]), torch.randn(2, 3))


def test_structseq_iterated():
    def f(x):
        out = []
        for t in x.max(0):
            out.append(t * 1)
        return out

    check(f, torch.randn(2, 3))


def test_inplace_result_is_the_input():
    def f(x, y):
        z = x.add_(1)
        w = x
        w += y
        return z is x, w is x, x

    check(f, torch.randn(2), torch.randn(2))


def test_functional_relu_inplace_returns_its_argument():
    def f(x):
        y = F.relu(x, inplace=True)
        return y is x, y

    check(f, torch.randn(3))


def test_relu_inplace_module_mutates_intermediate():
    check(nn.Sequential(nn.Linear(2, 2), nn.ReLU(inplace=True)), torch.randn(2))


def test_no_op_conversions_return_the_same_tensor():
    def f(x):
        return x.to(torch.float32) is x, x.contiguous() is x, x.float() is x, x.double() is x

    check(f, torch.randn(2))


def test_unbound_tensor_methods():
    def f(x):
        return torch.Tensor.add(x, 1), torch.Tensor.split(x, 1), torch.Tensor.__rsub__(x, 2)

    check(f, torch.randn(2))


def test_tensor_method_via_getattr():
    check(lambda x: getattr(x, "relu")() + getattr(torch, "sigmoid")(x), torch.randn(3))


def test_global_and_closure_tensors():
    scale = torch.full((3,), 2.0)

    def f(x):
        return x * scale + G_BIAS

    check(f, torch.randn(3))


def test_tensors_in_list_and_dict_arguments():
    def f(xs, d):
        return xs[0] + xs[1], d["a"] * 2, [t.sum() for t in xs]

    check(f, [torch.randn(2), torch.randn(2)], {"a": torch.randn(2)})


def test_nested_output_structure():
    check(lambda x: {"a": (x, [x + 1, {"b": x.shape}]), "c": x.dtype}, torch.randn(2))


def test_returned_input_is_the_same_object():
    x = torch.randn(2, requires_grad=True)
    check(lambda x: x, x, graphs=0)


def test_dtype_and_device_arguments():
    def f(x, dt, d):
        return x.to(dt) * 2, torch.ones(2, device=d, dtype=dt), x.to(d)

    check(f, torch.randn(2), torch.float64, torch.device("cpu"))


def test_channels_last_input_and_output():
    x = torch.randn(1, 2, 3, 3).to(memory_format=torch.channels_last)
    check(lambda x: (x * 2, x.contiguous(memory_format=torch.channels_last) + 1), x)


def test_scalar_tensor_input_and_complex():
    check(lambda x, s: x * s, torch.randn(3), torch.tensor(2.0))
    check(lambda z: (z * z.conj()).real, torch.randn(3, dtype=torch.complex64))


def test_size_math_with_python_math():
    check(lambda x: x * x.shape[0] ** 0.5 / math.sqrt(x.size(-1)) + len(x.shape), torch.randn(4, 9))


def test_enumerate_and_zip_over_tensors():
    check(lambda x, y: ([i * r for i, r in enumerate(x)], [a + b for a, b in zip(x, y)]),
          torch.randn(3, 2), torch.randn(3, 2))


def test_index_add_on_input():
    def f(x, i):
        x.index_add_(0, i, torch.ones(2, 3))
        x[i] += 1
        return x

    check(f, torch.zeros(3, 3), torch.tensor([0, 2]))


def test_setitem_with_value_requiring_grad():
    def f(w):
        y = torch.zeros(3)
        y[0] = (w * 2).sum()
        return y

    check(f, torch.randn(3, requires_grad=True))


def test_inplace_on_leaf_requiring_grad_raises_like_eager():
    check(lambda x: x.add_(1), torch.randn(2, requires_grad=True), graphs=0)


def test_runtime_only_errors_raise_from_the_graph():
    check(lambda x: x[torch.tensor([0, 5])], torch.randn(3))
    check(lambda i: i ** -1, torch.arange(1, 3))


def test_data_dependent_shapes_are_captured():
    check(lambda x: x.nonzero(), torch.randn(4), graphs=1)
    check(lambda x: torch.full((2,), x.sum()), torch.randn(2), graphs=1)


def test_inplace_unsqueeze_falls_back():
    def f(x):
        x.unsqueeze_(0)
        return x.shape

    check(f, torch.randn(2), graphs=0)
