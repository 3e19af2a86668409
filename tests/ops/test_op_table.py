"""The op table (pdyn/ops): spellings meet in one row, the table is complete for everything the
tracer can record, and the facts read from it (mutation, refusal) reach the tracer and backends."""

from __future__ import annotations

import inspect
import math
import operator

import pytest
import torch
import torch.fx
import torch.nn.functional as F

import pdyn
from pdyn.ops import effects as op_effects
from pdyn.shapes import sym_float
from pdyn.backends.triton.fallbacks import reason
from pdyn.backends.triton.lowering import LOWERINGS
from pdyn.base.errors import Unsupported
from pdyn.bytecode.instructions import BINARY_OPS, COMPARE_OPS
from pdyn.ops import OPS, canonical, in_place_operator, op_of, plain_operator
from pdyn.ops.shape_rules import RULES
from pdyn.trace.variables.values.symint import SYMPY_OPS, UNARY_FLOAT_OPS, UNARY_SYMPY_OPS


def _tracer_targets() -> list:
    """Every callable a tracer path (not a torch function by name) can put on a node."""
    binary = [fn for fn, _ in BINARY_OPS.values()]
    return [*binary, *(in_place_operator(fn) for fn in binary), *COMPARE_OPS.values(),
            operator.neg, operator.invert, operator.pos, operator.getitem, operator.setitem, getattr,
            *SYMPY_OPS, *UNARY_SYMPY_OPS, *UNARY_FLOAT_OPS, *sym_float.BINARY, *sym_float.UNARY]


def test_spellings_of_one_op_meet_in_one_row():
    assert canonical(operator.add) is canonical(torch.add) is canonical("add") is canonical("__radd__")
    xor_ = canonical("bitwise_xor_")
    assert canonical(operator.ixor) is xor_ and canonical("__ixor__") is xor_
    assert canonical(torch.Tensor.bitwise_xor_) is xor_ and canonical(torch.Tensor.__ixor__) is xor_
    assert canonical(operator.truediv) is canonical(torch.div) is canonical("__truediv__")
    assert canonical("__rsub__") is not canonical("sub")  # `2 - x` is not `x - 2`
    assert canonical(F.embedding) is not canonical(torch.embedding)  # (input, weight) vs (weight, indices)


def test_every_in_place_spelling_writes_its_first_argument():
    """The bug class of `y ^= 3` under Triton: a spelling of a write that some table forgot."""
    operators = [getattr(operator, n) for n in dir(operator) if n.startswith("i") and hasattr(operator, n[1:])]
    dunders = [n for n in dir(torch.Tensor) if n.startswith("__i") and hasattr(torch.Tensor, "__" + n[3:])]
    methods = [n for n in dir(torch.Tensor) if n.endswith("_") and not n.startswith("_")]
    assert len(operators) >= 12 and len(dunders) >= 12 and len(methods) > 100
    assert [t for t in operators + dunders + methods if canonical(t).mutates != 0] == []
    assert canonical(operator.setitem).mutates == 0 and canonical("__setitem__").mutates == 0


def test_pure_spellings_write_nothing():
    pure = [operator.add, operator.and_, operator.or_, torch.add, "add", "__and__", F.relu, "view", operator.getitem]
    assert [t for t in pure if canonical(t).mutates is not None] == []


def test_table_is_complete_for_what_the_tracer_records():
    """Every row a shape rule or a tracer path can put on a node is declared, and the Triton backend
    lowers it or says why torch runs it."""
    recordable = set(RULES) | {canonical(t) for t in _tracer_targets()}
    assert [op for op in recordable if not op.declared] == []
    assert [op.name for op in OPS.values() if op not in LOWERINGS and reason(op) is None] == []
    assert [op.name for op in LOWERINGS if reason(op) is not None and op.mutates is None] == []


def test_rows_nobody_declared_are_derived():
    normal = canonical(torch.nn.init.normal_)
    assert not normal.declared and normal.mutates == 0 and normal.draws_random
    assert canonical(torch.ops.aten.add_.Tensor).mutates == 0
    assert canonical(torch.ops.aten.add.Tensor).mutates is None
    assert canonical(torch.cuda.synchronize).refused is not None
    assert canonical(torch.sin).refused is None


def test_python_operator_relations():
    assert in_place_operator(operator.xor) is operator.ixor and in_place_operator(operator.and_) is operator.iand
    assert plain_operator(operator.ixor) is operator.xor and plain_operator(operator.iadd) is operator.add
    assert plain_operator(operator.setitem) is operator.setitem and plain_operator(math.floor) is math.floor


def test_recorded_nodes_carry_their_row():
    graphs = []

    def capture(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def f(x):
        y = x + 1
        y ^= 3
        return torch.bitwise_xor(y, 1).sum()

    pdyn.optimize(f, backend=capture)(torch.arange(6, dtype=torch.int32))
    calls = [n for n in graphs[0].graph.nodes if n.op in ("call_function", "call_method")]
    assert [n.meta["op"].name for n in calls] == ["add", "bitwise_xor_", "bitwise_xor", "sum"]
    assert all(op_of(n) is canonical(n.target) for n in calls)
    assert [op_effects.mutates(n) for n in calls] == [False, True, False, False]


def test_refusals_come_from_the_table():
    def item(x):
        return x.sum().item()

    def backward(x):
        x.backward()
        return x

    def sync(x):
        torch.cuda.synchronize()
        return x

    for fn, kind in ((item, "data_dependent"), (backward, "tensor_method"), (sync, "torch_function")):
        with pytest.raises(Unsupported) as e:
            pdyn.optimize(fn, fullgraph=True)(torch.ones(3))
        assert e.value.key == kind


def test_a_dropout_traced_in_eval_draws_no_random_numbers():
    """An eval-mode dropout is the identity: the frame code need not save the generator's state."""
    from pdyn.ops.effects import draws_random

    def f(x, training):
        return F.dropout(x, 0.1, training), torch.dropout(x, 0.1, train=training), F.alpha_dropout(x, 0.2, training)

    for training in (False, True):
        gm = torch.fx.symbolic_trace(lambda x: f(x, training))
        drops = [n for n in gm.graph.nodes if n.op == "call_function"]
        assert drops and all(draws_random(n) is training for n in drops), [(n.target, n.args, n.kwargs) for n in drops]


def test_attention_draws_random_numbers_only_with_a_dropout_probability():
    """scaled_dot_product_attention is tagged as seeded; with dropout_p == 0 (every model in eval)
    it draws nothing, so the frame code saves no generator state and CUDA graphs may capture it."""
    from pdyn.ops.effects import draws_random

    for p, draws in ((0.0, False), (0, False), (0.1, True)):
        gm = torch.fx.symbolic_trace(lambda q: F.scaled_dot_product_attention(q, q, q, dropout_p=p))
        (node,) = [n for n in gm.graph.nodes if n.op == "call_function"]
        assert draws_random(node) is draws
    gm = torch.fx.symbolic_trace(lambda q: F.scaled_dot_product_attention(q, q, q, None, 0.2))
    assert [draws_random(n) for n in gm.graph.nodes if n.op == "call_function"] == [True]

    def f(q):
        return F.scaled_dot_product_attention(q, q, q, dropout_p=0.0) * 2

    opt = pdyn.optimize(f, backend="eager")
    q = torch.randn(1, 2, 4, 8)
    torch.testing.assert_close(opt(q), f(q))
    assert "rng = None" in opt._pdyn_frame.cache.entries[0].frame_source


# Ops a traced call records without a shape rule: their sizes specialize (a model calling one
# recompiles per size; the recompile policy then breaks). A rule added removes its name here.
F_WITHOUT_RULE = {"avg_pool3d", "bilinear", "channel_shuffle", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d", "elu_", "hardtanh_", "leaky_relu_", "native_channel_shuffle", "pdist",
                  "prelu", "rrelu_", "threshold_"}
TENSOR_WITHOUT_RULE = set("""addbmm addr adjoint allclose aminmax argwhere as_strided_scatter bernoulli bincount cdouble
chalf cholesky cholesky_inverse cholesky_solve conj_physical corrcoef cov cross det diag diag_embed diagflat diagonal
diagonal_scatter dist dsplit equal frexp geqrf get_device hash_tensor histogram hsplit index_put index_reduce inner
inverse kron logdet lu_solve masked_scatter masked_select matrix_exp matrix_power msort mtia multinomial nanquantile
narrow_copy nonzero nonzero_static numel orgqr ormqr pinverse prelu put qr qscheme quantile ravel renorm resolve_conj
resolve_neg select_scatter slice_inverse slice_scatter slogdet smm sspaddmm svd take tensor_split trace
triangular_solve unsafe_chunk unsafe_split unsafe_split_with_sizes vsplit xpu""".split())
NOT_OPS = ("has_torch_function",)   # torch's dispatch helpers, re-exported by F
SPARSE_OR_QUANTIZED = ("sparse", "q_", "to_", "is_", "indices", "values", "coalesce", "dequantize", "int_repr", "crow",
                       "col", "ccol", "row_")


def _without_rule(names: list[str], namespace: object) -> set[str]:
    """Of `names` in `namespace`: the C functions (Python ones are traced through) whose row has no
    shape rule and that tracing does not refuse."""
    out = set()
    for name in names:
        fn = getattr(namespace, name)
        if inspect.isfunction(fn) or inspect.isclass(fn) or getattr(fn, "__module__", None) == "typing":
            continue
        op = canonical(name if namespace is torch.Tensor else fn)
        if op.refused is None and op not in RULES:
            out.add(name)
    return out


def test_the_ops_of_torch_nn_functional_and_common_tensor_methods_without_a_shape_rule_are_listed():
    functional = [n for n in dir(F) if not n.startswith("_") and callable(getattr(F, n)) and not n.startswith(NOT_OPS)]
    methods = [n for n in dir(torch.Tensor) if not n.startswith("_") and not n.endswith("_") and hasattr(torch, n)
               and callable(getattr(torch.Tensor, n)) and not n.startswith(SPARSE_OR_QUANTIZED)]
    assert _without_rule(functional, F) == F_WITHOUT_RULE
    assert _without_rule(methods, torch.Tensor) == TENSOR_WITHOUT_RULE
