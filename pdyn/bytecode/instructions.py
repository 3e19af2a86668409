"""Decoding a code object into pdyn's `Instruction` list, with the `bytecode` library.

Every difference between CPython 3.11 and 3.12 bytecode is settled here, so handlers see one
instruction set: PRECALL is dropped, KW_NAMES is folded into the CALL after it, method loads
become LOAD_METHOD, conditional jumps lose their FORWARD/BACKWARD spelling, 3.12's FOR_ITER
jumps past its END_FOR, 3.12's BINARY_SLICE/STORE_SLICE/CALL_INTRINSIC_1 become the 3.11
instructions that do the same, and MAKE_CELL is kept only where 3.12 emits it outside the prologue
(an inlined comprehension's cell variable). 3.12's LOAD_SUPER_ATTR keeps its name: its argval is
the attribute and `push_null` marks the method form. Jump targets are indices into the decoded list.
Flag bits are decoded too: MAKE_FUNCTION, FORMAT_VALUE, UNPACK_EX and CALL_FUNCTION_EX carry a
record (`FunctionParts`, `FormatArgs`, `UnpackCounts`, `CallExArgs`) as their argval.
"""

from __future__ import annotations

import dis
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

COMPARE_OPS: dict[Compare, Callable[[Any, Any], Any]] = {
    Compare.LT: operator.lt, Compare.LE: operator.le, Compare.EQ: operator.eq,
    Compare.NE: operator.ne, Compare.GT: operator.gt, Compare.GE: operator.ge,
}

@dataclass(frozen=True)
class FunctionParts:
    """MAKE_FUNCTION's flags: which optional parts sit under the code object on the stack (popped
    in this order: closure, annotations, keyword defaults, defaults)."""

    closure: bool
    annotations: bool
    kwdefaults: bool
    defaults: bool


@dataclass(frozen=True)
class FormatArgs:
    """FORMAT_VALUE's flags: the conversion applied before formatting (`str` for !s, `repr` for !r,
    `ascii` for !a, else None) and whether a format spec sits above the value on the stack."""

    conversion: Callable[[Any], str] | None
    has_spec: bool


@dataclass(frozen=True)
class UnpackCounts:
    """UNPACK_EX's counts: targets before and after the starred one."""

    before: int
    after: int


@dataclass(frozen=True)
class CallExArgs:
    """CALL_FUNCTION_EX's flag: whether a mapping of keyword arguments sits above the arguments."""

    has_kwargs: bool


FORMAT_CONVERSIONS: dict[int, Callable[[Any], str] | None] = {0: None, 1: str, 2: repr, 3: ascii}

# Decoders of an opcode's integer argument into the record its handler reads.
FLAG_DECODERS: dict[str, Callable[[int], Any]] = {
    "MAKE_FUNCTION": lambda arg: FunctionParts(closure=bool(arg & 0x08), annotations=bool(arg & 0x04),
                                               kwdefaults=bool(arg & 0x02), defaults=bool(arg & 0x01)),
    "FORMAT_VALUE": lambda arg: FormatArgs(conversion=FORMAT_CONVERSIONS[arg & 0x03], has_spec=bool(arg & 0x04)),
    "UNPACK_EX": lambda arg: UnpackCounts(before=arg & 0xFF, after=arg >> 8),
    "CALL_FUNCTION_EX": lambda arg: CallExArgs(has_kwargs=bool(arg & 1)),
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
INTRINSICS = {"INTRINSIC_UNARY_POSITIVE": "UNARY_POSITIVE", "INTRINSIC_LIST_TO_TUPLE": "LIST_TO_TUPLE",
              "INTRINSIC_STOPITERATION_ERROR": "STOPITERATION_ERROR"}  # 3.12 generators' outer handler

# The instruction set handlers see (the union of both versions, after the renames above).
OPNAMES = frozenset(
    (set(dis.opmap) | set(RENAMED.values()) | set(INTRINSICS.values())
     | {"LOAD_METHOD", "JUMP", "LIST_TO_TUPLE", "UNARY_POSITIVE", "JUMP_IF_FALSE_OR_POP",
        "JUMP_IF_TRUE_OR_POP", "RETURN_CONST", "END_FOR", "LOAD_FAST_AND_CLEAR", "LOAD_SUPER_ATTR"})
    - set(RENAMED) - DROPPED
)


@dataclass
class Instruction:
    """One decoded instruction: its normalized name, decoded argument and the user's position.

    `argval` is what the argument means (a name, a constant, an operator function, a count);
    `target` is the index of a jump's destination; `exc_kind` is "try" inside a try/with block
    whose handler would run user code, "cleanup" inside compiler-made cleanup, else None. Where an
    exception table entry covers it, `handler` is the index its exceptions jump to, `handler_depth`
    the stack depth kept there, and `handler_lasti` whether the instruction's index is pushed too.
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
    raw_pos: int = -1               # position of `raw` in `bytecode.Bytecode.from_code(code)`
    expanded: bool = False          # one of two instructions decoded from one 3.12 instruction
    handler: int | None = None      # index of the exception handler covering it, if any
    handler_depth: int = 0
    handler_lasti: bool = False

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
    if opname in FLAG_DECODERS:
        return opname, FLAG_DECODERS[opname](arg or 0), False, False
    return RENAMED.get(opname, opname), arg, False, False


def decode(code: types.CodeType) -> list[Instruction]:
    """The instructions of `code`, normalized as the module docstring says."""
    out: list[Instruction] = []
    label_at: dict[Label, int] = {}
    jumps: list[tuple[Instruction, Label]] = []
    handler_of: dict[int, TryBegin] = {}
    pending_kw: tuple[str, ...] = ()
    current_try: TryBegin | None = None
    in_prologue = True
    offsets, depths = _exception_table(code)
    label_offset: dict[Label, int] = {}
    unplaced: list[Label] = []
    instrs = 0
    for pos, item in enumerate(bytecode.Bytecode.from_code(code)):
        if isinstance(item, Label):
            label_at[item] = len(out)
            unplaced.append(item)
            continue
        if isinstance(item, Instr) and offsets:
            for label in unplaced:
                label_offset[label] = offsets[instrs]
            unplaced.clear()
            instrs += 1
        if isinstance(item, (TryBegin, TryEnd)):
            current_try = item if isinstance(item, TryBegin) else None
            continue
        if not isinstance(item, Instr) or item.name in DROPPED or (in_prologue and item.name in PROLOGUE_ONLY):
            in_prologue = in_prologue and getattr(item, "name", None) != "RESUME"
            continue
        if item.name == "KW_NAMES":
            pending_kw = tuple(item.arg)
            continue
        loc = item.location
        parts = _expand(item.name, item.arg)
        for opname, arg in parts:
            name, argval, push_null, inplace = _decode_arg(opname, arg)
            inst = Instruction(
                index=len(out), opname=name, argval=argval, lineno=item.lineno,
                col=getattr(loc, "col_offset", None), end_col=getattr(loc, "end_col_offset", None),
                push_null=push_null, inplace=inplace, raw=item, raw_pos=pos, expanded=len(parts) > 1,
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
    for index, entry in handler_of.items():
        at = label_at[entry.target]
        first = out[at] if at < len(out) else None
        out[index].exc_kind = "try" if first is not None and first.opname == "PUSH_EXC_INFO" else "cleanup"
        out[index].handler = at
        out[index].handler_depth = depths[label_offset[entry.target]]
        out[index].handler_lasti = bool(entry.push_lasti)
    return out


def set_try_depths(items: list[Any], code: types.CodeType) -> None:
    """Give each `TryBegin` of `items` (`bytecode.Bytecode.from_code(code)`, maybe edited) the stack
    depth `code`'s exception table keeps at its handler. `bytecode` would compute them by flow, and a
    resume function enters a try block by a jump it does not follow (and would write 32768)."""
    offsets, depths = _exception_table(code)
    label_offset: dict[Label, int] = {}
    unplaced: list[Label] = []
    instrs = 0
    for item in items:
        if isinstance(item, Label):
            unplaced.append(item)
        elif isinstance(item, Instr) and instrs < len(offsets):
            for label in unplaced:
                label_offset[label] = offsets[instrs]
            unplaced.clear()
            instrs += 1
    for item in items:
        if isinstance(item, TryBegin) and item.stack_depth is bytecode.UNSET:
            item.stack_depth = depths[label_offset[item.target]]


def try_block_at(items: list[Any], pos: int) -> TryBegin | None:
    """The exception table entry (innermost: entries do not nest) covering the instruction at `pos`."""
    current = None
    for item in items[:pos]:
        if isinstance(item, TryBegin):
            current = item
        elif isinstance(item, TryEnd):
            current = None
    return current


def _exception_table(code: types.CodeType) -> tuple[list[int], dict[int, int]]:
    """The byte offset of each instruction (as `bytecode` lists them) and the stack depth each
    exception handler (by offset) keeps; `bytecode` leaves handler depths unset when decoding.
    NOTE: `dis._parse_exception_table` is private in 3.11 and 3.12; the table's format is not."""
    if not code.co_exceptiontable:
        return [], {}
    offsets = [i.offset for i in dis.get_instructions(code) if i.opname != "EXTENDED_ARG"]
    return offsets, {entry.target: entry.depth for entry in dis._parse_exception_table(code)}  # type: ignore[attr-defined]


def _expand(opname: str, arg: Any) -> list[tuple[str, Any]]:
    """3.12 instructions that stand for two 3.11 ones."""
    if opname == "BINARY_SLICE":
        return [("BUILD_SLICE", 2), ("BINARY_SUBSCR", bytecode.UNSET)]
    if opname == "STORE_SLICE":
        return [("BUILD_SLICE", 2), ("STORE_SUBSCR", bytecode.UNSET)]
    return [(opname, arg)]


# -- encoding: the instructions pdyn writes into resume and step functions -------------------------

# (values taken from the stack, values left on it after falling through, after jumping) of each
# instruction a step function can run on its own at a graph break; `arg` is the decoded argval.
BREAK_EFFECTS: dict[str, Callable[[Any], tuple[int, int, int]]] = {
    "CALL": lambda arg: (arg + 2, 1, 1),
    "CALL_FUNCTION_EX": lambda arg: (3 + arg.has_kwargs, 1, 1),
    "POP_JUMP_IF_FALSE": lambda arg: (1, 0, 0), "POP_JUMP_IF_TRUE": lambda arg: (1, 0, 0),
    "POP_JUMP_IF_NONE": lambda arg: (1, 0, 0), "POP_JUMP_IF_NOT_NONE": lambda arg: (1, 0, 0),
    **{name: (lambda arg: (2, 1, 1)) for name in ("BINARY_OP", "COMPARE_OP", "BINARY_SUBSCR", "CONTAINS_OP",
                                                  "IS_OP", "IMPORT_NAME")},
    **{name: (lambda arg: (1, 1, 1)) for name in ("UNARY_NEGATIVE", "UNARY_NOT", "UNARY_INVERT", "GET_ITER",
                                                  "LOAD_ATTR")},
    "STORE_SUBSCR": lambda arg: (3, 0, 0), "STORE_ATTR": lambda arg: (2, 0, 0),
    "DELETE_SUBSCR": lambda arg: (2, 0, 0), "BUILD_STRING": lambda arg: (arg, 1, 1),
    "UNPACK_SEQUENCE": lambda arg: (1, arg, arg),
    "BEFORE_WITH": lambda arg: (1, 2, 2),   # the manager -> its bound __exit__, what __enter__ returned
}
_FORWARD_JUMPS = {name: f"POP_JUMP_FORWARD_{name.removeprefix('POP_JUMP_')}"
                  for name in ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE")}
FRAME_PROLOGUE = {"RESUME", "MAKE_CELL", "COPY_FREE_VARS"}


def _opcode_exists(name: str) -> bool:
    return name in __import__("dis").opmap


def encode_call(argc: int, kw_names: tuple[str, ...], location: Any = None) -> list[Instr]:
    """A call of the callable under `argc` arguments (NULL below it): 3.11 needs PRECALL first."""
    out = [Instr("KW_NAMES", kw_names, location=location)] if kw_names else []
    if _opcode_exists("PRECALL"):
        out.append(Instr("PRECALL", argc, location=location))
    return out + [Instr("CALL", argc, location=location)]


def encode_break(inst: Instruction, jump_to: Label) -> list[Instr] | None:
    """`inst` as instructions that run it on its own (a jump goes to `jump_to`); None where it
    cannot run outside its frame."""
    raw = inst.raw
    if inst.opname not in BREAK_EFFECTS or inst.expanded or not isinstance(raw, Instr):
        return None
    if inst.opname == "CALL":
        return encode_call(inst.argval, inst.kw_names, raw.location)
    if inst.opname in _FORWARD_JUMPS:
        forward = _FORWARD_JUMPS[inst.opname]
        return [Instr(forward if _opcode_exists(forward) else inst.opname, jump_to, location=raw.location)]
    if inst.opname == "LOAD_ATTR" and isinstance(raw.arg, tuple) and raw.arg[0]:
        return None  # 3.12's method form leaves two values
    return [Instr(raw.name, raw.arg, location=raw.location)] if raw.require_arg() else \
        [Instr(raw.name, location=raw.location)]


def encode_jump(label: Label, lineno: int) -> Instr:
    """An unconditional jump forward to `label` (a resume function's prologue)."""
    return Instr("JUMP_FORWARD", label, lineno=lineno)


def encode_raise(lineno: int) -> Instr:
    """Raise the exception on top of the stack (a resume function handing it to the user's handler)."""
    return Instr("RAISE_VARARGS", 1, lineno=lineno)


def encode_load_fast(name: str, lineno: int) -> Instr:
    return Instr("LOAD_FAST", name, lineno=lineno)


def free_var_loads(item: Any) -> str | None:
    """The name a LOAD_DEREF of a free variable reads, else None."""
    if isinstance(item, Instr) and item.name in ("LOAD_DEREF", "LOAD_CLASSDEREF") \
            and isinstance(item.arg, bytecode.FreeVar):
        return item.arg.name  # type: ignore[no-any-return]
    return None


def free_var_writes(item: Any) -> bool:
    """Stores, deletes or closures of a free variable: a resume function cannot take it as a value."""
    return isinstance(item, Instr) and item.name in ("STORE_DEREF", "DELETE_DEREF", "LOAD_CLOSURE") \
        and isinstance(item.arg, bytecode.FreeVar)
