"""TensorVariable: a tensor in the graph (a placeholder or an op's output), with its fake example
value and `input_sources`, the graph inputs it was computed from.

Attribute reads that are metadata (dtype, shape, ndim, ...) are constants here, guarded by the
inputs' TensorGuards; methods and operators record graph nodes.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Callable

import sympy
import torch
import torch.fx

from pdyn.base.errors import Unsupported, UserException
from pdyn.guards.tensor_guards import ExactStridesGuard, InferenceTensorGuard
from pdyn.ops import canonical
from pdyn.sources import SizeSource, Source
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable, ObjectConstantVariable
from pdyn.trace.variables.containers.core import ListVariable, SizeVariable, TupleVariable
from pdyn.trace.variables.torch.int_tensors import int_of
from pdyn.trace.variables.torch.owned_layout import determined_strides
from pdyn.trace.variables.values.symint import SymIntVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer
    from pdyn.trace.frame_codegen import FrameCodegen, ResumeCodegen
    from pdyn.trace.output_graph import OutputGraph

METADATA_ATTRS = frozenset({
    "dtype", "device", "ndim", "requires_grad", "is_cuda", "is_cpu", "is_meta", "is_leaf", "layout",
    "is_sparse", "is_quantized", "is_mkldnn", "is_nested", "itemsize",
})
GRAPH_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag", "data"})

def _is_scalar_index(vt: VariableTracker) -> bool:
    """A 0-d integer tensor (not bool, not uint8) in an index: eager reads its value and selects, as
    with an int (torch's Python indexing), so the result is a view, never advanced indexing's copy."""
    if not isinstance(vt, TensorVariable) or vt.example.dim() != 0:
        return False
    dtype = vt.example.dtype
    return not dtype.is_floating_point and not dtype.is_complex and dtype not in (torch.bool, torch.uint8)


def _scalar_index_dims(items: list[VariableTracker], ndim: int) -> list[int] | None:
    """The result dim each 0-d integer tensor of a basic index (ints, slices, None, `...`) lands on
    once it is replaced by `:`; None for an index with other tensors (advanced indexing)."""
    consuming = sum(not (i.is_python_constant() and i.as_python_constant() in (None, Ellipsis)) for i in items)
    dims, out = [], 0
    for item in items:
        if _is_scalar_index(item):
            dims.append(out)
            out += 1
        elif isinstance(item, TensorVariable):
            return None
        elif item.is_python_constant() and item.as_python_constant() is Ellipsis:
            out += ndim - consuming
        elif not (item.is_python_constant() and isinstance(item.as_python_constant(), int)
                  and not isinstance(item.as_python_constant(), bool)) and not isinstance(item, SymIntVariable):
            out += 1  # a slice or None keeps (or makes) a dim; an int removes one
    return dims


def _getitem_scalar_indices(tx: Tracer, x: TensorVariable, key: VariableTracker) -> VariableTracker | None:
    """`x[key]` where `key` holds 0-d integer tensors, traced as eager runs it: each such index is
    read as its value (`item()`, an unbacked symbol read in the graph) and selected, so the result is
    a view (never advanced indexing's copy) and no decision is made on the value (an index out of
    range raises IndexError in the graph, as eagerly). `experts[e]` with `e` a row of nonzero()."""
    items = key.items if type(key) is TupleVariable else [key]
    if not any(_is_scalar_index(item) for item in items):
        return None
    dims = _scalar_index_dims(items, len(x.sizes))
    if dims is None:
        return None
    call = tx.output.call
    result: VariableTracker = x
    if not all(_is_scalar_index(i) for i in items):
        kept = TupleVariable([ConstantVariable(slice(None)) if _is_scalar_index(i) else i for i in items])
        result = call("call_function", operator.getitem, [x, kept], {}, loc=tx.loc())
    scalars = [i for i in items if _is_scalar_index(i)]
    for dim, index in reversed(list(zip(dims, scalars))):  # the last first: earlier dims keep their place
        value = tx.output.data_values(index, "item", tx.loc())
        result = call("call_function", torch.select, [result, ConstantVariable(dim), value], {}, loc=tx.loc())
    return result


class TensorVariable(VariableTracker):
    """A torch.Tensor in the graph. `input_sources` is the set of graph-input Sources it depends on."""

    # the Python int a 0-d tensor made of ints holds, and the fake's version it holds at (int_tensors.py)
    int_value: tuple[VariableTracker, int] | None = None

    def __init__(self, node: torch.fx.Node, example: torch.Tensor, source: Source | None = None,
                 input_sources: frozenset[Source] = frozenset(), python_type: type = torch.Tensor,
                 sizes: tuple[sympy.Expr, ...] | None = None):
        self.node = node
        self.example = example
        self.source = source
        self.input_sources = input_sources
        self._python_type = python_type
        # symbolic sizes (sympy Integers where static); the fake example holds this call's values
        self.sizes = sizes if sizes is not None else tuple(sympy.Integer(s) for s in example.shape)

    def sizes_held(self, source: Source, depth: int) -> list[tuple[SizeSource, Any]]:
        return [(SizeSource(source, dim), size) for dim, size in enumerate(self.sizes)]

    def size_item(self, tx: Tracer, dim: int) -> VariableTracker:
        """`x.size(dim)`: a constant for a static dim, else a SymIntVariable computed in the graph."""
        ndim = len(self.sizes)
        if not -ndim <= dim < max(ndim, 1) or ndim == 0:
            raise UserException(IndexError(f"Dimension out of range (expected to be in range of "
                                           f"[{-ndim}, {ndim - 1}], but got {dim})"))
        dim %= ndim
        expr = tx.ctx.shape_env.simplify(self.sizes[dim])
        if expr.is_Integer:
            return ConstantVariable(int(expr))
        output, loc = tx.output, tx.loc()
        return SymIntVariable(tx.ctx.shape_env, expr,
                              lambda: output.annotate(output.graph.call_method("size", (self.node, dim)), loc), loc,
                              input_sources=self.input_sources)

    def stride_item(self, tx: Tracer, dim: int, expr: sympy.Expr) -> VariableTracker:
        """`x.stride(dim)` known to be `expr`: a constant, or a SymIntVariable read in the graph."""
        expr = tx.ctx.shape_env.simplify(expr)
        if expr.is_Integer:
            return ConstantVariable(int(expr))
        output, loc = tx.output, tx.loc()
        return SymIntVariable(tx.ctx.shape_env, expr,
                              lambda: output.annotate(output.graph.call_method("stride", (self.node, dim)), loc), loc)

    def shape_vt(self, tx: Tracer) -> SizeVariable:
        return SizeVariable([self.size_item(tx, d) for d in range(len(self.sizes))])

    def numel_vt(self, tx: Tracer) -> VariableTracker:
        total: VariableTracker = ConstantVariable(1)
        for d in range(len(self.sizes)):
            total = tx.binary(operator.mul, total, self.size_item(tx, d))
        return total

    def length(self, tx: Tracer) -> VariableTracker:
        if not self.sizes:
            raise UserException(TypeError("len() of a 0-d tensor"))
        return self.size_item(tx, 0)

    def value_read_all(self, tx: Tracer, why: str) -> None:
        """Python needs facts that depend on every size (strides, a loop over rows): specialize them."""
        for size in self.sizes:
            tx.ctx.shape_env.specialize(size, tx.loc(), why)

    def value_read_layout(self, tx: Tracer, why: str) -> None:
        """Python reads this tensor's strides (`stride()`, `is_contiguous()`): they follow from the
        sizes and strides of the inputs it was made from, which its own sizes need not name
        (`x[:, :2].stride(0)` is x's size(1)): those are pinned and guarded exactly."""
        self.value_read_all(tx, why)
        env = tx.ctx.shape_env
        for sym, origins in list(env.origins.items()):
            if any(o.base in self.input_sources for o in origins):
                env.specialize(sym, tx.loc(), why)
        for vt in tx.output.inputs:
            if vt.source is not None and vt.source in self.input_sources:
                tx.ctx.add_guard(ExactStridesGuard(vt.source, strides=tuple(vt.example.stride()), loc=tx.loc()))

    def python_type(self) -> type:
        return self._python_type

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name == "shape":
            return self.shape_vt(tx)
        if name == "nbytes":  # a size fact: symbolic as numel() is
            return tx.binary(operator.mul, self.numel_vt(tx), ConstantVariable(self.example.itemsize))
        if name in METADATA_ATTRS:
            if name == "is_leaf" and self.node.op == "placeholder" and self.example.requires_grad:
                raise Unsupported("tensor_attr", "pdyn does not guard whether an input requiring grad is a leaf",
                                  loc=tx.loc())
            return ConstantVariable(getattr(self.example, name))
        if name in GRAPH_ATTRS:
            return tx.output.call("call_function", getattr, [self, ConstantVariable(name)], {}, loc=tx.loc())
        if name == "grad":
            raise Unsupported("tensor_grad", "pdyn cannot read .grad inside a compiled function", loc=tx.loc())
        attr = getattr(torch.Tensor, name, None)
        if attr is None:
            raise UserException(AttributeError(f"'Tensor' object has no attribute {name!r}"))
        if callable(attr):
            return TensorMethodVariable(self, name)
        raise Unsupported("tensor_attr", f"pdyn cannot read Tensor.{name}", loc=tx.loc())

    def call_method(self, tx: Tracer, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return TensorMethodVariable(self, name).call(tx, args, kwargs)

    def store_attr(self, tx: Tracer, name: str, value: VariableTracker) -> None:
        if name == "requires_grad":
            set_requires_grad(tx, self, value)
        else:
            super().store_attr(tx, name, value)

    def is_inference(self, tx: Tracer) -> VariableTracker:
        """`x.is_inference()`: the fake value knows for a tensor the graph made (under the trace's
        inference mode); an input's is guarded."""
        inference = self.example.is_inference()
        if self.node.op == "placeholder" and self.source is not None:
            tx.ctx.add_guard(InferenceTensorGuard(self.source, inference, loc=tx.loc()))
        elif self.node.op == "placeholder":
            raise Unsupported("tensor_method", "pdyn cannot guard whether this input is an inference tensor",
                              loc=tx.loc())
        return ConstantVariable(inference)

    def as_int(self, tx: Tracer) -> VariableTracker | None:
        return int_of(tx, self)

    def binary_op(self, tx: Tracer, fn: Callable[[Any, Any], Any], other: VariableTracker) -> VariableTracker:
        return tx.output.call("call_function", fn, [self, other], {}, loc=tx.loc())

    def unary_op(self, tx: Tracer, fn: Callable[[Any], Any]) -> VariableTracker:
        return tx.output.call("call_function", fn, [self], {}, loc=tx.loc())

    def getitem(self, tx: Tracer, key: VariableTracker) -> VariableTracker:
        selected = _getitem_scalar_indices(tx, self, key)
        if selected is not None:
            return selected
        return tx.output.call("call_function", operator.getitem, [self, key], {}, loc=tx.loc())

    def setitem(self, tx: Tracer, key: VariableTracker, value: VariableTracker) -> None:
        tx.output.call("call_function", operator.setitem, [self, key, value], {}, loc=tx.loc(), mutates=True)

    def contains(self, tx: Tracer, item: VariableTracker) -> bool:
        raise Unsupported("data_dependent", "`in` on a tensor depends on its values", loc=tx.loc())

    def iterate(self, tx: Tracer) -> list[VariableTracker]:
        if self.example.dim() == 0:
            raise UserException(TypeError("iteration over a 0-d tensor"))
        rows = tx.ctx.shape_env.specialize(self.sizes[0], tx.loc(), "iterating over a tensor's rows")
        return [self.getitem(tx, ConstantVariable(i)) for i in range(int(rows))]

    def truth(self, tx: Tracer) -> bool:
        raise Unsupported(
            "data_dependent_branch", "Python control flow depends on a tensor's values",
            hint="compute both branches with torch.where, or move the branch out of the compiled function",
            loc=tx.loc())

    def reconstruct(self, codegen: FrameCodegen) -> str:
        return codegen.graph_output(self)

    def __repr__(self) -> str:
        return f"TensorVariable({self.node.name}: {str(self.example.dtype).removeprefix('torch.')}{list(self.example.shape)})"


class TensorMethodVariable(VariableTracker):
    """A bound Tensor method (`x.view`), recorded as a call_method node when called."""

    def __init__(self, tensor: TensorVariable, name: str):
        self.tensor = tensor
        self.name = name

    def reconstruct_resumed(self, codegen: ResumeCodegen) -> str:
        return f"{codegen.reconstruct(self.tensor)}.{self.name}"

    def python_type(self) -> type:
        return type(torch.Tensor.add)

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        method_rule = METHOD_RULES.get(self.name)
        if method_rule is not None:
            return method_rule(tx, self.tensor, args, kwargs)
        if self.name == "is_inference" and not args and not kwargs:
            return self.tensor.is_inference(tx)
        op = canonical(self.name)
        if self.name in ("item", "tolist") and not args and not kwargs and _is_int_data(self.tensor):
            return tx.output.data_values(self.tensor, self.name, tx.loc())
        if op.refused is not None:
            refused = op.refused
            raise Unsupported(refused.kind, refused.message.format(what=f"Tensor.{self.name}()"), hint=refused.hint,
                              loc=tx.loc())
        shape_query = SHAPE_METHODS.get(self.name)
        if shape_query is not None:
            return shape_query(tx, self.tensor, args, kwargs)
        return tx.output.call("call_method", self.name, [self.tensor, *args], kwargs, loc=tx.loc(),
                              mutates=op.mutates is not None)


def set_requires_grad(tx: Tracer, x: TensorVariable, value: VariableTracker) -> None:
    """`x.requires_grad = value`: the setter's checks as eager makes them (its errors differ from
    `requires_grad_`'s), then the flag set in the graph, where the program sets it: a tensor the
    graph made gets it as eager's does; an input is changed as the eager call changes it."""
    if not value.is_python_constant() or type(value.as_python_constant()) is not bool:
        if value.is_python_constant():
            raise UserException(RuntimeError("requires_grad must be a bool"))
        raise Unsupported("store_attr", "pdyn sets requires_grad only to a bool it knows", loc=tx.loc())
    flag = value.as_python_constant()
    example = x.example
    if x.node.op == "placeholder" and example.requires_grad:  # leaf-ness of an input is not guarded
        raise Unsupported("tensor_attr", "pdyn does not guard whether an input requiring grad is a leaf",
                          loc=tx.loc())
    if not example.is_leaf:
        hint = "" if flag else (" If you want to use a computed variable in a subgraph that doesn't require "
                                "differentiation use var_no_grad = var.detach().")
        raise UserException(RuntimeError("you can only change requires_grad flags of leaf variables." + hint))
    if flag and not (example.dtype.is_floating_point or example.dtype.is_complex):
        raise UserException(RuntimeError("only Tensors of floating point and complex dtype can require gradients"))
    x.call_method(tx, "requires_grad_", [ConstantVariable(flag)], {})


def _is_int_data(x: TensorVariable) -> bool:
    """An integer tensor whose element count is static: `.item()` / `.tolist()` give unbacked
    symbols (a float or bool value is for Python to read, and breaks the graph)."""
    dtype = x.example.dtype
    return not dtype.is_floating_point and not dtype.is_complex and dtype is not torch.bool \
        and x.example.dim() <= 1


def _size(tx: Tracer, x: TensorVariable, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    dim = args[0] if args else kwargs.get("dim")
    if dim is None:
        return x.shape_vt(tx)
    return x.size_item(tx, int(_static_int(tx, dim, "the dim of Tensor.size()")))


def _static_int(tx: Tracer, vt: VariableTracker, why: str) -> Any:
    if isinstance(vt, SymIntVariable):
        return vt.value_read(why, tx.loc())
    return vt.as_python_constant()


def _strides(tx: Tracer, x: TensorVariable, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    dim = args[0] if args else kwargs.get("dim")
    d = None if dim is None else int(_static_int(tx, dim, "a dim"))
    ndim = len(x.sizes)
    if d is not None and (not -ndim <= d < max(ndim, 1) or not ndim):
        raise UserException(IndexError(f"Dimension out of range (expected to be in range of "
                                       f"[{-ndim}, {ndim - 1}], but got {d})"))
    exprs = determined_strides(tx.ctx.shape_env, x.node, tuple(x.sizes), None if d is None else d % ndim, tx.loc())
    if exprs is not None:  # the sizes decide the strides: symbolic, nothing specialized
        strides = [x.stride_item(tx, i, s) for i, s in enumerate(exprs)]
        return TupleVariable(strides) if d is None else strides[d % ndim]
    x.value_read_layout(tx, "Tensor.stride(), which depends on every size")
    dim = args[0] if args else kwargs.get("dim")
    _trusted_strides(tx, x, "stride", None if dim is None else _static_int(tx, dim, "a dim"))
    return tx.wrap_constant(x.example.stride() if dim is None else x.example.stride(_static_int(tx, dim, "a dim")))


def _trusted_strides(tx: Tracer, x: TensorVariable, name: str, dim: int | None = None) -> None:
    """Fake kernels promise an op's strides only for dims of size > 1 (torch's own cross-checks
    ignore the rest, and `x.t() * 2` differs there): such a read of an op's result runs eagerly."""
    ndim = x.example.dim()
    sizes = list(x.example.shape) if dim is None else [x.example.shape[dim]] if -ndim <= dim < ndim else []
    if x.node.op != "placeholder" and any(s <= 1 for s in sizes):
        raise Unsupported("layout_read", f"Tensor.{name}() of an op's result with a dim of size 0 or 1, "
                          "which the fake run does not know as eager does", loc=tx.loc())


def _layout_query(name: str) -> Callable[..., VariableTracker]:
    """`is_contiguous()` and kin answer from strides; an input's own default contiguity is guarded
    by its TensorGuard already."""
    def query(tx: Tracer, x: TensorVariable, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        fmt = kwargs.get("memory_format", args[0] if args else None)
        default = fmt is None or (fmt.is_python_constant() and fmt.as_python_constant() is torch.contiguous_format)
        if not (name == "is_contiguous" and default and x.node.op == "placeholder"):
            x.value_read_layout(tx, f"Tensor.{name}(), which depends on the strides")
        if name == "dim_order":
            _trusted_strides(tx, x, name)
        return tx.output.call("call_method", name, [x, *args], kwargs, loc=tx.loc())
    return query


# Tensor methods whose rule lives in a later module (`numpy`: numpy_functions.py), (tx, tensor, args, kwargs)
METHOD_RULES: dict[str, Callable[..., VariableTracker]] = {}
SHAPE_METHODS: dict[str, Callable[..., VariableTracker]] = {
    "is_contiguous": _layout_query("is_contiguous"),
    "is_non_overlapping_and_dense": _layout_query("is_non_overlapping_and_dense"),
    "dim_order": _layout_query("dim_order"),
    "size": _size,
    "numel": lambda tx, x, args, kwargs: x.numel_vt(tx),
    "nelement": lambda tx, x, args, kwargs: x.numel_vt(tx),
    "dim": lambda tx, x, args, kwargs: ConstantVariable(len(x.sizes)),
    "ndimension": lambda tx, x, args, kwargs: ConstantVariable(len(x.sizes)),
    "__len__": lambda tx, x, args, kwargs: x.length(tx),
    "stride": _strides,
}


class TensorUnboundMethodVariable(ObjectConstantVariable):
    """A method taken from the class (`torch.Tensor.add`), called with the tensor first."""

    def __init__(self, value: Any):
        super().__init__(value)
        self.name: str = value.__name__

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if not args or not isinstance(args[0], TensorVariable):
            raise Unsupported("tensor_method", f"pdyn traces Tensor.{self.name}() only with a tensor as self",
                              loc=tx.loc())
        return args[0].call_method(tx, self.name, list(args[1:]), kwargs)


def is_tensor_method(value: Any) -> bool:
    """`value` is a method of torch.Tensor looked up on the class (C or Python)."""
    name = getattr(value, "__name__", None)
    if not isinstance(name, str) or not callable(value) or isinstance(value, type):
        return False
    try:
        return getattr(torch.Tensor, name, None) is value or getattr(torch._C.TensorBase, name, None) is value
    except Exception:  # a descriptor that fails on the class
        return False


def wrap_fx_result(output: OutputGraph, node: torch.fx.Node, example: Any, sources: frozenset[Source],
                   sizes: list[tuple[sympy.Expr, ...]] | None,
                   wrap_constant: Callable[[Any], VariableTracker]) -> VariableTracker:
    """The tracker for an op's result: tensors keep `node`; tuples get one getitem node per item,
    other items `wrap_constant`. `sizes` holds the symbolic sizes of the tensor outputs, in order."""
    pending = list(sizes) if sizes else []

    def next_sizes() -> tuple[sympy.Expr, ...] | None:
        return pending.pop(0) if pending else None

    if isinstance(example, torch.Tensor):
        return TensorVariable(node, example, input_sources=sources, sizes=next_sizes())
    if isinstance(example, (tuple, list)):
        items: list[VariableTracker] = []
        for i, value in enumerate(example):
            if isinstance(value, torch.Tensor):
                items.append(TensorVariable(output.getitem_node(node, i), value, input_sources=sources,
                                            sizes=next_sizes()))
            else:
                items.append(wrap_constant(value))
        fields = getattr(type(example), "_fields", None) or getattr(type(example), "__match_args__", None)
        if fields and type(example) not in (tuple, list):
            return NamedTupleVariable(items, type(example), tuple(fields))
        return ListVariable(items) if isinstance(example, list) else TupleVariable(items)
    if example is None:
        return ConstantVariable(None)
    raise Unsupported("op_result", f"pdyn cannot represent an op result of type {type(example).__name__}")


class NamedTupleVariable(TupleVariable):
    """A structseq such as torch.return_types.max: a tuple whose items also have names."""

    def __init__(self, items: list[VariableTracker], tuple_type: type, fields: tuple[str, ...]):
        super().__init__(items)
        self.tuple_type = tuple_type
        self.fields = fields

    def python_type(self) -> type:
        return self.tuple_type

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name in self.fields:
            return self.items[self.fields.index(name)]
        return super().getattr(tx, name)

    def reconstruct(self, codegen: FrameCodegen) -> str:
        items = ", ".join(codegen.reconstruct(i) for i in self.items)
        return f"{codegen.constant(self.tuple_type, 'structseq')}(({items},))"
