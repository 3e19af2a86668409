"""Decoding a code object into pdyn's `Instruction` list, with the `bytecode` library.

Every difference between CPython 3.11 and 3.12 bytecode is settled here, so handlers see one
instruction set: PRECALL is dropped, KW_NAMES is folded into the CALL after it, method loads
become LOAD_METHOD, conditional jumps lose their FORWARD/BACKWARD spelling, 3.12's FOR_ITER
jumps past its END_FOR, 3.12's BINARY_SLICE/STORE_SLICE/CALL_INTRINSIC_1 become the 3.11
instructions that do the same, and MAKE_CELL is kept only where 3.12 emits it outside the prologue
(an inlined comprehension's cell variable). 3.12's LOAD_SUPER_ATTR keeps its name: its argval is
the attribute and `push_null` marks the method form. Jump targets are indices into the decoded list.
"""

from __future__ import annotations

import operator
import types
from dataclasses import dataclass, field
from typing import Any, Callable

import bytecode
from bytecode import BinaryOp, Compare, Instr, Label, TryBegin, TryEnd

BINARY_OPS: dict[BinaryOp, tuple[Callable[[Any, Any], Any], bool]] = {}
for _op in BinaryOp:
    _name = _op.name.removeprefix("INPLACE_")
    _fn = {
        "ADD": operator.add, "AND": operator.and_, "FLOOR_DIVIDE": operator.floordiv,
        "LSHIFT": operator.lshift, "MATRIX_MULTIPLY": operator.matmul, "MULTIPLY": operator.mul,
        "REMAINDER": operator.mod, "OR": operator.or_, "POWER": operator.pow,
        "RSHIFT": operator.rshift, "SUBTRACT": operator.sub, "TRUE_DIVIDE": operator.truediv,
        "XOR": operator.xor,
    }[_name]
    BINARY_OPS[_op] = (_fn, _op.name.startswith("INPLACE_"))

INPLACE_OF: dict[Callable[[Any, Any], Any], Callable[[Any, Any], Any]] = {
    operator.add: operator.iadd, operator.and_: operator.iand, operator.floordiv: operator.ifloordiv,
    operator.lshift: operator.ilshift, operator.matmul: operator.imatmul, operator.mul: operator.imul,
    operator.mod: operator.imod, operator.or_: operator.ior, operator.pow: operator.ipow,
    operator.rshift: operator.irshift, operator.sub: operator.isub, operator.truediv: operator.itruediv,
    operator.xor: operator.ixor,
}

COMPARE_OPS: dict[Compare, Callable[[Any, Any], Any]] = {
    Compare.LT: operator.lt, Compare.LE: operator.le, Compare.EQ: operator.eq,
    Compare.NE: operator.ne, Compare.GT: operator.gt, Compare.GE: operator.ge,
}

RENAMED = {
    "POP_JUMP_FORWARD_IF_FALSE": "POP_JUMP_IF_FALSE", "POP_JUMP_BACKWARD_IF_FALSE": "POP_JUMP_IF_FALSE",
    "POP_JUMP_FORWARD_IF_TRUE": "POP_JUMP_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE": "POP_JUMP_IF_TRUE",
    "POP_JUMP_FORWARD_IF_NONE": "POP_JUMP_IF_NONE", "POP_JUMP_BACKWARD_IF_NONE": "POP_JUMP_IF_NONE",
    "POP_JUMP_FORWARD_IF_NOT_NONE": "POP_JUMP_IF_NOT_NONE",
    "POP_JUMP_BACKWARD_IF_NOT_NONE": "POP_JUMP_IF_NOT_NONE",
    "JUMP_FORWARD": "JUMP", "JUMP_BACKWARD": "JUMP", "JUMP_BACKWARD_NO_INTERRUPT": "JUMP",
    "LOAD_FAST_CHECK": "LOAD_FAST",
}
DROPPED = {"PRECALL", "RESUME", "NOP", "CACHE", "EXTENDED_ARG", "COPY_FREE_VARS"}
# The frame prologue makes every cell before RESUME (the tracer makes them when it starts a frame);
# 3.12 also emits MAKE_CELL inside a function, for a cell variable of an inlined comprehension.
PROLOGUE_ONLY = {"MAKE_CELL"}
INTRINSICS = {"INTRINSIC_UNARY_POSITIVE": "UNARY_POSITIVE", "INTRINSIC_LIST_TO_TUPLE": "LIST_TO_TUPLE"}

# The instruction set handlers see (the union of both versions, after the renames above).
OPNAMES = frozenset(
    (set(__import__("dis").opmap) | set(RENAMED.values()) | set(INTRINSICS.values())
     | {"LOAD_METHOD", "JUMP", "LIST_TO_TUPLE", "UNARY_POSITIVE", "JUMP_IF_FALSE_OR_POP",
        "JUMP_IF_TRUE_OR_POP", "RETURN_CONST", "END_FOR", "LOAD_FAST_AND_CLEAR", "LOAD_SUPER_ATTR"})
    - set(RENAMED) - DROPPED
)


@dataclass
class Instruction:
    """One decoded instruction: its normalized name, decoded argument and the user's position.

    `argval` is what the argument means (a name, a constant, an operator function, a count);
    `target` is the index of a jump's destination; `exc_kind` is "try" inside a try/with block
    whose handler would run user code, "cleanup" inside compiler-made cleanup, else None.
    """

    index: int
    opname: str
    argval: Any = None
    target: int | None = None
    lineno: int | None = None
    col: int | None = None
    end_col: int | None = None
    push_null: bool = False
    kw_names: tuple[str, ...] = ()
    inplace: bool = False
    exc_kind: str | None = None
    raw: Any = field(default=None, repr=False)

    def __repr__(self) -> str:
        arg = "" if self.argval is None else f" {self.argval!r}"
        tgt = "" if self.target is None else f" ->{self.target}"
        return f"<{self.index} {self.opname}{arg}{tgt} line {self.lineno}>"


def _decode_arg(opname: str, arg: Any) -> tuple[str, Any, bool, bool]:
    """(opname, argval, push_null, inplace) for one `bytecode.Instr`."""
    if opname == "LOAD_GLOBAL" and isinstance(arg, tuple):
        return opname, arg[1], bool(arg[0]), False
    if opname == "LOAD_ATTR" and isinstance(arg, tuple):
        return ("LOAD_METHOD" if arg[0] else "LOAD_ATTR"), arg[1], False, False
    if opname == "LOAD_SUPER_ATTR":  # 3.12 `super().name`: (method form, two-argument form, name)
        return opname, arg[2], bool(arg[0]), False
    if opname == "BINARY_OP":
        fn, inplace = BINARY_OPS[arg]
        return opname, fn, False, inplace
    if opname == "COMPARE_OP":
        return opname, COMPARE_OPS[arg], False, False
    if isinstance(arg, (bytecode.CellVar, bytecode.FreeVar)):
        return opname, arg.name, False, False
    if opname == "CALL_INTRINSIC_1":
        name = INTRINSICS.get(arg.name)
        return (name or f"CALL_INTRINSIC_1 {arg.name}"), None, False, False
    if arg is bytecode.UNSET:
        arg = None
    return RENAMED.get(opname, opname), arg, False, False


def decode(code: types.CodeType) -> list[Instruction]:
    """The instructions of `code`, normalized as the module docstring says."""
    out: list[Instruction] = []
    label_at: dict[Label, int] = {}
    jumps: list[tuple[Instruction, Label]] = []
    handler_of: dict[int, Label] = {}
    pending_kw: tuple[str, ...] = ()
    current_try: Label | None = None
    in_prologue = True
    for item in bytecode.Bytecode.from_code(code):
        if isinstance(item, Label):
            label_at[item] = len(out)
            continue
        if isinstance(item, (TryBegin, TryEnd)):
            current_try = item.target if isinstance(item, TryBegin) else None
            continue
        if not isinstance(item, Instr) or item.name in DROPPED or (in_prologue and item.name in PROLOGUE_ONLY):
            in_prologue = in_prologue and getattr(item, "name", None) != "RESUME"
            continue
        if item.name == "KW_NAMES":
            pending_kw = tuple(item.arg)
            continue
        loc = item.location
        for opname, arg in _expand(item.name, item.arg):
            name, argval, push_null, inplace = _decode_arg(opname, arg)
            inst = Instruction(
                index=len(out), opname=name, argval=argval, lineno=item.lineno,
                col=getattr(loc, "col_offset", None), end_col=getattr(loc, "end_col_offset", None),
                push_null=push_null, inplace=inplace, raw=item,
            )
            if name == "CALL":
                inst.kw_names, pending_kw = pending_kw, ()
            if isinstance(argval, Label):
                inst.argval = None
                jumps.append((inst, argval))
            if current_try is not None:
                handler_of[inst.index] = current_try
            out.append(inst)
    for inst, label in jumps:
        inst.target = label_at[label]
        if inst.opname == "FOR_ITER" and inst.target < len(out) and out[inst.target].opname == "END_FOR":
            inst.target += 1  # 3.12: an exhausted FOR_ITER pops the iterator and skips END_FOR
    for index, label in handler_of.items():
        first = out[label_at[label]] if label_at[label] < len(out) else None
        out[index].exc_kind = "try" if first is not None and first.opname == "PUSH_EXC_INFO" else "cleanup"
    return out


def _expand(opname: str, arg: Any) -> list[tuple[str, Any]]:
    """3.12 instructions that stand for two 3.11 ones."""
    if opname == "BINARY_SLICE":
        return [("BUILD_SLICE", 2), ("BINARY_SUBSCR", bytecode.UNSET)]
    if opname == "STORE_SLICE":
        return [("BUILD_SLICE", 2), ("STORE_SUBSCR", bytecode.UNSET)]
    return [(opname, arg)]
