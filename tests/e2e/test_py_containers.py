"""Python semantics under pdyn: building, unpacking, indexing and mutating lists, tuples, dicts and
sets, their methods, and comprehensions (which 3.12 inlines into the enclosing function)."""

from __future__ import annotations

import torch

from tests.helpers import check


def test_build_list_tuple_dict_set_of_tensors_and_constants():
    def f(x, y):
        lst = [x, y, 1]
        tup = (x + 1, "a")
        dct = {"x": x, 2: y * 2}
        st = {1, 2, 2, 3}
        return lst, tup, dct, st

    check(f, torch.randn(2), torch.randn(2))


def test_unpack_sequence_and_starred():
    def f(xs):
        a, *rest = xs
        *init, last = xs
        first, *middle, end = (1, 2, 3, 4, 5)
        return a + last, len(rest), len(init), middle, first + end

    check(f, [torch.randn(2) for _ in range(4)])


def test_unpack_nested_and_from_tensor():
    def f(x):
        (a, b), c = (x[0], x[1]), x[2]
        r0, r1 = x[:2]
        return a * b + c, r0 - r1

    check(f, torch.randn(3, 2))


def test_unpack_wrong_count_raises_like_eager():
    def f(x, items):
        a, b = items
        return x + a + b

    check(f, torch.randn(2), [1, 2, 3], graphs=0)


def test_starred_build_list_tuple_set_dict():
    def f(x, xs):
        lst = [*xs, x * 2]
        tup = (*xs, *lst)
        st = {*range(3), 7}
        base = {"a": 1}
        merged = {**base, "k": x, **{"a": 2}}
        return len(tup), lst, st, merged

    check(f, torch.randn(2), [torch.randn(2), torch.randn(2)])


def test_list_subscripts_and_slices():
    def f(xs):
        head = xs[0]
        tail = xs[-1]
        mid = xs[1:3]
        every = xs[::2]
        rev = xs[::-1]
        return head + tail, mid, every, rev

    check(f, [torch.randn(2) for _ in range(5)])


def test_list_store_and_delete_slices():
    def f(x):
        items = [0, 1, 2, 3, 4, 5]
        items[1:3] = [x, x * 2, x * 3]
        del items[0]
        del items[-2:]
        items[0] = items[0] + 1
        return items

    check(f, torch.randn(2))


def test_tuple_and_str_slices_of_constants():
    def f(x):
        t = (1, 2, 3, 4)
        s = "abcdef"
        return x * t[-1], t[1:], s[::2], s[-3:]

    check(f, torch.randn(2))


def test_index_out_of_range_raises_like_eager():
    def f(x, items):
        return x + items[5]

    check(f, torch.randn(2), [1, 2], graphs=0)


def test_list_methods_append_extend_insert_pop_index():
    def f(x):
        items = [x]
        items.append(x + 1)
        items.extend([x * 2, x * 3])
        items.insert(0, x - 1)
        last = items.pop()
        first = items.pop(0)
        where = [5, 6, 7].index(6)
        return first + last, items, where

    check(f, torch.randn(2))


def test_list_methods_count_reverse_sort_copy_remove_clear():
    def f(x):
        nums = [3, 1, 2, 3]
        n3 = nums.count(3)
        nums.reverse()
        copy = nums.copy()
        nums.sort(reverse=True)
        nums.remove(2)
        copy.clear()
        return x * n3, nums, copy

    check(f, torch.randn(2))


def test_dict_get_items_keys_values():
    def f(d):
        a = d.get("a")
        z = d.get("z", 5)
        none = d.get("missing")
        keys = list(d.keys())
        vals = [v * 2 for v in d.values()]
        pairs = [(k, v) for k, v in d.items()]
        return a + z, none, keys, vals, len(pairs)

    check(f, {"a": torch.randn(2), "b": torch.randn(2)})


def test_dict_update_setdefault_pop_del():
    def f(x):
        d = {"a": x}
        d.update({"b": x + 1}, c=3)
        d.update(e=4)
        s1 = d.setdefault("a", 100)
        s2 = d.setdefault("f", 7)
        popped = d.pop("b")
        missing = d.pop("zz", -1)
        del d["c"]
        return d, s1 + popped, s2, missing

    check(f, torch.randn(2))


def test_dict_missing_key_raises_key_error():
    def f(x, d):
        return x + d["nope"]

    check(f, torch.randn(2), {"k": 1}, graphs=0)


def test_dict_int_and_tuple_keys():
    def f(x):
        d = {0: x, (1, 2): x * 2}
        d[3] = d[0] + d[(1, 2)]
        return d

    check(f, torch.randn(2))


def test_set_methods_and_membership():
    def f(x):
        s = {1, 2}
        s.add(3)
        s.update([4, 5])
        both = s & {2, 3, 9}
        either = s | {10}
        diff = s - {1}
        return x * len(s), sorted(both), 10 in either, 1 in diff

    check(f, torch.randn(2))


def test_list_comprehension_with_condition():
    def f(xs):
        ys = [x * i for i, x in enumerate(xs) if i % 2 == 0]
        return torch.stack(ys)

    check(f, [torch.randn(2) for _ in range(5)])


def test_dict_and_set_comprehensions():
    def f(x):
        d = {f"k{i}": x + i for i in range(3)}
        s = {i % 3 for i in range(10)}
        return d, s

    check(f, torch.randn(2))


def test_nested_comprehension():
    def f(x):
        grid = [[x * (i + j) for j in range(2)] for i in range(3)]
        flat = [v for row in grid for v in row if True]
        return torch.stack(flat).sum(0), len(grid)

    check(f, torch.randn(2))


def test_comprehension_reads_closure_and_leaves_outer_name_alone():
    def f(x):
        i = 100
        scale = 3
        ys = [x * scale + i for i in range(2)]
        return ys, i

    check(f, torch.randn(2))


def test_comprehension_over_dict_items_builds_new_dict():
    def f(params):
        return {k: v * 2 for k, v in params.items() if k != "skip"}

    check(f, {"a": torch.randn(2), "skip": torch.randn(2), "b": torch.randn(2)})


def test_list_equality_and_truth():
    def f(x, items):
        same = items == [1, 2]
        diff = items != [2]
        if items:
            x = x + 1
        return x, same, diff

    check(f, torch.randn(2), [1, 2])


def test_repeat_list_from_left_int():
    def f(x):
        zeros = 2 * [0]
        xs = 3 * [x]
        return torch.stack(xs), zeros

    check(f, torch.randn(2))


def test_tuple_methods_index_and_count():
    def f(x):
        t = (1, 2, 2, 3)
        return x * t.index(3) + t.count(2)

    check(f, torch.randn(2))


def test_dict_views_are_live_and_keep_their_types():
    def f(x, d):
        keys = d.keys()
        vals = d.values()
        d["new"] = x * 2
        r = (len(keys), "new" in keys, isinstance(keys, list), type(vals).__name__, bool(d.items()))
        sizes = {"n": 1}
        return keys, list(vals), sizes.items(), r

    check(f, torch.randn(2), {"a": torch.randn(2)})
