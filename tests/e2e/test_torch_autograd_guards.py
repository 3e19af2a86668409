"""End-to-end: tensors requiring grad, eager fallbacks and recompiles on guard failures under pdyn."""

from __future__ import annotations

import sys

import torch

import pdyn
from tests.helpers import check


def _grads(fn, *args):
    """Outputs and input gradients of `sum(fn(*args))`, on fresh leaf copies of `args`."""
    leaves = [a.detach().clone().requires_grad_(a.requires_grad) for a in args]
    out = fn(*leaves)
    out.sum().backward()
    return out, [leaf.grad for leaf in leaves]


def test_output_requires_grad_and_backward_matches_eager():
    def f(x, w):
        return torch.tanh(x @ w).pow(2)

    x, w = torch.randn(3, 4), torch.randn(4, 2, requires_grad=True)
    opt = check(f, x, w)
    out, grads = _grads(opt, x, w)
    ref_out, ref_grads = _grads(f, x, w)
    assert out.requires_grad and out.grad_fn is not None
    torch.testing.assert_close(out, ref_out)
    assert grads[0] is None
    torch.testing.assert_close(grads[1], ref_grads[1])


def test_backward_through_module_parameters():
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    ref = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    ref.load_state_dict(model.state_dict())
    x = torch.randn(5, 4)
    pdyn.optimize(model)(x).sum().backward()
    ref(x).sum().backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad)


def test_detach_and_no_grad_output():
    def f(x):
        return x.detach() * 2, (x * 3).detach().requires_grad

    check(f, torch.randn(3, requires_grad=True))


def test_grad_mode_change_recompiles():
    f = pdyn.optimize(lambda x: x * 2, backend="eager")
    x = torch.randn(3, requires_grad=True)
    assert f(x).requires_grad
    with torch.no_grad():
        assert not f(x).requires_grad
    assert pdyn.stats(f)["compiles"] == 2


def test_item_in_python_falls_back():
    def f(x):
        return x * x.sum().item()

    check(f, torch.randn(3), graphs=2)


def test_tolist_breaks_the_graph():
    def f(x):
        return [v + 1 for v in x.tolist()]

    # the break resumes after tolist() (on 3.11 the comprehension's function, made in the trace, is
    # rebuilt for the resume function)
    check(f, torch.randn(3), graphs=0, fallbacks=0)
    assert pdyn.stats()["graph_breaks"] == 1


def test_data_dependent_branch_falls_back():
    def f(x):
        if x.sum() > 0:
            return x + 1
        return x - 1

    check(f, torch.ones(3), graphs=2)
    check(f, -torch.ones(3), graphs=2)  # another backend: its own entries (the sum, then the other branch)


def test_print_falls_back(capsys):
    def f(x):
        print("shape", tuple(x.shape))
        return x + 1

    check(f, torch.randn(2), graphs=1)
    assert capsys.readouterr().out.count("shape (2,)") == 4


def test_bool_of_tensor_falls_back():
    def f(x):
        return x * 2 if bool((x > 0).all()) else x

    check(f, torch.rand(3), graphs=2)


def test_new_shape_recompiles():
    f = pdyn.optimize(lambda x: x.sum(0) * 2, backend="eager")
    for shape in [(0, 3), (0, 3), (4, 3)]:  # size 0 is always specialized
        x = torch.randn(shape)
        torch.testing.assert_close(f(x), x.sum(0) * 2)
    assert pdyn.stats(f)["compiles"] == 2


def test_new_dtype_recompiles():
    f = pdyn.optimize(lambda x: x + 1, backend="eager")
    assert f(torch.zeros(2)).dtype == torch.float32
    assert f(torch.zeros(2, dtype=torch.int64)).dtype == torch.int64
    assert pdyn.stats(f)["compiles"] == 2


def test_requires_grad_change_recompiles():
    f = pdyn.optimize(lambda x: x * 3, backend="eager")
    assert not f(torch.zeros(2)).requires_grad
    assert f(torch.zeros(2, requires_grad=True)).requires_grad
    assert pdyn.stats(f)["compiles"] == 2


def test_python_scalar_argument_change_recompiles_with_new_value():
    f = pdyn.optimize(lambda x, scale: x * scale, backend="eager")
    x = torch.ones(2)
    assert f(x, 2.0).tolist() == [2.0, 2.0]
    assert f(x, 3.0).tolist() == [3.0, 3.0]
    assert f(x, 3.0).tolist() == [3.0, 3.0]
    assert pdyn.stats(f)["compiles"] == 2


def test_same_tensor_passed_twice_is_guarded():
    f = pdyn.optimize(lambda a, b: a.add_(1) + b, backend="eager")
    x = torch.zeros(2)
    assert f(x, x).tolist() == [2.0, 2.0]
    assert f(torch.zeros(2), torch.zeros(2)).tolist() == [1.0, 1.0]
    assert pdyn.stats(f)["compiles"] == 2


def test_is_leaf_of_input_is_not_baked_in():
    f = pdyn.optimize(lambda x: (x * 2, x.is_leaf), backend="eager")
    w = torch.randn(3, requires_grad=True)
    assert f(w)[1] is True
    assert f(w * 2)[1] is False
    check(lambda x: (x * 2).is_leaf, torch.randn(2), graphs=1)


def test_storage_offset_is_not_baked_in():
    f = pdyn.optimize(lambda x: (x + 1, x.storage_offset()), backend="eager")
    base = torch.randn(5)
    assert f(base[:4])[1] == 0
    assert f(base[1:])[1] == 1


def test_reading_grad_falls_back():
    x = torch.randn(2, requires_grad=True)
    x.grad = torch.ones(2)
    check(lambda x: x.grad * 2, x, graphs=1)


def test_no_grad_block_is_traced():
    def f(x):
        with torch.no_grad():
            y = x * 2
        return y + x

    check(f, torch.randn(2, requires_grad=True), graphs=1)
