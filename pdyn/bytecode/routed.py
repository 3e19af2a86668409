"""A function's code with its calls routed: at each call site whose callable can be found, the
callable goes through a router (`router(callable)` returns what the call calls instead) before the
call. A frame that runs without a graph (a graph break inside a loop) runs this code, so the calls
it makes still reach pdyn. Which router a site gets, and what a router does, is the caller's.

The callable of a call is found by walking back from the call over the instructions that push its
arguments, within straight-line code (no jump or jump target between them); where the walk meets an
instruction whose stack effect it does not know, the site is left as it is.
"""

from __future__ import annotations

import types
from typing import Any, Callable

import bytecode
from bytecode import Instr, Label

from pdyn.bytecode.instructions import encode_call, set_try_depths

# instructions that push two values (the walk's other tables: none, or refused)
_PUSHES_TWO = frozenset({"LOAD_METHOD", "BEFORE_WITH"})
_NO_PUSH = frozenset({"STORE_FAST", "STORE_NAME", "STORE_GLOBAL", "STORE_DEREF", "STORE_ATTR", "STORE_SUBSCR",
                      "DELETE_FAST", "DELETE_NAME", "DELETE_GLOBAL", "DELETE_DEREF", "DELETE_ATTR",
                      "DELETE_SUBSCR", "POP_TOP", "NOP", "KW_NAMES", "PRECALL", "CACHE", "LIST_APPEND",
                      "LIST_EXTEND", "SET_ADD", "SET_UPDATE", "MAP_ADD", "DICT_UPDATE", "DICT_MERGE"})
_REFUSED = frozenset({"SWAP", "PUSH_EXC_INFO", "POP_EXCEPT", "RERAISE", "RETURN_VALUE", "RETURN_CONST",
                      "RAISE_VARARGS", "YIELD_VALUE", "SEND", "UNPACK_SEQUENCE", "UNPACK_EX", "END_FOR",
                      "CHECK_EXC_MATCH", "CHECK_EG_MATCH", "WITH_EXCEPT_START", "SETUP_ANNOTATIONS",
                      "FOR_ITER", "GET_ANEXT", "END_ASYNC_FOR", "CLEANUP_THROW", "BINARY_SLICE",
                      "STORE_SLICE", "LOAD_SUPER_ATTR"})


def _method_form(item: Instr) -> bool:
    """A load that pushes two values: NULL or an unbound method, then the callable or self."""
    if item.name in _PUSHES_TWO:
        return True
    return item.name in ("LOAD_GLOBAL", "LOAD_ATTR") and isinstance(item.arg, tuple) and bool(item.arg[0])


def _effect(item: Instr) -> tuple[int, int] | None:
    """(values popped, values pushed) of `item`, or None where the walk cannot pass it."""
    if item.name in _REFUSED or item.has_jump() or item.name.startswith("CALL_INTRINSIC"):
        return None
    if item.name == "CALL":
        return item.arg + 2, 1
    pushes = 2 if _method_form(item) else 0 if item.name in _NO_PUSH else 1
    net = 0 if item.name in ("KW_NAMES", "PRECALL") else item.stack_effect(jump=False)
    return pushes - net, pushes


def _callable_slots(inst: Instr) -> tuple[int, int] | None:
    """How deep under the top, at `inst`, the NULL (or method) and the callable (or self) lie."""
    if inst.name == "CALL":
        return inst.arg + 1, inst.arg
    if inst.name == "CALL_FUNCTION_EX":
        depth = 1 + (inst.arg & 1)
        return depth + 1, depth
    return None


def _producers(items: list[Any], at: int) -> tuple[int, int] | None:
    """The positions in `items` of the instructions that pushed the call at `at`'s NULL slot and its
    callable (one position twice where one instruction pushed both), or None if not found or the
    callable is not the last value its instruction pushed."""
    slots = _callable_slots(items[at])
    if slots is None:
        return None
    under, callable_ = slots
    found: dict[str, int] = {}
    for pos in range(at - 1, -1, -1):
        item = items[pos]
        if isinstance(item, Label):
            return None   # control flow joins here: more than one instruction may have pushed it
        if not isinstance(item, Instr):
            continue
        effect = _effect(item)
        if effect is None:
            return None
        pops, pushes = effect
        if "callable" not in found and callable_ < pushes:
            if callable_ != 0:
                return None
            found["callable"] = pos
        if under < pushes:
            return pos, found["callable"]
        callable_, under = callable_ - pushes + pops, under - pushes + pops
    return None


def _route(router: Any, location: Any) -> list[Instr]:
    """[.., value] -> [.., router(value)]."""
    return [Instr("PUSH_NULL", location=location), Instr("SWAP", 2, location=location),
            Instr("LOAD_CONST", router, location=location), Instr("SWAP", 2, location=location),
            *encode_call(1, (), location)]


def _rewrite(items: list[Any], at: int, router: Any) -> bool:
    """Route the call at `items[at]` through `router`, editing `items` (at or before `at` only)."""
    found = _producers(items, at)
    if found is None:
        return False
    under, callable_ = found
    item = items[callable_]
    if under == callable_ and item.name in ("LOAD_METHOD", "LOAD_ATTR"):
        # obj.name(...): load the attribute itself (what calling it would call), route it, NULL below
        name = item.arg[1] if isinstance(item.arg, tuple) else item.arg
        plain = (False, name) if isinstance(item.arg, tuple) else name
        items[callable_:callable_ + 1] = [Instr("LOAD_ATTR", plain, location=item.location),
                                          *_route(router, item.location), Instr("PUSH_NULL", location=item.location),
                                          Instr("SWAP", 2, location=item.location)]
        return True
    under_item = items[under]
    if under == callable_ and item.name == "LOAD_GLOBAL" or under != callable_ and under_item.name == "PUSH_NULL":
        items[callable_ + 1:callable_ + 1] = _route(router, item.location)
        return True
    return False


def routed_code(code: types.CodeType, router_at: Callable[[int], Any]) -> tuple[types.CodeType, int]:
    """`code` with each call site routed through `router_at(pos)` (`pos`: the call instruction's
    position in `bytecode.Bytecode.from_code(code)`, an `Instruction.raw_pos`; a router of None
    leaves the site as it is), and how many sites were routed."""
    original = bytecode.Bytecode.from_code(code)
    items = list(original)
    set_try_depths(items, code)
    calls = [(item, pos) for pos, item in enumerate(items)
             if isinstance(item, Instr) and item.name in ("CALL", "CALL_FUNCTION_EX")]
    routed = 0
    # last first: a call's arguments (calls among them) lie before it, and are walked unedited
    for call, pos in reversed(calls):
        router = router_at(pos)
        at = next(i for i, item in enumerate(items) if item is call)
        if router is not None and _rewrite(items, at, router):
            routed += 1
    out = bytecode.Bytecode(items)
    out._copy_attr_from(original)
    return out.to_code(stacksize=code.co_stacksize + 3, compute_exception_stack_depths=False), routed
