"""Decoding code objects into pdyn's normalized instruction list (pdyn/bytecode/instructions.py)."""

from __future__ import annotations

import operator

import torch

from pdyn.bytecode.instructions import OPNAMES, CallExArgs, FormatArgs, FunctionParts, UnpackCounts, decode


def opnames(fn) -> list[str]:
    return [inst.opname for inst in decode(fn.__code__)]


def test_precall_kw_names_resume_are_dropped():
    def f(x):
        return x.sum(dim=0)

    names = opnames(f)
    assert not {"PRECALL", "KW_NAMES", "RESUME", "CACHE"} & set(names), names


def test_kw_names_fold_into_the_call_after_them():
    def f(x):
        return torch.clamp(x, min=0, max=1)

    calls = [inst for inst in decode(f.__code__) if inst.opname == "CALL"]
    assert [c.kw_names for c in calls] == [("min", "max")]
    assert calls[0].argval == 3


def test_call_without_keywords_has_no_kw_names():
    def f(x):
        return torch.relu(x).clamp(min=0)

    calls = [inst for inst in decode(f.__code__) if inst.opname == "CALL"]
    assert [c.kw_names for c in calls] == [(), ("min",)]


def test_method_load_becomes_load_method():
    def f(x):
        return x.sum(), x.shape

    insts = decode(f.__code__)
    assert [(i.opname, i.argval) for i in insts if i.opname in ("LOAD_METHOD", "LOAD_ATTR")] == [
        ("LOAD_METHOD", "sum"), ("LOAD_ATTR", "shape")]


def test_load_global_with_null_is_decoded_to_name_and_push_null():
    def f(x):
        return torch.relu(x)

    first = decode(f.__code__)[0]
    assert (first.opname, first.argval, first.push_null) == ("LOAD_GLOBAL", "torch", True)


def test_binary_op_decodes_function_and_inplace():
    def f(x, y):
        x += y
        return x * y

    ops = [(i.argval, i.inplace) for i in decode(f.__code__) if i.opname == "BINARY_OP"]
    assert ops == [(operator.add, True), (operator.mul, False)]


def test_compare_op_decodes_operator():
    def f(x):
        return x < 3

    assert [i.argval for i in decode(f.__code__) if i.opname == "COMPARE_OP"] == [operator.lt]


def test_jump_targets_are_indices_into_the_list():
    def f(x):
        if x:
            return 1
        return 2

    insts = decode(f.__code__)
    jump = next(i for i in insts if i.opname == "POP_JUMP_IF_FALSE")
    assert jump.argval is None
    assert isinstance(jump.target, int)
    target = insts[jump.target]
    # 3.11 loads the constant then returns it; 3.12 has RETURN_CONST
    assert target.opname in ("LOAD_CONST", "RETURN_CONST") and target.argval == 2
    assert all(i.index == n for n, i in enumerate(insts))


def test_forward_backward_jump_spellings_are_normalized():
    def f(n):
        while n:
            n -= 1
        return n

    names = set(opnames(f))
    assert not any("FORWARD" in n or "BACKWARD" in n for n in names), names
    assert names <= OPNAMES, names - OPNAMES


def test_for_iter_target_is_first_instruction_after_the_loop():
    def f(xs):
        total = 0
        for v in xs:
            total = total + v
        return total

    insts = decode(f.__code__)
    loop = next(i for i in insts if i.opname == "FOR_ITER")
    after = insts[loop.target]
    assert (after.opname, after.argval) == ("LOAD_FAST", "total")
    assert insts[loop.target + 1].opname == "RETURN_VALUE"
    back = next(i for i in insts if i.opname == "JUMP")
    assert back.target == loop.index


def test_try_body_is_try_and_handler_is_cleanup():
    def f(x):
        try:
            y = x + 1
        except ValueError:
            y = x
        return y

    insts = decode(f.__code__)
    body = [i for i in insts if i.lineno == f.__code__.co_firstlineno + 2]
    assert [i.exc_kind for i in body if i.opname != "JUMP"] == ["try"] * 4
    handler_start = next(i for i in insts if i.opname == "PUSH_EXC_INFO")
    assert handler_start.exc_kind == "cleanup"
    ret = [i for i in insts if i.opname == "RETURN_VALUE"]
    assert ret[-1].exc_kind is None


def test_code_outside_try_has_no_exc_kind():
    def f(x):
        return x + 1

    assert {i.exc_kind for i in decode(f.__code__)} == {None}


def test_positions_are_line_and_columns_of_the_user_source():
    def f(x):
        return torch.relu(x)

    insts = decode(f.__code__)
    call = next(i for i in insts if i.opname == "CALL")
    line = f.__code__.co_firstlineno + 1
    assert call.lineno == line
    text = "        return torch.relu(x)"
    assert text[call.col:call.end_col] == "torch.relu(x)"


def test_closure_variable_names_are_decoded_as_strings():
    y = 3

    def f(x):
        return x + y

    loads = [i for i in decode(f.__code__) if i.opname == "LOAD_DEREF"]
    assert [i.argval for i in loads] == ["y"]


def test_repr_shows_index_name_argument_target_and_line():
    def f(x):
        return x

    text = repr(decode(f.__code__)[0])
    assert text == f"<0 LOAD_FAST 'x' line {f.__code__.co_firstlineno + 1}>"


def argvals(fn, opname: str) -> list:
    return [inst.argval for inst in decode(fn.__code__) if inst.opname == opname]


def test_make_function_flags_decode_into_named_parts():
    def f(y):
        def g(a=1, *, b=2) -> int:
            return a + b + y
        return g

    assert argvals(f, "MAKE_FUNCTION") == [FunctionParts(closure=True, annotations=True, kwdefaults=True,
                                                         defaults=True)]

    def plain():
        return lambda: 0

    assert argvals(plain, "MAKE_FUNCTION") == [FunctionParts(False, False, False, False)]


def test_format_value_flags_decode_into_conversion_and_spec():
    def f(x):
        return f"{x!r:>4}{x}{x!a}{x:3}{x!s}"

    assert argvals(f, "FORMAT_VALUE") == [FormatArgs(repr, True), FormatArgs(None, False), FormatArgs(ascii, False),
                                          FormatArgs(None, True), FormatArgs(str, False)]


def test_unpack_ex_counts_decode_into_before_and_after():
    def f(xs):
        a, b, *rest, c = xs
        return rest

    assert argvals(f, "UNPACK_EX") == [UnpackCounts(before=2, after=1)]


def test_call_function_ex_kwargs_flag_decodes():
    def f(g, args, kw):
        return g(*args, **kw), g(*args)

    assert argvals(f, "CALL_FUNCTION_EX") == [CallExArgs(has_kwargs=True), CallExArgs(has_kwargs=False)]
