"""Python semantics under pdyn: every binary operator, in-place form, comparison and unary op."""

from __future__ import annotations

import pytest
import torch

from tests.helpers import check

INT_OPS = ["+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>"]
FLOAT_OPS = ["+", "-", "*", "/", "//", "%", "**"]
TENSOR_OPS = ["+", "-", "*", "/", "//", "%", "**"]
COMPARES = ["<", "<=", "==", "!=", ">", ">="]


def _program(template: str, op: str):
    scope: dict = {"torch": torch}
    exec(template.replace("OP", op), scope)
    return scope["f"]


@pytest.mark.parametrize("op", INT_OPS)
def test_int_binary_op_and_inplace_fold_into_tensor_math(op):
    f = _program("def f(x):\n    a = 13 OP 3\n    b = 7\n    b OP= 2\n    return x * a + b, a, b\n", op)
    check(f, torch.randn(3))


@pytest.mark.parametrize("op", FLOAT_OPS)
def test_float_binary_op_and_inplace(op):
    f = _program("def f(x):\n    a = 7.5 OP 2.0\n    b = 3.25\n    b OP= 1.5\n    return x + a - b, a\n", op)
    check(f, torch.randn(3))


@pytest.mark.parametrize("op", TENSOR_OPS)
def test_tensor_binary_op_with_tensor_and_scalar(op):
    f = _program("def f(x, y):\n    return (x OP y, x OP 2, 3 OP y)\n", op)
    check(f, torch.rand(4) + 1, torch.rand(4) + 1)


@pytest.mark.parametrize("op", ["&", "|", "^", "<<", ">>"])
def test_tensor_bitwise_ops_on_ints(op):
    f = _program("def f(x, y):\n    z = x OP y\n    z OP= 1\n    return z, x OP 2\n", op)
    check(f, torch.arange(1, 7), torch.tensor([1, 2, 1, 0, 2, 1]))


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
def test_tensor_inplace_op_mutates_input(op):
    f = _program("def f(x, y):\n    x OP= y\n    return x\n", op)
    check(f, torch.rand(3) + 1, torch.rand(3) + 1)


def test_matmul_and_inplace_matmul():
    def f(a, b):
        c = a @ b
        c @= torch.eye(2)
        return c

    check(f, torch.randn(3, 4), torch.randn(4, 2))


def test_list_tuple_str_concat_and_repeat():
    def f(x):
        items = [1, 2] + [3]
        items += [4]
        items *= 2
        pair = (1,) + (2, 3)
        pair *= 2
        word = "ab" + "c" * 2
        word += "!"
        return x * len(items) + sum(pair), items, pair, word

    check(f, torch.randn(2))


def test_list_of_tensors_concat_keeps_tensors():
    def f(x, y):
        parts = [x] + [y] * 2
        return torch.cat(parts)

    check(f, torch.randn(2), torch.randn(3))


def test_iadd_on_list_alias_is_visible():
    def f(x):
        a = [x]
        b = a
        a += [x + 1]
        return len(b), b

    check(f, torch.randn(2))


def test_tuple_iadd_makes_new_tuple():
    def f(x):
        a = (x,)
        b = a
        a += (x * 2,)
        return len(a), len(b)

    check(f, torch.randn(2))


def test_str_percent_format_constants():
    def f(x):
        label = "%s-%d-%.2f" % ("k", 3, 1.5)
        return x + len(label), label

    check(f, torch.randn(2))


@pytest.mark.parametrize("op", COMPARES)
def test_compare_ints_floats_strings_tuples(op):
    f = _program("def f(x):\n    r = (3 OP 4, 2.5 OP 2.5, 'a' OP 'b', (1, 2) OP (1, 3))\n"
                 "    return (x + 1 if r[0] else x - 1), r\n", op)
    check(f, torch.randn(3))


@pytest.mark.parametrize("op", COMPARES)
def test_compare_tensors_records_op(op):
    f = _program("def f(x, y):\n    return x OP y, x OP 0.5\n", op)
    check(f, torch.rand(5), torch.rand(5))


def test_chained_comparison():
    def f(x, n):
        if 0 < n <= 4 < 10:
            return x + n
        return x - n

    check(f, torch.randn(2), 3)


def test_unary_ops_on_constants_and_tensors():
    def f(x, b):
        n = 5
        return -x, +x, ~b, -n, +n, ~n, not n, not 0, -2.5

    check(f, torch.randn(3), torch.tensor([True, False]))


def test_not_on_containers_and_none():
    def f(x, items):
        empty = not []
        full = not items
        none = not None
        return x * 2, empty, full, none

    check(f, torch.randn(2), [1])


def test_is_and_is_not():
    def f(x, y, opt=None):
        same = x is x
        other = x is y
        none = opt is None
        not_none = opt is not None
        flag = True is True
        return x + y, same, other, none, not_none, flag

    check(f, torch.randn(2), torch.randn(2))


def test_is_none_branch_on_optional_tensor():
    def f(x, bias=None):
        if bias is None:
            return x * 2
        return x + bias

    check(f, torch.randn(3))
    check(f, torch.randn(3), torch.randn(3))


def test_in_and_not_in_containers():
    def f(x, d):
        r = (2 in [1, 2], 5 not in (1, 2), "a" in "cat", "k" in d, "z" not in d, 3 in {3, 4}, 1 in range(3))
        return x + d["k"], r

    check(f, torch.randn(2), {"k": torch.ones(2)})


def test_in_list_of_tensors_by_identity():
    def f(x, y):
        items = [x]
        return x + 1, x in items

    check(f, torch.randn(2), torch.randn(2))


def test_divide_by_zero_raises_like_eager():
    def f(x, n):
        return x + 1 / n

    check(f, torch.randn(2), 0, graphs=0)


def test_int_float_mixed_promotion():
    def f(x):
        a = 3 + 0.5
        b = 7 // 2.0
        c = 2 ** -1
        d = True + 1
        return x * a, a, b, c, d

    check(f, torch.randn(2))
