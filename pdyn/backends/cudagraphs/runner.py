"""Replaying one compiled graph from CUDA graphs: one capture per padded shape (pad.py), made after
the shape has run `WARMUP` times uncaptured (its second call captures, as torch.compile's
reduce-overhead does).

Inputs: an input whose address was the same on the call before the capture (a parameter, a
buffer the caller reuses) is read in place by the captured graph, and a later call with another
address runs uncaptured and drops that capture (the next capture copies it); every other input is
copied into a static buffer of the padded shape. Outputs: each call returns fresh tensors, copied
(and sliced back from the padding) out of the capture's static outputs, so a later replay never
overwrites what a caller holds. A replay's host work is small: the buffers cut to a call's sizes are
made once per size (`Views`), and the inputs, then the outputs, are each copied in one launch.
"""

from __future__ import annotations

import logging
import operator
from dataclasses import dataclass
from typing import Any, Callable

import sympy
import torch

from pdyn.backends.cudagraphs.pad import PadPlan, padded_shape, padded_sizes, region
from pdyn.shapes.graph_meta import SymbolBinding

log = logging.getLogger("pdyn.cudagraphs")
_data_ptr = torch.Tensor.data_ptr
_foreach_copy = torch._foreach_copy_
_empty_like = torch.empty_like
_CUDAGraph = torch._C._CUDAGraph if hasattr(torch._C, "_CUDAGraph") else torch.cuda.CUDAGraph
WARMUP = 1
# Captures must pay for themselves: once half the capture limit stands and the captures were
# replayed fewer times in all than there are captures (a decode loop whose prompts differ: every
# step a new key length, never seen again), new shapes run uncaptured until the replays catch up.
UNPAID_SHARE = 2


@dataclass
class Capture:
    replay: Callable[[], Any]         # the captured graph's replay
    static_args: list[Any]
    in_place: dict[int, int]          # input -> the address the graph reads it at
    copied: list[int]                 # inputs copied into static buffers on each replay
    outputs: list[torch.Tensor]
    tuple_out: type | None            # tuple/list when the graph returns one, None for one tensor

    def __post_init__(self) -> None:
        # the in-place inputs' addresses, checked on each replay in one pass (a model's weights)
        getter = operator.itemgetter(*self.in_place) if self.in_place else None
        self.read_in_place = getter if len(self.in_place) > 1 else lambda args: (getter(args),)
        self.in_place_ptrs = list(self.in_place.values())
        self.read_copied = operator.itemgetter(*self.copied) if len(self.copied) > 1 else \
            (lambda args: (args[self.copied[0]],)) if self.copied else (lambda args: ())
        self.views: dict[tuple[int, ...], Views] = {}  # by the padded symbols' actual values


@dataclass
class Views:
    """One capture's buffers cut to one call's actual sizes: where the copied inputs go, and what
    each output is read from."""

    inputs: list[torch.Tensor]
    outputs: list[torch.Tensor]


class GraphRunner:
    """The callable the backend returns: replays a capture where there is one."""

    def __init__(self, compiled: Callable[..., Any], plan: PadPlan, bindings: dict[sympy.Symbol, SymbolBinding],
                 varying_strides: list[int], scalars: list[int], buckets: tuple[int, ...] | None, limit: int) -> None:
        self.compiled, self.plan, self.buckets, self.limit = compiled, plan, buckets, limit
        self.bindings = [(b.placeholder, b.dim) for b in bindings.values()]
        self.symbols = list(bindings)
        self.varying_strides = varying_strides
        self.scalars = scalars  # non-tensor inputs no symbol stands for: a capture bakes them in
        self.captures: dict[Any, Capture] = {}
        self.seen: dict[Any, int] = {}
        self.last_ptrs: list[int] | None = None
        self.moving: set[int] = set()  # inputs seen at another address than their capture read
        self.pool: Any = None
        self.disabled: str | None = None
        self.captured = 0  # captures made (for tests and benchmarks)
        self.replays = 0  # replays of a standing capture
        self.ran_unpadded: set[Any] = set()  # keys that ran uncaptured at their own sizes

    def key(self, args: tuple[Any, ...], sizes: dict[sympy.Symbol, tuple[int, int]]) -> Any:
        values = [sizes[s][1] if s in sizes else args[p].shape[d] if d is not None else args[p]
                  for s, (p, d) in zip(self.symbols, self.bindings)]
        return (tuple(values), tuple(args[i].stride() for i in self.varying_strides),
                tuple(args[i] for i in self.scalars))

    def __call__(self, *args: Any) -> Any:
        if self.disabled is not None:
            return self.compiled(*args)
        sizes = padded_sizes(self.plan, args, self.buckets) if self.plan.symbols else {}
        key = self.key(args, sizes)
        cap = self.captures.get(key)
        if cap is not None:
            if cap.in_place and list(map(_data_ptr, cap.read_in_place(args))) != cap.in_place_ptrs:
                for i, ptr in cap.in_place.items():  # NOTE: one C-level pass above; which one moved, here
                    if args[i].data_ptr() != ptr:
                        log.debug("input %d moved: capture for %s dropped; it is copied from now on", i, key)
                        self.moving.add(i)
                del self.captures[key]
                self.seen[key] = 0
                return self._uncaptured(args)
            self.replays += 1
            return self._replay(cap, args, sizes)
        count = self.seen.get(key, 0) + 1
        self.seen[key] = count
        if count <= WARMUP or len(self.captures) >= self.limit or self._unpaid():
            if all(actual == padded for actual, padded in sizes.values()):
                self.ran_unpadded.add(key)
            if count == WARMUP + 1:
                log.debug("shape %s runs uncaptured: %s", key, "the capture limit %d is reached" % self.limit
                          if len(self.captures) >= self.limit else "the captures made were replayed too little")
            return self._uncaptured(args)
        try:
            cap = self._capture(args, sizes, key)
        except Exception as e:  # noqa: BLE001  # NOTE: never wrong: a graph that cannot be captured runs as compiled
            self.disabled = f"capture failed: {type(e).__name__}: {e}"
            log.debug("graph runs uncaptured: %s", self.disabled)
            try:
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001  # NOTE: the failed capture's own error was logged
                pass
            return self.compiled(*args)
        self.captures[key] = cap
        self.captured += 1
        log.debug("captured shape %s (%d captures)", key, len(self.captures))
        return self._replay(cap, args, sizes)

    def _unpaid(self) -> bool:
        return self.captured >= max(1, self.limit // UNPAID_SHARE) and self.replays < self.captured

    def _uncaptured(self, args: tuple[Any, ...]) -> Any:
        self.last_ptrs = [a.data_ptr() if isinstance(a, torch.Tensor) else 0 for a in args]
        return self.compiled(*args)

    def _capture(self, args: tuple[Any, ...], sizes: dict[sympy.Symbol, tuple[int, int]], key: Any) -> Capture:
        static_args: list[Any] = list(args)
        in_place: dict[int, int] = {}
        copied: list[int] = []
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                dims = self.plan.inputs.get(i, [])
                shape = padded_shape(a, dims, sizes)
                if shape == tuple(a.shape) and i not in self.moving and self.last_ptrs is not None and self.last_ptrs[i] == a.data_ptr():
                    in_place[i] = a.data_ptr()
                    continue
                if not _dense(a):
                    raise ValueError(f"input {i} is not dense (strides {a.stride()})")
                buf = torch.zeros(_strided_like(a, shape), dtype=a.dtype, device=a.device)
                buf = buf.as_strided(shape, _strides_in_order(a, shape))
                region(buf, dims, sizes).copy_(a)
                static_args[i] = buf
                copied.append(i)
            elif i in self.plan.ints:
                static_args[i] = sizes[self.plan.ints[i]][1]
        # a key that ran uncaptured unpadded has made its lazy inits: no warm-up run
        replay, out = self.record(static_args, warm=self.captured == 0 or key not in self.ran_unpadded)
        flat = list(out) if isinstance(out, (tuple, list)) else [out]
        if not all(isinstance(o, torch.Tensor) for o in flat):
            raise ValueError("the graph returns a value that is not a tensor")
        storages = {a.untyped_storage().data_ptr() for a in static_args if isinstance(a, torch.Tensor)}
        if any(o.untyped_storage().data_ptr() in storages for o in flat):
            raise ValueError("an output aliases an input")
        return Capture(replay, static_args, in_place, copied, flat, type(out) if isinstance(out, (tuple, list)) else None)

    def record(self, static_args: list[Any], warm: bool = True) -> tuple[Callable[[], Any], Any]:
        """Capture one call on `static_args`: (replay, its static outputs); `warm`: run it once on
        the capture stream first, outside capture, for lazy inits (cuBLAS workspaces, new launch plans)."""
        if self.pool is None:
            self.pool, self.stream = torch.cuda.graph_pool_handle(), torch.cuda.Stream()
        if warm:
            self.stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(self.stream):
                self.compiled(*static_args)
            torch.cuda.current_stream().wait_stream(self.stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool, stream=self.stream):
            out = self.compiled(*static_args)
        return _CUDAGraph.replay.__get__(graph), out  # the C method: no Python frame per replay

    def _replay(self, cap: Capture, args: tuple[Any, ...], sizes: dict[sympy.Symbol, tuple[int, int]]) -> Any:
        actual = tuple(n for n, _ in sizes.values())
        views = cap.views.get(actual)
        if views is None:
            views = cap.views[actual] = self._views(cap, sizes)
        if views.inputs:  # NOTE: one launch for every copied input, not one per input
            _foreach_copy(views.inputs, cap.read_copied(args))
        cap.replay()
        outs = [_empty_like(o) for o in views.outputs]  # what `clone` returns, filled in one launch
        if outs:
            _foreach_copy(outs, views.outputs)
        if cap.tuple_out is None:
            return outs[0]
        return cap.tuple_out(outs)

    def _views(self, cap: Capture, sizes: dict[sympy.Symbol, tuple[int, int]]) -> Views:
        inputs = [region(cap.static_args[i], self.plan.inputs[i], sizes) if i in self.plan.inputs else cap.static_args[i]
                  for i in cap.copied]
        outputs = [region(o, dims, sizes) for o, dims in zip(cap.outputs, self.plan.outputs)] \
            if self.plan.outputs else list(cap.outputs)
        return Views(inputs, outputs)


def _dense(t: torch.Tensor) -> bool:
    """Non-overlapping and dense: some order of its dims is contiguous."""
    expected = 1
    for size, stride in sorted(zip(t.shape, t.stride()), key=lambda p: p[1]):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def _strided_like(t: torch.Tensor, shape: tuple[int, ...]) -> tuple[int, ...]:
    n = 1
    for s in shape:
        n *= s
    return (n,)


def _strides_in_order(t: torch.Tensor, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Strides for `shape` laid out in the same dim order as `t` (innermost = smallest stride)."""
    order = sorted(range(t.dim()), key=lambda d: (t.stride(d), -d))
    strides = [0] * len(shape)
    acc = 1
    for d in order:
        strides[d] = acc
        acc *= shape[d]
    return tuple(strides)
