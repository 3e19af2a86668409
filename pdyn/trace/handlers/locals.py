"""Opcodes that read and write names: fast locals, cells, globals, constants and attributes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.handlers.registry import handler
from pdyn.bytecode.instructions import Instruction
from pdyn.trace.variables.base import NULL
from pdyn.trace.variables.values.cell import CellVariable
from pdyn.trace.variables.values.deleted import DeletedAttrVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer


@handler("LOAD_FAST")
def load_fast(tx: Tracer, inst: Instruction) -> None:
    if inst.argval not in tx.locals:
        raise UserException(UnboundLocalError(f"local variable {inst.argval!r} referenced before assignment"))
    tx.push(tx.locals[inst.argval])


@handler("LOAD_FAST_AND_CLEAR")
def load_fast_and_clear(tx: Tracer, inst: Instruction) -> None:
    """Save a name an inlined comprehension will rebind; for a cell variable, the cell itself."""
    if inst.argval in tx.cells:
        tx.push(tx.cells.pop(inst.argval))
    else:
        tx.push(tx.locals.pop(inst.argval, NULL))


@handler("STORE_FAST")
def store_fast(tx: Tracer, inst: Instruction) -> None:
    value = tx.pop()
    if value is NULL:  # restores a comprehension variable that was unbound before it
        tx.locals.pop(inst.argval, None)
    elif isinstance(value, CellVariable):  # restores the cell a comprehension's own cell replaced
        tx.cells[inst.argval] = value
    else:
        tx.locals[inst.argval] = value


@handler("MAKE_CELL")
def make_cell(tx: Tracer, inst: Instruction) -> None:
    """A fresh, empty cell (an inlined comprehension's own cell variable)."""
    tx.cells[inst.argval] = CellVariable()


@handler("DELETE_FAST")
def delete_fast(tx: Tracer, inst: Instruction) -> None:
    tx.locals.pop(inst.argval, None)


@handler("LOAD_CONST")
def load_const(tx: Tracer, inst: Instruction) -> None:
    tx.push(tx.wrap_constant(inst.argval))


def _cell(tx: Tracer, name: str):  # type: ignore[no-untyped-def]
    if name not in tx.cells:
        raise Unsupported("cell", f"pdyn has no cell named {name!r}", loc=tx.loc())
    return tx.cells[name]


@handler("LOAD_DEREF")
def load_deref(tx: Tracer, inst: Instruction) -> None:
    cell = _cell(tx, inst.argval)
    if cell.contents is None:
        raise UserException(NameError(f"free variable {inst.argval!r} referenced before assignment"))
    tx.push(cell.contents)


@handler("STORE_DEREF")
def store_deref(tx: Tracer, inst: Instruction) -> None:
    cell = _cell(tx, inst.argval)
    if cell.outside and cell.source is None:  # a real cell pdyn cannot name in the frame code
        raise Unsupported("nonlocal_store", f"pdyn cannot trace a store to the enclosing scope's {inst.argval!r}",
                          loc=tx.loc())
    cell.contents = tx.pop()   # later reads in this trace, through any path to the cell, see it
    if cell.outside:
        tx.ctx.side_effects.store_cell(cell, cell.contents)


@handler("DELETE_DEREF")
def delete_deref(tx: Tracer, inst: Instruction) -> None:
    """`del x` of a variable a closure shares: the cell is emptied (a real cell after the graph)."""
    cell = _cell(tx, inst.argval)
    if cell.contents is None:
        raise Unsupported("cell", f"pdyn does not trace deleting the unbound {inst.argval!r}", loc=tx.loc())
    if cell.outside and cell.source is None:
        raise Unsupported("nonlocal_store", f"pdyn cannot trace deleting the enclosing scope's {inst.argval!r}",
                          loc=tx.loc())
    cell.contents = None
    if cell.outside:
        tx.ctx.side_effects.store_cell(cell, DeletedAttrVariable())


@handler("LOAD_CLOSURE")
def load_closure(tx: Tracer, inst: Instruction) -> None:
    tx.push(_cell(tx, inst.argval))


@handler("LOAD_GLOBAL")
def load_global(tx: Tracer, inst: Instruction) -> None:
    if inst.push_null:
        tx.push(NULL)
    tx.push(tx.load_global(inst.argval))


@handler("STORE_GLOBAL")
def store_global(tx: Tracer, inst: Instruction) -> None:
    if tx.f_globals is not tx.root_globals:
        raise Unsupported("store_global", "pdyn traces stores to globals only in the optimized function's module",
                          loc=tx.loc())
    tx.ctx.side_effects.store_global(inst.argval, tx.pop())


@handler("LOAD_ATTR")
def load_attr(tx: Tracer, inst: Instruction) -> None:
    tx.push(tx.pop().getattr(tx, inst.argval))


@handler("LOAD_METHOD")
def load_method(tx: Tracer, inst: Instruction) -> None:
    obj = tx.pop()
    tx.push(NULL)
    tx.push(obj.getattr(tx, inst.argval))


@handler("LOAD_SUPER_ATTR")
def load_super_attr(tx: Tracer, inst: Instruction) -> None:
    """`super().name` (3.12): the stack holds super, the class and the instance."""
    obj = tx.pop()
    cls = tx.pop()
    proxy = tx.pop().call(tx, [cls, obj], {})
    if inst.push_null:
        tx.push(NULL)
    tx.push(proxy.getattr(tx, inst.argval))


@handler("STORE_ATTR")
def store_attr(tx: Tracer, inst: Instruction) -> None:
    obj = tx.pop()
    value = tx.pop()
    obj.store_attr(tx, inst.argval, value)
