"""Python semantics under pdyn: side effects on inputs, rebuilding returned Python values, aliasing,
and the constructs that must run eagerly (with results still equal to eager's)."""

from __future__ import annotations

import torch

from tests.helpers import check


class Box:
    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return type(other) is Box and torch.equal(torch.as_tensor(self.value), torch.as_tensor(other.value))


def test_append_to_input_list():
    def f(x, out):
        out.append(x * 2)
        out.append(3)
        return x + 1

    check(f, torch.randn(2), [torch.ones(2)])


def test_extend_pop_and_setitem_on_input_list():
    def f(x, items):
        items.extend([x, x + 1])
        first = items.pop(0)
        items[0] = items[0] * 10
        return first

    check(f, torch.randn(2), [1, 2, 3])


def test_set_key_and_delete_key_on_input_dict():
    def f(x, state):
        state["y"] = x + 1
        state["count"] = state["count"] + 1
        del state["old"]
        return x * 2

    check(f, torch.randn(2), {"count": 1, "old": None})


def test_nested_input_container_mutation():
    def f(x, state):
        state["hist"].append(x.sum())
        state["meta"]["calls"] += 1
        return x

    check(f, torch.randn(2), {"hist": [], "meta": {"calls": 0}})


def test_mutating_local_copy_leaves_input_alone():
    def f(x, items):
        mine = list(items)
        mine.append(x)
        d = dict(a=1)
        d["b"] = x * 3
        return len(mine), d

    check(f, torch.randn(2), [1])


def test_attribute_store_on_input_object():
    def f(x, box):
        box.value = box.value + x
        box.extra = 3
        return box.value * 2

    check(f, torch.randn(2), Box(torch.ones(2)))


def test_return_non_tensor_values():
    def f(x):
        return x + 1, 3, 2.5, "s", None, True, (1, (2, [3])), {"k": [x * 2, {"z": None}]}

    check(f, torch.randn(2))


def test_return_none_after_side_effect_only():
    def f(x, out):
        out.append(x + 1)

    check(f, torch.randn(2), [])


def test_return_input_itself_and_input_list():
    def f(x, items):
        return x, items, items[0]

    check(f, torch.randn(2), [torch.randn(2)], graphs=0)


def test_return_same_list_twice_keeps_alias():
    def f(x):
        shared = [x + 1]
        pair = (shared, shared)
        return pair

    opt = check(f, torch.randn(2))
    a, b = opt(torch.randn(2))
    assert a is b


def test_returned_input_list_after_append_is_same_object():
    def f(x, items):
        items.append(x * 2)
        return items

    opt = check(f, torch.randn(2), [])
    items: list = []
    assert opt(torch.randn(2), items) is items and len(items) == 1


def test_same_tensor_returned_twice():
    def f(x):
        y = x * 2
        return y, y, [y]

    opt = check(f, torch.randn(2))
    a, b, c = opt(torch.randn(2))
    assert a is b and c[0] is a


def test_return_dict_with_int_keys_and_order():
    def f(x):
        out = {}
        out[2] = x
        out[1] = x + 1
        out[0] = out[2] * 3
        return out

    check(f, torch.randn(2))


def test_input_list_aliasing_two_arguments():
    def f(x, a, b):
        a.append(x * 2)
        return len(b)

    shared: list = []
    opt = check(f, torch.randn(2), shared, shared)
    assert opt(torch.randn(2), [], []) == 0  # distinct lists: the aliasing guard fails, recompiles


def test_print_falls_back():
    def f(x):
        y = x + 1
        print("value", end="")
        return y

    check(f, torch.randn(2), graphs=1)


def test_break_in_a_try_block_resumes_inside_it():
    def f(x):
        try:
            y = x + 1
            print("value", end="")
        except RuntimeError:
            y = x
        return y

    check(f, torch.randn(2), graphs=1)


def test_break_in_a_with_block_resumes_inside_it():
    def f(x):
        with torch.no_grad():
            y = x * 2
            print("value", end="")
        return y

    check(f, torch.randn(2), graphs=2)   # the second sets the grad mode back (the block's exit)


def test_data_dependent_branch_falls_back():
    def f(x):
        if x.sum() > 0:
            return x + 1
        return x - 1

    check(f, torch.randn(3), graphs=2)


def test_item_in_python_breaks_and_the_rest_is_compiled():
    def f(x, out):
        out.append(x.max().item())   # `out.append` waits on the stack across the break
        return x * 2

    check(f, torch.randn(3), [], graphs=2)


def test_generator_expression_is_traced():
    def f(x):
        return sum(x * i for i in range(3))

    check(f, torch.randn(2), graphs=1)


def test_unknown_callable_object_falls_back():
    import random

    def f(x):
        return x * random.random() * 0

    check(f, torch.randn(2), graphs=2)


class _Box:
    def __init__(self, items):
        self.items = items

    def __eq__(self, other):
        return type(other) is _Box and self.items == other.items


def test_side_effects_on_an_attribute_and_its_old_list_replay_in_program_order():
    def f(x, box, log):
        old = box.items
        old.append(1)          # the list box.items held, changed in place
        box.items = [2]        # then the attribute replaced
        log.append(len(old))
        return x + 1, old

    check(f, torch.randn(2), _Box([0]), [])
