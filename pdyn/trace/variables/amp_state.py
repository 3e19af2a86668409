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

from pdyn.base.errors import UserException
from pdyn.guards.guards import CallResultGuard
from pdyn.trace.variables.base import VariableTracker

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

AMP_DEVICES = ("cpu", "cuda")
_ENTRY_STATES: list[tuple[Any, ...]] = []   # the autocast state each running root trace started from
OPEN: list[list[Any]] = []                 # per running root trace: the modes it entered, not yet left


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
    if _ENTRY_STATES:
        tx.ctx.add_guard(CallResultGuard(None, fn=autocast_state, args=(), expected=_ENTRY_STATES[-1],
                                         loc=tx.loc()))


def autocast_query(tx: Tracer, fn: Any, values: tuple[Any, ...]) -> VariableTracker:
    """An autocast query's answer now: the state the trace started from (guarded) as changed by the
    blocks the trace entered, which the graph enters too."""
    pin_entry_state(tx)
    try:
        return tx.wrap_constant(fn(*values))
    except Exception as e:
        raise UserException(e, tx.loc()) from None
