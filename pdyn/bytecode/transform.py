"""Code objects for graph breaks, built with the `bytecode` library's abstract instructions.

A resume function is the user's code with a prologue that pushes the stack it receives as arguments
and jumps to the instruction after the break (or to a jump's target), so tracebacks and line numbers
stay the user's. A step function runs the one instruction pdyn could not trace and returns what it
left on the stack and which way it went. How an instruction is spelled on 3.11 or 3.12 is
`pdyn.bytecode.instructions`' business; the frame code that calls both is `pdyn.trace.frame_codegen`'s.

Inside a `try` or `with` block the resume function keeps the user's exception table, so it resumes
inside the block (a `with` block's `__exit__` is a stack value it receives): what it raises reaches
the user's handlers, `finally` and `__exit__` as in the user's frame. What the step function itself
raises it returns, and a RAISED resume function raises it again inside the same block. Inside an
`except` body (or `finally`'s exception path) the prologue re-enters each handler as CPython entered
it, by raising the handled exception it receives under a table entry that runs PUSH_EXC_INFO, so the
resume function is right both traced by pdyn and run as it is.
"""

from __future__ import annotations

import functools
import inspect
import logging
import types
from dataclasses import dataclass

import bytecode
from bytecode import Instr, Label, TryBegin, TryEnd

from pdyn.bytecode.instructions import (BREAK_EFFECTS, FRAME_PROLOGUE, Instruction, encode_break, encode_jump,
                                       encode_load_fast, encode_raise, set_try_depths, try_block_at)
from pdyn.bytecode.instructions import decode as _decode

log = logging.getLogger(__name__)
decode = functools.lru_cache(maxsize=None)(_decode)

STACK_NAME = "pdyn_stack"
NOT_FRAMES = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE
# Which way a step function went: the next instruction, a conditional jump's target, or (inside a
# try or with block) it raised, and the exception goes to the block's handler.
NEXT, JUMPED, RAISED = 0, 1, 2


@dataclass(frozen=True)
class ResumePoint:
    """Where a resume function starts in the user's `code` and what it receives.

    `stack` is the kind of each stack slot: "value" (an argument), "null" (the NULL under a
    callable, pushed by the prologue), "iter" (a list argument the prologue turns back into an
    iterator) or "exc" (the slot of a handler the break is in: its argument is the exception that
    handler handles, which the prologue raises and catches to re-enter the handler, see
    `_reenter_handler`); `names` are the live locals passed after the stack values (after `first`).
    For RAISED, `stack` is the slots the handler keeps, then the exception, which the resume
    function raises inside the break's try block, so CPython's own unwinding reaches the handler.
    Its cells (the code's cell and free variables) come as its closure, passed by each call.
    """

    code: types.CodeType
    index: int            # the break instruction, in `decode(code)`
    branch: int           # NEXT or JUMPED
    stack: tuple[str, ...]
    names: tuple[str, ...]
    first: str | None = None   # the method's first argument, passed first (zero-argument super() reads it)

    def arg_names(self) -> list[str]:
        slots = [f"{STACK_NAME}{i}" for i, kind in enumerate(self.stack) if kind != "null"]
        return ([self.first] if self.first else []) + slots + [n for n in self.names if n != self.first]


def cell_names(code: types.CodeType) -> tuple[str, ...]:
    """Every cell of `code`'s frame (its own cell variables, then its free variables): a resume
    function has them all as free variables, in this order, so it shares the frame's cells."""
    return code.co_cellvars + code.co_freevars


RESUME_CODES: dict[ResumePoint, types.CodeType] = {}
# a resume function's code -> the decoded indices of its prologue's raises: each raises again an
# exception already raised for real (by the frame code or the step function), to reach its handler
REDELIVERIES: dict[types.CodeType, frozenset[int]] = {}
# a resume function's code -> (the user's code, how many decoded instructions its prologue adds)
ORIGINS: dict[types.CodeType, tuple[types.CodeType, int]] = {}


def original_of(code: types.CodeType, index: int) -> tuple[types.CodeType, int]:
    """The user's code and instruction that instruction `index` of `code` is (a copy of)."""
    if code in ORIGINS:
        original, offset = ORIGINS[code]
        return original, index - offset
    return code, index


def is_redelivery(code: types.CodeType, index: int) -> bool:
    """Whether instruction `index` of `code` is a resume prologue's raise of an exception it received."""
    return index in REDELIVERIES.get(code, ())


def why_not_resumable(code: types.CodeType, inst: Instruction) -> str | None:
    """Why no step and resume function can be built for a break at `inst`, or None if they can."""
    if code.co_flags & NOT_FRAMES:
        return "the break is in a generator or coroutine, whose frame pdyn cannot resume"
    if encode_break(inst, Label()) is None:
        return f"`{inst.opname}` cannot run on its own outside the frame"
    return None


def break_effect(inst: Instruction) -> tuple[int, int, int]:
    """(values the break instruction takes, leaves when it falls through, leaves when it jumps)."""
    return BREAK_EFFECTS[inst.opname](inst.argval)


def is_jump(inst: Instruction) -> bool:
    return inst.opname.startswith("POP_JUMP_IF_")


# -- liveness ------------------------------------------------------------------------------------

EXITS = frozenset({"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE"})
BRANCHES = frozenset({"POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE",
                      "JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP", "FOR_ITER", "SEND"})


def _successors(insts: list[Instruction], inst: Instruction) -> list[int]:
    out = [] if inst.handler is None else [inst.handler]
    if inst.opname == "JUMP":
        return out + [inst.target]  # type: ignore[list-item]
    if inst.opname in EXITS:
        return out
    if inst.opname in BRANCHES and inst.target is not None:
        out.append(inst.target)
    return out + ([inst.index + 1] if inst.index + 1 < len(insts) else [])


def live_locals(code: types.CodeType, start: int) -> frozenset[str]:
    """The locals some path from instruction `start` of `code` may read before writing them."""
    insts = decode(code)
    live: list[frozenset[str]] = [frozenset()] * (len(insts) + 1)
    changed = True
    while changed:
        changed = False
        for inst in reversed(insts):
            out = frozenset().union(*(live[s] for s in _successors(insts, inst)))
            if inst.opname == "STORE_FAST":
                out = out - {inst.argval}
            elif inst.opname in ("LOAD_FAST", "LOAD_FAST_AND_CLEAR", "DELETE_FAST"):
                out = out | {inst.argval}
            if out != live[inst.index]:
                live[inst.index] = out
                changed = True
    return live[start] if start < len(insts) else frozenset()


def resume_index(code: types.CodeType, index: int, branch: int) -> int:
    """The decoded index a resume function for `branch` of the break at `index` starts at."""
    inst = decode(code)[index]
    if branch == RAISED:
        return inst.handler  # type: ignore[return-value]
    return inst.target if branch == JUMPED else index + 1  # type: ignore[return-value]


# -- resume functions ----------------------------------------------------------------------------

def resume_code(point: ResumePoint) -> types.CodeType:
    """The resume function's code for `point`, built once per point."""
    if point not in RESUME_CODES:
        RESUME_CODES[point] = _build_resume(point)
    return RESUME_CODES[point]


def _build_resume(point: ResumePoint) -> types.CodeType:
    code = point.code
    original = bytecode.Bytecode.from_code(code)
    items = list(original)
    set_try_depths(items, code)
    inst = decode(code)[point.index]
    insts = decode(code)
    after = resume_index(code, point.index, point.branch)
    lineno = (insts[after].lineno if after < len(insts) else None) or inst.lineno or code.co_firstlineno
    start = Label()
    if point.branch == JUMPED:
        start = items[inst.raw_pos].arg  # type: ignore[union-attr]
    elif point.branch == RAISED:
        items += _raise_in_block(items, inst, start)
    else:
        items.insert(inst.raw_pos + 1, start)
    cells = cell_names(code)
    copy = [Instr("COPY_FREE_VARS", len(cells), lineno=lineno)] if cells else []
    prologue = [*copy, Instr("RESUME", 0, lineno=lineno), *_push_stack(point.stack, lineno), encode_jump(start, lineno)]
    body = _strip_prologue(items)
    out = bytecode.Bytecode(prologue + body)
    out._copy_attr_from(original)
    args = point.arg_names()
    out.argnames = args
    out.argcount, out.posonlyargcount, out.kwonlyargcount = len(args), 0, 0
    out.flags = original.flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS | inspect.CO_NESTED)
    out.freevars, out.cellvars = list(cells), []
    line = inst.lineno or code.co_firstlineno
    out.name = f"pdyn_resume_in_{code.co_name}_at_{line}"
    out.qualname = f"{code.co_qualname}.<pdyn resume at line {line}>"
    # the try blocks' depths are the user's (set above); the prologue pushes no more than the
    # user's stack held at the break, so the user's stack size holds
    result = out.to_code(stacksize=code.co_stacksize + 1, compute_exception_stack_depths=False)
    offset = sum(1 for i in prologue if isinstance(i, Instr) and i.name not in ("RESUME", "COPY_FREE_VARS"))
    _record_origin(result, code, offset)
    insts = decode(result)
    raises = {i.index for i in insts[:offset] if i.opname == "RAISE_VARARGS"}
    REDELIVERIES[result] = frozenset(raises | ({len(insts) - 1} if point.branch == RAISED else set()))
    log.debug("resume function %s: stack %s, names %s", out.name, point.stack, args)
    return result


def _raise_in_block(items: list[object], inst: Instruction, start: Label) -> list[object]:
    """`start:` raise the exception on the stack, inside the try block covering the break."""
    block = try_block_at(items, inst.raw_pos)
    if block is None:
        raise ValueError(f"no try block covers {inst}")
    entry = TryBegin(block.target, block.push_lasti, block.stack_depth)
    lineno = inst.lineno or 1
    return [start, entry, encode_raise(lineno), TryEnd(entry)]


def _push_stack(kinds: tuple[str, ...], lineno: int) -> list[object]:
    out: list[object] = []
    for i, kind in enumerate(kinds):
        if kind == "null":
            out.append(Instr("PUSH_NULL", lineno=lineno))
        elif kind == "exc":
            out += _reenter_handler(f"{STACK_NAME}{i}", i, lineno)
        else:
            out.append(encode_load_fast(f"{STACK_NAME}{i}", lineno))
            if kind == "iter":
                out.append(Instr("GET_ITER", lineno=lineno))
    return out


def _reenter_handler(name: str, depth: int, lineno: int) -> list[object]:
    """Enter a handler of the user's as CPython does: raise its exception (the argument `name`) under
    an exception table entry whose handler runs PUSH_EXC_INFO, so the slot holds the thread's real
    previous exception, and drops the exception (the user's handler body has consumed it already).
    The handler body's own table entries (the cleanup that runs POP_EXCEPT) apply after the jump."""
    handler = Label()
    entry = TryBegin(handler, False, depth)
    return [entry, encode_load_fast(name, lineno), encode_raise(lineno), TryEnd(entry), handler,
            Instr("PUSH_EXC_INFO", lineno=lineno), Instr("POP_TOP", lineno=lineno)]


def _strip_prologue(items: list[object]) -> list[object]:
    """The code after the frame prologue, with every cell a free variable (the resume function
    receives the frame's cells as its closure)."""
    body: list[object] = []
    in_prologue = True
    for item in items:
        if in_prologue and isinstance(item, Instr) and item.name in FRAME_PROLOGUE:
            in_prologue = item.name != "RESUME"
            continue
        if isinstance(item, Instr) and isinstance(item.arg, bytecode.CellVar):
            item = Instr(item.name, bytecode.FreeVar(item.arg.name), location=item.location)
        body.append(item)
    return body


def _record_origin(result: types.CodeType, code: types.CodeType, offset: int) -> None:
    """Remember which user code `result` copies, if its instructions line up with it one to one."""
    base, base_offset = ORIGINS.get(code, (code, 0))
    mine = [i.opname for i in decode(result)][offset:]
    theirs = [i.opname for i in decode(code)]
    if mine == theirs:
        ORIGINS[result] = (base, offset + base_offset)
    else:
        log.debug("resume function of %s does not line up with it; not deduplicated", code.co_name)


# -- step functions ------------------------------------------------------------------------------

def step_code(code: types.CodeType, inst: Instruction, kinds: tuple[str, ...]) -> types.CodeType:
    """A function of the stack values `inst` takes (NULLs pushed, iterators rebuilt) that runs
    `inst` and returns `(*values it left, NEXT or JUMPED)`; inside a try or with block, what it
    raises it returns as `(exception, RAISED)` (the RAISED resume function hands it to the handler)."""
    _, after_next, after_jump = break_effect(inst)
    jumped, raised = Label(), Label()
    lineno = inst.lineno or code.co_firstlineno
    guarded = inst.handler is not None
    entry = TryBegin(raised, False, 0)
    body = [Instr("RESUME", 0, lineno=lineno), *([entry] if guarded else []), *_push_stack(kinds, lineno),
            *(encode_break(inst, jumped) or ()), *([TryEnd(entry)] if guarded else [])]
    body += _return_branch(NEXT, after_next, lineno)
    if is_jump(inst):
        body += [jumped, *_return_branch(JUMPED, after_jump, lineno)]
    if guarded:
        body += [raised, *_return_branch(RAISED, 1, lineno)]
    out = bytecode.Bytecode(body)
    args = [f"{STACK_NAME}{i}" for i, kind in enumerate(kinds) if kind != "null"]
    out.argnames, out.argcount = args, len(args)
    out.flags = inspect.CO_OPTIMIZED | inspect.CO_NEWLOCALS
    out.name, out.qualname = code.co_name, code.co_qualname
    out.filename, out.first_lineno = code.co_filename, code.co_firstlineno
    return out.to_code(compute_exception_stack_depths=False)


def _return_branch(branch: int, values: int, lineno: int) -> list[Instr]:
    """Return the `values` on top of the stack and which branch was taken, as one tuple."""
    return [Instr("LOAD_CONST", branch, lineno=lineno), Instr("BUILD_TUPLE", values + 1, lineno=lineno),
            Instr("RETURN_VALUE", lineno=lineno)]
