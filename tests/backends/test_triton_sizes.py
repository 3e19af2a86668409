"""The Triton backend works in pdyn's symbolic world: it reads the sizes and symbol bindings the
tracer stamped (pdyn/shapes/graph_meta.py), checks nothing the entry's guards check, returns what it
assumes beyond them as guards, and no module of pdyn leans on torch's dynamo or its ShapeEnv."""

from __future__ import annotations

import ast
import pathlib

import sympy
import torch

import pdyn
from pdyn.shapes.graph_meta import SIZES, STRIDES, SYMBOLS
from tests.backends.util import Recorder, check, randn

PDYN = pathlib.Path(pdyn.__file__).parent
FORBIDDEN_MODULES = ("torch._dynamo", "torch.fx.experimental.symbolic_shapes")


def _forbidden_uses(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch":
            names = [f"torch.{node.attr}"]
        else:
            continue
        found += [n for n in names if any(n == m or n.startswith(m + ".") for m in FORBIDDEN_MODULES)]
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch") \
                and any(a.name == "ShapeEnv" for a in node.names):
            found.append(f"{node.module}.ShapeEnv")
    return found


# The uses allowed: the fake run of a trace carries data-dependent sizes as torch SymInts, and a
# custom op's fake kernel runs on torch's unbacked symbols to be read back as a shape rule (vehicles
# only: every size pdyn uses comes from its own ShapeEnv; see pdyn/trace/unbacked.py).
VEHICLE = {"trace/output_graph.py", "ops/shape_rules_custom.py"}


def test_no_module_of_pdyn_uses_torch_dynamo_or_its_shape_env():
    offenders = {str(path.relative_to(PDYN)): uses for path in sorted(PDYN.rglob("*.py"))
                 if (uses := _forbidden_uses(ast.parse(path.read_text())))
                 and str(path.relative_to(PDYN)) not in VEHICLE}
    assert offenders == {}


def test_the_scan_finds_what_it_forbids():
    source = ("import torch._dynamo\nfrom torch.fx.experimental.symbolic_shapes import ShapeEnv\n"
              "from torch._dynamo.source import LocalSource\nx = torch._dynamo.config\n")
    assert len(_forbidden_uses(ast.parse(source))) >= 4


def _compile(fn, *args):
    rec = Recorder()
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return rec(gm, example_inputs)

    compiled = pdyn.optimize(fn, backend=backend)
    compiled(*args)
    return compiled, rec, graphs


def test_nodes_carry_the_tracers_sizes_and_the_graph_its_symbol_bindings():
    _, _, graphs = _compile(lambda x, y: (x * y).sum(0), randn(4, 6), randn(6))
    gm = graphs[0]
    x, y = [n for n in gm.graph.nodes if n.op == "placeholder"]
    s0, s1 = x.meta[SIZES]
    assert all(isinstance(s, sympy.Symbol) for s in (s0, s1))
    assert y.meta[SIZES] == (s1,)  # the broadcast unified y's dim with x's
    assert x.meta[STRIDES] == (s1, 1)  # guarded contiguous
    total = next(n for n in gm.graph.nodes if n.op == "call_method" and n.target == "sum")
    assert total.meta[SIZES] == (s1,)
    bindings = gm.meta[SYMBOLS].bindings
    assert {(b.placeholder, b.dim) for b in bindings.values()} == {(0, 0), (0, 1)}
    assert str(bindings[s1].source) == "L['x']"


def test_the_wrapper_binds_only_the_symbols_it_uses_and_checks_nothing():
    _, rec, _ = _compile(lambda x, y: x * y + 1, randn(4, 6), randn(6))
    source = rec.last.wrapper_source
    assert "a0.shape" in source and "a1.shape" not in source  # y's dim is x's: read once
    assert "is_contiguous" not in source and "_eager" not in source and "if not" not in source
    assert rec.last.assumptions == []


def test_a_dynamic_dim_compiles_once_for_several_sizes():
    rec = check(lambda x: torch.relu(x) * x.size(1), (randn(3, 5),), (randn(4, 7),), (randn(9, 2),),
                compiles=1, kernels=1)
    assert "s1" in rec.last.wrapper_source


def test_int_arguments_bind_from_their_placeholder():
    rec = check(lambda x, n: x[:, :n] * n, (randn(4, 9), 3), (randn(4, 9), 5), (randn(6, 9), 7), compiles=None)
    assert " = a1\n" in rec.last.wrapper_source


def test_a_layout_assumption_is_a_guard_and_breaking_it_recompiles(caplog):
    fn = lambda x: x * 2  # noqa: E731
    rec = Recorder()
    compiled = pdyn.optimize(fn, backend=rec)
    x = randn(6, 4).t()  # not contiguous: stride 1 on dim 0, dims in the order (0, 1)
    torch.testing.assert_close(compiled(x), fn(x))
    (guard,) = rec.last.assumptions
    assert "L['x'].stride(0) == 1" in guard.sentence()
    guards = pdyn.explain(fn, backend="triton")(x).guards
    assert any("stride(0) == 1" in g for g in guards)
    y = randn(8, 6)[:, :4]  # not contiguous either, but stride 1 on dim 1
    with caplog.at_level("INFO", logger="pdyn.recompiles"):
        torch.testing.assert_close(compiled(y), fn(y))
    assert pdyn.stats(compiled)["compiles"] == 2
    logged = " ".join(r.getMessage() for r in caplog.records if r.name == "pdyn.recompiles")
    assert "stride(0) == 1" in logged
    assert rec.last.assumptions[0].unit == (1,)


def test_graphs_not_traced_by_pdyn_run_with_torch():
    from pdyn.backends.triton import triton_backend

    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    compiled = triton_backend(gm, [torch.randn(3)])
    assert compiled.pdyn_triton is None
    torch.testing.assert_close(compiled(torch.ones(3)), torch.full((3,), 2.0))


def test_size_arithmetic_feeding_float_math_and_a_fallback_op_compiles():
    """`x.size(0) / 3` (a float size node) and `x.roll(x.size(0) // 2)` (a size node argument of
    an op the backend leaves to torch): every size node carries its stamps from when it is made."""
    def f(x):
        y = x.size(0) / 3 * x + 1
        return y, x.roll(x.size(0) // 2, 0)

    rec = Recorder()
    compiled = pdyn.optimize(f, backend=rec)
    for n in (5, 6, 9):
        x = randn(n, 3)
        for actual, expected in zip(compiled(x), f(x)):
            torch.testing.assert_close(actual, expected)
    assert len(rec.graphs) == 1 and rec.graphs[0] is not None  # roll has a shape rule: n stays dynamic


def test_a_static_dim_of_size_zero_runs_through_the_kernels():
    def f(x):
        return (x * 2).sum(-1), x + 1

    rec = Recorder()
    compiled = pdyn.optimize(f, backend=rec)
    x = randn(3, 0, 4)
    for actual, expected in zip(compiled(x), f(x)):
        torch.testing.assert_close(actual, expected)
    # lowered: the index math counts the 0 dim as 1 (no modulo by zero), no kernel over 0 elements launches
    assert rec.graphs[0] is not None and rec.last.externs == [] and pdyn.stats()["graphs_on_torch"] == 0
