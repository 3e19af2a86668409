"""Python semantics under pdyn: locals, cells and free variables, globals, builtins, constants."""

from __future__ import annotations

import math

import torch

from tests.helpers import check

SCALE = 3
OFFSET = torch.ones(4)
NAMES = ("a", "b")
TABLE = {"w": 2.0, "b": -1.0}


def helper_double(t):
    return t * 2


def test_locals_reassigned_and_swapped():
    def f(x, y):
        a, b = x, y
        a, b = b, a
        c = a - b
        c = c * 2
        return c, a

    check(f, torch.randn(4), torch.randn(4))


def test_deleted_local_then_rebound():
    def f(x):
        t = x + 1
        del t
        t = x * 3
        return t

    check(f, torch.randn(3))


def test_unbound_local_raises_like_eager():
    def f(x, flag):
        if flag:
            y = x + 1
        return y  # noqa: F821

    check(f, torch.randn(3), False, graphs=0)


def test_closure_reads_outer_tensor_and_int():
    k = 5
    w = torch.randn(4)

    def f(x):
        return x * k + w

    check(f, torch.randn(4))


def test_closure_created_in_trace_captures_local():
    def f(x):
        scale = 2.5

        def inner(t):
            return t * scale

        return inner(x) + inner(x + 1)

    check(f, torch.randn(4))


def test_nonlocal_counter_in_nested_function():
    def f(x):
        count = 0

        def bump(t):
            nonlocal count
            count += 1
            return t + count

        y = bump(x)
        y = bump(y)
        return y, count

    check(f, torch.randn(3))


def test_nested_closure_two_levels():
    def f(x):
        a = 2

        def outer(t):
            b = 3

            def inner(u):
                return u * a + b

            return inner(t)

        return outer(x)

    check(f, torch.randn(3))


def test_cell_rebound_after_closure_made():
    def f(x):
        n = 1

        def get():
            return n

        n = 4
        return x * get()

    check(f, torch.randn(3))


def test_closure_returned_and_called_in_loop():
    def f(x):
        fns = [(lambda t, i=i: t + i) for i in range(3)]
        for g in fns:
            x = g(x)
        return x

    check(f, torch.randn(3))


def test_module_globals_tensor_int_function():
    def f(x):
        return helper_double(x) * SCALE + OFFSET

    check(f, torch.randn(4))


def test_global_tuple_and_dict_constants():
    def f(x):
        out = {}
        for name in NAMES:
            out[name] = x * TABLE["w"] + TABLE["b"]
        return out

    check(f, torch.randn(2))


def test_global_module_math_constant():
    def f(x):
        return x * math.pi + math.sqrt(4.0)

    check(f, torch.randn(3))


def test_builtins_len_range_abs_round():
    def f(x):
        n = len([1, 2, 3])
        total = 0
        for i in range(n):
            total += abs(i - 5)
        return x + round(total / 4, 1)

    check(f, torch.randn(3))


def test_constants_of_every_kind():
    def f(x):
        consts = (None, True, 2, 2.5, "s", b"b", (1, 2), -0.0, 1e-3)
        return x + consts[2] * consts[3], consts

    check(f, torch.randn(2))


def test_global_store_replayed():
    def f(x):
        global _STORED
        _STORED = 7
        return x + _STORED

    globals()["_STORED"] = 0
    check(f, torch.randn(2))
    assert globals()["_STORED"] == 7


def test_int_global_changed_between_calls_stays_symbolic():
    import pdyn
    from pdyn import optimize

    from tests.helpers import CountingBackend

    def f(x):
        return x * _FACTOR

    globals()["_FACTOR"] = 2
    backend = CountingBackend()
    opt = optimize(f, backend=backend)
    x = torch.randn(3)
    torch.testing.assert_close(opt(x), x * 2)
    globals()["_FACTOR"] = 5
    torch.testing.assert_close(opt(x), x * 5)
    # an int used only in tensor math is a size-like symbol: one graph serves both values
    assert len(backend.graphs) == 1 and pdyn.stats(opt)["compiles"] == 1


def test_name_error_for_missing_global():
    def f(x):
        return x + _MISSING_NAME  # noqa: F821

    check(f, torch.randn(2), graphs=0)


def test_comprehension_cell_variable_does_not_touch_outer_cell():
    def f(x):
        i = 10
        g = lambda: i  # noqa: E731
        fns = [lambda: i for i in range(3)]
        return x + g(), [fn() for fn in fns], i

    check(f, torch.randn(2))


def test_comprehension_inside_nested_function_reads_its_closure():
    def f(x):
        k = 2

        def rows(t):
            return [t * k + j for j in range(3)]

        return torch.stack(rows(x))

    check(f, torch.randn(2))
