"""The autocast and inference-mode state a trace starts from, and the queries that read it.

The state is read once per root trace (`preserved_amp_state`, which also leaves whatever modes the
trace entered and did not leave) and guarded as soon as the trace reads or relies on it
(`pin_entry_state`): a query answers a constant, right only for callers that start in the
state traced; the trace's own blocks change it the same way on every call.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Iterator

import torch

from pdyn.base.errors import SourceLoc, UserException
from pdyn.guards.guards import CallResultGuard
from pdyn.trace.variables.base import VariableTracker

if TYPE_CHECKING:
    from pdyn.trace.context import TraceContext
    from pdyn.trace.translator import InstructionTranslator as Tracer

AMP_DEVICES = ("cpu", "cuda")
_ENTRY_STATES: list[tuple[Any, ...]] = []   # the autocast state each running root trace started from
OPEN: list[list[Any]] = []                 # per running root trace: the modes it entered, not yet left


def trace_time_autocast(device: str, dtype: torch.dtype, enabled: bool, cache: bool) -> Any:
    """An autocast mode to enter at trace time, so fake ops get autocast's dtypes (torch 2.13 has an
    unmanaged variant for frontends; torch 2.11 only the public class, which does the same in Python)."""
    unmanaged = getattr(torch.amp.autocast_mode, "_UnmanagedAutocast", None)
    if unmanaged is not None:
        return unmanaged(device, dtype, enabled, cache)
    return torch.amp.autocast(device_type=device, dtype=dtype, enabled=enabled, cache_enabled=cache)


def enter_mode(mode: Any) -> None:
    """Enter for real at trace time, remembered so that a trace that ends early leaves it."""
    mode.__enter__()
    if OPEN:
        OPEN[-1].append(mode)


def autocast_state() -> tuple[Any, ...]:
    """What the queries below read: autocast per device (enabled, dtype), its cache flag, and
    inference mode."""
    return (*((torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in AMP_DEVICES),
            torch.is_autocast_cache_enabled(), torch.is_inference_mode_enabled())


AUTOCAST_QUERIES = frozenset(f for f in (
    torch.is_autocast_enabled, getattr(torch, "is_autocast_cpu_enabled", None), torch.get_autocast_dtype,
    getattr(torch, "get_autocast_cpu_dtype", None), getattr(torch, "get_autocast_gpu_dtype", None),
    torch.is_autocast_cache_enabled, torch.is_inference_mode_enabled) if f is not None)


@contextlib.contextmanager
def preserved_amp_state() -> Iterator[None]:
    """Autocast and inference mode as they were before the trace, however it ends."""
    _ENTRY_STATES.append(autocast_state())
    OPEN.append([])
    try:
        yield
    finally:
        _ENTRY_STATES.pop()
        for mode in reversed(OPEN.pop()):  # left in the trace's order, innermost first
            mode.__exit__(None, None, None)


def pin_entry_state(tx: Tracer) -> None:
    """Guard that callers start in the autocast state this trace started in (one guard per trace)."""
    _pin_entry_state(tx.ctx, tx.loc())


def _pin_entry_state(ctx: TraceContext, loc: SourceLoc | None) -> None:
    if _ENTRY_STATES:
        ctx.add_guard(CallResultGuard(None, fn=autocast_state, args=(), expected=_ENTRY_STATES[-1], loc=loc))


def pin_op_state(ctx: TraceContext, loc: SourceLoc | None) -> None:
    """An op run on fake tensors reads torch's global state as eager does: autocast (the dtype a
    matmul returns) and the default dtype (a factory's, a Python float's with an int tensor). The
    trace keeps what it answered (dtypes read in Python, the graph's recorded dtypes), so callers
    must start in that state: one guard each per trace, on its first op. (The trace cannot change
    the default dtype: `torch.set_default_dtype` breaks the graph.)"""
    _pin_entry_state(ctx, loc)
    ctx.add_guard(CallResultGuard(None, fn=torch.get_default_dtype, args=(), expected=torch.get_default_dtype(),
                                  loc=loc))
    ctx.add_guard(CallResultGuard(None, fn=mode_stacks, args=(), expected=mode_stacks(), loc=loc))


def mode_stacks() -> tuple[Any, ...]:
    """The torch function modes and the dispatch modes that are on, each the very object (a mode
    may change what an op returns, its dtype say): `()` where none is, the common case, cheaply."""
    functions, dispatch = torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack()
    if not functions and not dispatch:
        return ()
    return (tuple(torch._C._get_function_stack_at(i) for i in range(functions)),
            tuple(torch._C._get_dispatch_stack_at(i) for i in range(dispatch)))


def autocast_query(tx: Tracer, fn: Any, values: tuple[Any, ...]) -> VariableTracker:
    """An autocast query's answer now: the state the trace started from (guarded) as changed by the
    blocks the trace entered, which the graph enters too."""
    pin_entry_state(tx)
    try:
        return tx.wrap_constant(fn(*values))
    except Exception as e:
        raise UserException(e, tx.loc()) from None
