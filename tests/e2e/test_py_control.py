"""Python semantics under pdyn: branches, short-circuit logic and loops of every shape."""

from __future__ import annotations

import torch

from tests.helpers import check


def test_if_elif_else_on_int_argument():
    def f(x, mode):
        if mode == 0:
            y = x + 1
        elif mode == 1:
            y = x * 2
        elif mode > 5:
            y = x.relu()
        else:
            y = -x
        return y

    for mode in (0, 1, 3, 9):
        check(f, torch.randn(3), mode)


def test_ternary_on_shape_and_flag():
    def f(x, flag):
        y = x.sum(0) if x.ndim == 2 else x
        return y * 2 if flag else y - 2

    check(f, torch.randn(2, 3), True)
    check(f, torch.randn(3), False)


def test_and_or_short_circuit_values():
    def f(x, a, b):
        first = a and b
        second = a or b
        third = None or [] or 3
        fourth = 0 and x
        y = x * 2 if (a and not b) else x + 1
        return y, first, second, third, fourth

    check(f, torch.randn(2), 2, 0)
    check(f, torch.randn(2), 0, "s")


def test_or_returns_tensor_operand():
    def f(x, bias=None):
        b = bias or 1.0
        return x + b

    check(f, torch.randn(3))


def test_short_circuit_skips_failing_operand():
    def f(x, items):
        if len(items) > 0 and items[0] > 1:
            return x + items[0]
        return x * 2

    check(f, torch.randn(2), [])
    check(f, torch.randn(2), [3])


def test_for_over_range_with_step_and_negative():
    def f(x):
        for i in range(10, 0, -3):
            x = x + i
        for j in range(2):
            x = x * (j + 1)
        return x

    check(f, torch.randn(2))


def test_for_over_list_tuple_and_str():
    def f(x, ws):
        for w in ws:
            x = x * w
        for s in (1, 2.5):
            x = x + s
        n = 0
        for ch in "abc":
            n += ord(ch)
        return x + n

    check(f, torch.randn(3), [torch.randn(3), torch.randn(3)])


def test_for_over_dict_keys_values_items():
    def f(d):
        out = 0
        for k in d:
            out = out + d[k]
        for v in d.values():
            out = out * v
        names = []
        for k, v in d.items():
            names.append(k)
            out = out - v
        for k in d.keys():
            names.append(k.upper())
        return out, names

    check(f, {"a": torch.randn(2), "b": torch.randn(2)})


def test_for_enumerate_zip_reversed():
    def f(xs, ws):
        total = xs[0] * 0
        for i, (x, w) in enumerate(zip(xs, ws), start=1):
            total = total + i * x * w
        for x in reversed(xs):
            total = total - x
        for i, x in reversed(list(enumerate(xs))):
            total = total + i
        return total

    check(f, [torch.randn(2) for _ in range(3)], [0.5, 1.5, 2.5])


def test_nested_loops_with_break_and_continue():
    def f(x):
        hits = []
        for i in range(4):
            if i == 1:
                continue
            for j in range(4):
                if j > i:
                    break
                if (i + j) % 2:
                    continue
                hits.append((i, j))
                x = x + i * j
        return x, hits

    check(f, torch.randn(2))


def test_while_with_known_condition():
    def f(x):
        n = 0
        while n < 5:
            x = x * 1.5
            n += 2
        while True:
            n -= 1
            if n < 3:
                break
        return x, n

    check(f, torch.randn(2))


def test_while_over_shrinking_list():
    def f(x):
        todo = [1, 2, 3]
        while todo:
            x = x + todo.pop()
        return x

    check(f, torch.randn(2))


def test_for_else_runs_without_break_and_skips_with_break():
    def f(x, stop):
        for i in range(3):
            if i == stop:
                x = x + 10
                break
        else:
            x = x - 10
        return x

    check(f, torch.randn(2), 1)
    check(f, torch.randn(2), 7)


def test_while_else():
    def f(x):
        i = 0
        while i < 3:
            i += 1
        else:
            x = x + i
        return x

    check(f, torch.randn(2))


def test_loop_over_tensor_rows():
    def f(x):
        acc = torch.zeros(3)
        for row in x:
            acc = acc + row
        return acc

    check(f, torch.randn(4, 3))


def test_loop_over_shape_and_size():
    def f(x):
        total = 1
        for s in x.shape:
            total *= s
        return x.reshape(total) + x.size(0)

    check(f, torch.randn(2, 3))


def test_modifying_list_while_iterating_matches_python():
    def f(x):
        items = [1, 2]
        seen = []
        for v in items:
            seen.append(v)
            if v < 3:
                items.append(v + 2)
        return x + len(seen), seen

    check(f, torch.randn(2))


def test_early_return_inside_loop():
    def f(x, limit):
        for i in range(10):
            x = x + 1
            if i >= limit:
                return x, i
        return x, -1

    check(f, torch.randn(2), 2)
