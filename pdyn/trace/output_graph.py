"""The torch.fx graph under construction: its inputs and the ops recorded into it.

Every op runs once at trace time on fake tensors (same sizes, dtypes and devices, no data) to learn
its output's metadata; the node it records carries the user's file:line in `node.meta["loc"]`.
"""

from __future__ import annotations

import contextlib
import math
import logging
import operator
import re
from typing import Any, Iterator

import sympy
import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode
from torch.fx.experimental.symbolic_shapes import ShapeEnv as TorchShapeEnv
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensor,
    FakeTensorMode,
    UnsupportedOperatorException,
)

from pdyn.shapes import graph_meta, size_arith
from pdyn.shapes.validation import ValidationFailure
from pdyn.base import logs
from pdyn.base.errors import SourceLoc, Unsupported, UserException
from pdyn.guards.guards import AliasGuard
from pdyn.ops.effects import mutates as writes
from pdyn.ops import canonical
from pdyn.ops.shape_definitions import definitions as shape_definitions
from pdyn.ops.shape_rules import SymTensor, infer_sizes
from pdyn.ops.shape_rules_custom import fake_kernel_sizes, is_custom_op
from pdyn.sources import ModuleMemberSource, SizeSource, Source
from pdyn.trace.fx_targets import exact_target
from pdyn.trace.context import TraceContext
from pdyn.trace import unbacked as data_sizes
from pdyn.trace.variables.torch.amp_state import pin_op_state
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.builder import wrap_constant_result
from pdyn.trace.variables.containers.core import ListVariable
from pdyn.trace.variables.torch.fx_args import as_fake, as_node, as_symbolic
from pdyn.trace.variables.values.symint import SymIntVariable
from pdyn.trace.variables.torch.tensor import TensorVariable, wrap_fx_result
from pdyn.trace.variables.torch.torch_functions import pin_sizes_read

dynamic_log = logs.topic("dynamic")
DATA_DEPENDENT = (DataDependentOutputException, DynamicOutputShapeException)


def _in_fake_fallback(e: BaseException) -> bool:
    """Whether `e` came from FakeTensor's fallback for an op without a fake kernel (the real kernel
    run on zeros, its result made fake again): not the op's own error on these arguments (a result
    FakeTensor cannot describe, a check that zeros fail), so eager may well succeed."""
    tb = e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "run_fallback_kernel":
            return True
        tb = tb.tb_next
    return False


def _undefined_results(name: str, example: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """The fake result with None where the real kernel returns an undefined tensor (None in
    Python) but the fake kernel an empty one: else `weights is None` is False in the trace only."""
    if name == "_native_multi_head_attention" and isinstance(example, tuple) and len(example) == 2:
        need_weights = kwargs.get("need_weights", args[10] if len(args) > 10 else True)
        if need_weights is False:
            return (example[0], None)
    return example


@contextlib.contextmanager
def _quiet_fake_tensor() -> Iterator[None]:
    """FakeTensor logs a traceback for every op that fails; pdyn reports those itself."""
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    disabled = logger.disabled
    logger.disabled = True  # (not setLevel: that clears every logger's cache, each op)
    try:
        yield
    finally:
        logger.disabled = disabled


class OutputGraph:
    """One trace's fx graph and its inputs; the rest of what the trace accumulates (sizes, guards,
    side effects) is in its TraceContext, `ctx`."""

    def __init__(self, frame_name: str, ctx: TraceContext) -> None:
        self.frame_name = frame_name
        self.ctx = ctx
        self.graph = torch.fx.Graph()
        # torch's ShapeEnv only gives data-dependent results a size to carry (see trace/unbacked.py)
        self.fake_mode = FakeTensorMode(allow_non_fake_inputs=False, shape_env=TorchShapeEnv())
        self.fake_mode.cache_enabled = False  # one trace rarely repeats an op exactly; keys cost more
        self.unbacked = data_sizes.Unbacked(ctx.shape_env)
        self.inputs: list[TensorVariable] = []          # placeholders, in order
        self.placeholders: list[tuple[torch.fx.Node, Source, Any]] = []   # node, source, this call's value
        self._input_by_id: dict[int, TensorVariable] = {}
        self._names: set[str] = set()
        self.check_hints = False   # config.check_hints: a rule that disagrees with the fake run raises

    # -- inputs ----------------------------------------------------------------------------------

    def add_input(self, value: torch.Tensor, source: Source, loc: SourceLoc | None) -> TensorVariable:
        """A tensor read from the frame: a placeholder (or the one already made for this object)."""
        seen = self._input_by_id.get(id(value))
        if seen is not None:
            self.ctx.add_guard(AliasGuard(source, other=seen.source, same=True, loc=loc))
            return seen
        node = self.graph.placeholder(self._fresh_name(_hint(source)))
        with _quiet_fake_tensor():
            fake = self.fake_mode.from_tensor(value, static_shapes=True)
        node.meta["example_value"] = fake
        node.meta["source"] = source
        vt = TensorVariable(node, fake, source=source, input_sources=frozenset({source}),
                            sizes=self._input_sizes(value, source))
        graph_meta.stamp_input(node, value, vt.sizes)  # sizes for the backend
        self.inputs.append(vt)
        self.placeholders.append((node, source, value))
        self._input_by_id[id(value)] = vt
        return vt

    def _input_sizes(self, value: torch.Tensor, source: Source) -> tuple[sympy.Expr, ...]:
        """One symbol per dim, except size 0 (unless marked unbacked), a buffer's size 1, dims marked
        static, parameters (their sizes are the model's, as in torch.compile), and everything under
        dynamic=False. A size 1 is a symbol in [1, inf) (ShapeEnv.create_symbol)."""
        unbacked = getattr(value, "_pdyn_unbacked_dims", ())
        dynamic = frozenset(getattr(value, "_pdyn_dynamic_dims", ())) | frozenset(unbacked)
        static = range(value.dim()) if isinstance(value, torch.nn.Parameter) and not dynamic else \
            getattr(value, "_pdyn_static_dims", ())
        sizes = []
        for dim, size in enumerate(value.shape):
            origin = SizeSource(source, dim)
            if (self.ctx.plan.static_inputs and dim not in dynamic) or dim in static:
                sizes.append(sympy.Integer(size))
                continue
            if dim in dynamic:
                self.ctx.dynamic_marks.add(origin)
            elif size == 1 and isinstance(source, ModuleMemberSource):   # a buffer's 1 is the model's
                sizes.append(sympy.Integer(1))
                continue
            # mark_unbacked: a symbol in [0, inf) at any size, 0 and 1 included (as a list's lengths)
            sizes.append(self.ctx.shape_env.create_symbol(size, origin, size_like=dim in unbacked))
        return tuple(sizes)

    def add_int_input(self, value: int, source: Source, loc: SourceLoc | None,
                      size_like: bool = False) -> VariableTracker:
        """An int argument or int attribute, treated as a size: symbolic until Python reads it
        (`size_like`: 0 and 1 too; see ShapeEnv.create_symbol)."""
        expr = self.ctx.shape_env.create_symbol(value, SizeSource(source, None), size_like)
        vt = SymIntVariable(self.ctx.shape_env, expr, None, loc, source=source, input_sources=frozenset({source}))

        def placeholder() -> torch.fx.Node:
            node = self.graph.placeholder(self._fresh_name(_hint(source)))
            node.meta["example_value"] = value
            node.meta["source"] = source
            graph_meta.stamp_int_input(node, expr)  # sizes for the backend
            self.placeholders.append((node, source, value))
            return self.annotate(node, loc)

        vt._make_node = placeholder
        return vt

    def ordered_inputs(self) -> list[tuple[Source, Any]]:
        """(source, example) of each placeholder, after moving all placeholders to the top of the
        graph (one made late, for a parameter or an int read mid-trace, keeps its relative order)."""
        anchor: torch.fx.Node | None = None
        for node in [n for n in self.graph.nodes if n.op == "placeholder"]:
            if anchor is not None:
                anchor.append(node)
            elif next(iter(self.graph.nodes)) is not node:
                next(iter(self.graph.nodes)).prepend(node)
            anchor = node
        by_node = {id(node): (source, value) for node, source, value in self.placeholders}
        return [by_node[id(n)] for n in self.graph.nodes if n.op == "placeholder"]

    def _fresh_name(self, hint: str) -> str:
        base = re.sub(r"\W+", "_", hint).strip("_").lower() or "t"
        if base[0].isdigit():
            base = "t_" + base
        name, n = base, 1
        while name in self._names:
            n += 1
            name = f"{base}_{n}"
        self._names.add(name)
        return name

    # -- recording ops ---------------------------------------------------------------------------

    def call(self, kind: str, target: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker],
             *, loc: SourceLoc | None, mutates: bool = False) -> VariableTracker:
        """Record `target(*args, **kwargs)` (kind: call_function or call_method) and wrap its result.

        The op runs first on fake tensors; a result with no tensor in it (a size, a dtype) is a
        constant and records nothing, unless the op `mutates` an input (setitem).
        """
        fake_args = [as_fake(a) for a in args]
        fake_kwargs = {k: as_fake(v) for k, v in kwargs.items()}
        if self.ctx.shape_env.validator is not None:
            self.ctx.shape_env.validator.loc = loc   # the user line a failed check names
        fn = getattr(torch.Tensor, target) if kind == "call_method" else target
        pin_op_state(self.ctx, loc)
        try:
            with _quiet_fake_tensor(), self.fake_mode:
                example = data_sizes.fake_call(canonical(target).name, fn, fake_args, fake_kwargs)
        except GuardOnDataDependentSymNode as e:
            raise Unsupported("data_dependent", f"{_target_name(target)} needs a decision on a size that "
                              f"depends on tensor data ({str(e).splitlines()[0]})", loc=loc) from None
        except DATA_DEPENDENT as e:
            raise Unsupported(
                "data_dependent", f"{_target_name(target)} needs tensor data pdyn does not have at trace time "
                f"({type(e).__name__})", hint="move data-dependent Python logic out of the compiled function",
                loc=loc) from None
        except UnsupportedOperatorException as e:
            raise Unsupported("fake_unsupported", f"{_target_name(target)} has no fake implementation: {e}",
                              loc=loc) from None
        except Exception as e:  # the op itself raised: eager raises it too, for real
            if _in_fake_fallback(e):
                raise Unsupported("fake_unsupported", f"{_target_name(target)} has no fake implementation, and "
                                  f"running it on zeros failed: {type(e).__name__}: {e}", loc=loc) from None
            raise UserException(e, loc) from None
        example = _undefined_results(canonical(target).name, example, fake_args, fake_kwargs)
        _forget_hint_constants(example, args, kwargs)
        if not mutates and not _has_tensor(example):
            pin_sizes_read(self.ctx.shape_env, loc, kind, target, args, kwargs)
            return wrap_constant_result(example)
        node = self._record(kind, target, args, kwargs, example, loc)
        same = _returned_argument(example, args, kwargs)
        if same is not None and _alias_is_guarded(node, same):  # `x.add_(1)`, `x.to(x.dtype)`: eager
            graph_meta.stamp_result(node, example, [same.sizes])  # sizes for the backend
            return same       # returns x itself (the node stays: it may have written x)
        sources = frozenset().union(*(getattr(a, "input_sources", frozenset()) for a in _flat(args, kwargs)))
        sizes = self._output_sizes(target, args, kwargs, example, loc)
        self._note_reads(node, example, sizes)
        graph_meta.stamp_result(node, example, sizes)  # sizes for the backend
        data_sizes.emit_asserts(self, loc)
        return wrap_fx_result(self, node, example, sources, sizes, wrap_constant_result)

    def _note_reads(self, node: torch.fx.Node, example: Any, sizes: list[tuple[sympy.Expr, ...]]) -> None:
        """Where each unbacked symbol that is an output's whole dim is read at run time."""
        outputs = [example] if isinstance(example, torch.Tensor) else list(_flat_values(example))
        tensors = [(i, t) for i, t in enumerate(outputs) if isinstance(t, torch.Tensor)]
        for (i, _), dims in zip(tensors, sizes):
            for d, size in enumerate(dims):
                if size in self.ctx.shape_env.unbacked:
                    source = node if isinstance(example, torch.Tensor) else self.getitem_node(node, i)
                    self.unbacked.read_from(size, source, d)

    def data_values(self, x: TensorVariable, method: str, loc: SourceLoc | None) -> VariableTracker:
        """`x.item()` / `x.tolist()` of an int tensor: each value a fresh unbacked symbol, read in
        the graph where the program reads it (a later write to `x` does not change it)."""
        for size in x.sizes:  # the list's length is Python's: a value read
            self.ctx.shape_env.specialize(size, loc, f"Tensor.{method}(), whose length Python holds")
        node = self.annotate(self.graph.call_method(method, (x.node,)), loc)
        node.meta["op"] = canonical(method)
        with _quiet_fake_tensor(), self.fake_mode:
            values = x.example.tolist()
        node.meta["example_value"] = values
        scalar = not isinstance(values, list)
        items = []
        for i, value in enumerate([values] if scalar else values):
            read = node if scalar else self.getitem_node(node, i)
            if isinstance(value, int):  # torch knew it (a constant)
                items.append(wrap_constant_result(value))
                continue
            sym = self.unbacked.fresh(value, f"{x.node.name}.{method}()" + (f" at {loc}" if loc else ""),
                                      -math.inf, math.inf)
            self.unbacked.read_from(sym, read, None)
            vt = SymIntVariable(self.ctx.shape_env, sym, None, loc, input_sources=x.input_sources)
            vt._node = read
            graph_meta.stamp_size_node(read, sym, value)
            items.append(vt)
        return items[0] if scalar else ListVariable(items)

    def user_check(self, name: str, args: list[VariableTracker], loc: SourceLoc | None) -> VariableTracker:
        """`pdyn.check(cond, message)` / `pdyn.check_is_size(n)` in traced code: a fact over sizes
        the trace assumes (a data-dependent one becomes a runtime assert; another is guarded)."""
        env = self.ctx.shape_env
        if not args:
            raise UserException(TypeError(f"{name}() takes a condition"), loc)
        value = args[0]
        where = f" (at {loc.filename}:{loc.lineno})" if loc is not None else ""
        if name == "check_is_size":
            if not isinstance(value, SymIntVariable) or value.pytype is not int:
                n = value.as_python_constant()
                if not isinstance(n, int) or n < 0:
                    raise UserException(RuntimeError(f"pdyn.check_is_size: the value is not a size{where}"), loc)
                return wrap_constant_result(None)
            env.size_like.update(env.unbacked_in(value.expr))
            fact, message = sympy.Ge(value.expr, 0), f"pdyn.check_is_size: the value is not a size{where}"
        else:
            message = args[1].as_python_constant() if len(args) > 1 else None
            message = (message or "pdyn.check failed") + where
            if not isinstance(value, SymIntVariable):
                if isinstance(value, TensorVariable):
                    raise Unsupported("data_dependent", "pdyn.check() of a tensor reads its data", loc=loc)
                if not value.as_python_constant():
                    raise UserException(RuntimeError(message), loc)
                return wrap_constant_result(None)
            fact = value.expr
        if not env.unbacked_in(fact):
            if not env.evaluate_bool(fact, loc, f"pdyn.{name}"):
                raise UserException(RuntimeError(message), loc)
            return wrap_constant_result(None)
        if env.known(fact) is False:
            raise UserException(RuntimeError(message), loc)
        env.assume(fact, loc, RuntimeError, message.removesuffix(where))
        data_sizes.emit_asserts(self, loc)
        return wrap_constant_result(None)

    def symbol_node(self, sym: sympy.Symbol) -> torch.fx.Node:
        """A graph value that is `sym` at run time: a dim of the output that made an unbacked
        symbol, the `.item()` that made it, or a dim of the input it is read from."""
        read = self.unbacked.reads.get(sym)
        if read is not None:
            node, dim = read
            return node if dim is None else self.graph.call_method("size", (node, dim))
        for origin in self.ctx.shape_env.origins.get(sym, []):
            for vt in self.inputs:
                if vt.source == origin.base and origin.dim is not None:
                    return self.graph.call_method("size", (vt.node, origin.dim))
        raise Unsupported("runtime_assert", f"pdyn cannot read {sym} for a runtime assert")

    def _output_sizes(self, target: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker],
                      example: Any, loc: SourceLoc | None) -> list[tuple[sympy.Expr, ...]]:
        """Symbolic sizes of the op's tensor outputs, from its shape rule; an op with no rule (or
        a rule that disagrees with the fake run) specializes the sizes of its inputs instead."""
        outputs = [t for t in _flat_values(example) if isinstance(t, torch.Tensor)]
        env = self.ctx.shape_env
        why = f"{_target_name(target)}() at {loc}" if loc else f"{_target_name(target)}()"
        bound = data_sizes.count_bound(canonical(target).name, [
            (tuple(a.sizes) if any(_is_symbolic(s) for s in a.sizes) else a.example)
            if isinstance(a, TensorVariable) else None for a in args])
        static = [tuple(self.unbacked.translate(s, why, bound) for s in t.shape) for t in outputs]
        sym_args = [as_symbolic(a) for a in args]
        sym_kwargs = {k: as_symbolic(v) for k, v in kwargs.items()}
        symbolic = [e for e in _flat_values((sym_args, sym_kwargs)) if _is_symbolic(e)]
        fresh = any(_is_symbolic(s) for sizes in static for s in sizes)
        try:
            result = infer_sizes(env, target, tuple(sym_args), sym_kwargs, loc)
        except Unsupported:
            raise
        except Exception as e:  # a rule that cannot handle these arguments: specialize below
            dynamic_log.debug("shape rule of %s failed: %s", _target_name(target), e)
            result = None
        if result is None and is_custom_op(target):   # a library's op: its own fake kernel's sizes
            result = fake_kernel_sizes(target, sym_args, sym_kwargs, [as_fake(a) for a in args],
                                       {k: as_fake(v) for k, v in kwargs.items()})
        if result is None and fresh:
            result = data_sizes.data_rule(canonical(target).name, sym_args, sym_kwargs, static)
        agrees = result is not None and len(result) == len(outputs) and all(
            _agrees(env, sizes, fake) for sizes, fake in zip(result, static))
        if env.validator is not None and result is not None and len(result) == len(outputs):
            for what, defined, got in shape_definitions(canonical(target).name, tuple(sym_args), sym_kwargs, result):
                env.validator.check_equal(f"the shape rule's {what}", defined, got, loc)
        if not symbolic:
            if result is not None and not agrees:
                # NOTE: torch's fake kernels have been wrong in released versions (norm over a
                # size-1 dim kept the dim in torch 2.11); neither answer can be trusted, so the op
                # runs for real, eagerly.
                raise Unsupported("fake_disagrees", f"{_target_name(target)}: torch's fake kernel gives sizes "
                                  f"{[tuple(t.shape) for t in outputs]}, pdyn's shape rule "
                                  f"{[tuple(str(d) for d in r) for r in result]}", loc=loc)
            return static
        if agrees:
            return result
        if result is not None and self.check_hints:
            raise ValidationFailure.at(f"{_target_name(target)}: the shape rule gives sizes "
                                       f"{[tuple(str(d) for d in r) for r in result]}, which are "
                                       f"{[tuple(env.fake_value(d) for d in r) for r in result]} at this call's "
                                       f"sizes; the op produced {[tuple(t.shape) for t in outputs]}", loc)
        why = f"{_target_name(target)}(), which has no symbolic shape rule"
        for expr in symbolic:
            env.specialize(expr, loc, why)
        dynamic_log.info("%s at %s specialized its inputs' sizes", why, loc)
        return static

    def _record(self, kind: str, target: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker],
                example: Any, loc: SourceLoc | None) -> torch.fx.Node:
        """Append the node for an op whose fake run gave `example`, with the user's location."""
        node = self.graph.create_node(
            kind, exact_target(target) if kind == "call_function" else target, tuple(as_node(a) for a in args), {k: as_node(v) for k, v in kwargs.items()},
            name=self._fresh_name(_target_name(target).rsplit(".", 1)[-1]),
        )
        graph_meta.stamp_size_arguments(  # the values of size nodes, for the backend
            (node.args, node.kwargs), ([as_symbolic(a) for a in args], {k: as_symbolic(v) for k, v in kwargs.items()}),
            ([as_fake(a) for a in args], {k: as_fake(v) for k, v in kwargs.items()}))
        self.annotate(node, loc)
        node.meta["example_value"] = example
        node.meta["op"] = canonical(target)  # the op table's row: backends and effects read it
        return node

    def annotate(self, node: torch.fx.Node, loc: SourceLoc | None) -> torch.fx.Node:
        """Give `node` the user's file:line (`meta["loc"]`, and fx's stack trace for printing)."""
        node.meta["loc"] = loc
        if loc is not None:
            node.meta["stack_trace"] = (f'  File "{loc.filename}", line {loc.lineno}, in '
                                        f'{loc.function}\n    {loc.source_line().strip()}\n')
        return node

    def getitem_node(self, node: torch.fx.Node, index: int) -> torch.fx.Node:
        item = self.graph.call_function(operator.getitem, (node, index))
        item.meta["loc"] = node.meta.get("loc")   # the op that made the tuple
        return item


def _agrees(env: Any, rule: tuple[sympy.Expr, ...], fake: tuple[sympy.Expr, ...]) -> bool:
    """A rule's sizes match the fake run's: equal once backed symbols take their hints (the fake
    run's data-dependent sizes are pdyn's unbacked symbols already). A rule's size over unbacked
    symbols is exact under pdyn's runtime asserts; torch's vehicle answers data-dependent questions
    its own way (u0 == u1 for a broadcast, u0 := 5), so such a dim is not compared."""
    if len(rule) != len(fake):
        return False
    hints = {s: sympy.Integer(v) for s, v in env.hints.items()}
    for r, f in zip(rule, fake):
        if env.unbacked_in(r):
            continue
        r, f = env.simplify(sympy.sympify(r)).xreplace(hints), env.simplify(f).xreplace(hints)
        if r != f and not size_arith.same(r, f):
            return False
    return True


def _flat(args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> Iterator[VariableTracker]:
    stack: list[Any] = list(args) + list(kwargs.values())
    while stack:
        a = stack.pop()
        yield a
        stack.extend(getattr(a, "items", ()) if not isinstance(getattr(a, "items", None), dict) else a.items.values())


def _flat_values(value: Any) -> Iterator[Any]:
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _flat_values(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _flat_values(v)
    elif isinstance(value, slice):
        yield from _flat_values((value.start, value.stop, value.step))
    elif isinstance(value, SymTensor):
        yield from value.sizes
    else:
        yield value


def _forget_hint_constants(example: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> None:
    """A fake result of numbers only (`torch.div(n, 2)`) holds its value as a constant, computed
    from the hints of symbolic ints: this call's value, not the graph's, so it is dropped (an
    `item()` of it is then data, never a stale constant)."""
    if not any(isinstance(a, SymIntVariable) and not a.is_python_constant() for a in _flat(args, kwargs)):
        return
    for value in _flat_values(example):
        if isinstance(value, FakeTensor) and value.constant is not None:
            value.constant = None


def _is_symbolic(value: Any) -> bool:
    return isinstance(value, sympy.Basic) and bool(value.free_symbols)


def _returned_argument(example: Any, args: list[VariableTracker],
                       kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    """The tensor argument an op returned itself (same fake object), if it did."""
    if not isinstance(example, torch.Tensor):
        return None
    for a in [*args, *kwargs.values()]:
        if isinstance(a, TensorVariable) and a.example is example:
            return a
    return None


def _alias_is_guarded(node: torch.fx.Node, argument: VariableTracker) -> bool:
    """Whether the facts that made an op return its argument hold on every call this trace serves:
    a write always returns it; dtype and device are fixed per trace; a layout (`contiguous`,
    `memory_format=`) is guarded for inputs only, so `x.t().contiguous()` keeps its own value."""
    layout = _target_name(node.target) == "contiguous" or "memory_format" in node.kwargs
    return writes(node) or not layout or getattr(argument, "node", None) is not None \
        and argument.node.op == "placeholder" and "memory_format" not in node.kwargs


def _has_tensor(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_tensor(v) for v in value)
    return False


def _target_name(target: Any) -> str:
    if isinstance(target, str):
        return target
    return getattr(target, "__name__", None) or repr(target)


def _hint(source: Source) -> str:
    return str(source).replace("L[", "").replace("G[", "g_").replace("'", "").replace("]", "").replace(".", "_")
