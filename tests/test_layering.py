"""The declared layering of pdyn, checked on the imports of every module under pdyn/ (read with `ast`).

`LAYERS` names each layer and the module prefixes it holds; `ALLOWED` lists, per layer, the
layers it may import. The test fails on an import that no arrow allows, on a cycle between
layers, on a module that belongs to no layer, and on a function-level import in the tracer
(`NO_LAZY_IMPORTS`). Imports under `if TYPE_CHECKING:` are annotations only: they are not arrows.
When modules move into packages, update the prefixes here; the rules stay.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pdyn"

# trace/variables/ by kind of value, bottom to top: each layer may import the layers below it (and
# what `variables_below` allows outside). A few modules sit apart from their folder's layer, each
# for the reason given.
VARIABLES: list[tuple[str, tuple[str, ...]]] = [
    ("variables.core", ("pdyn.trace.variables.base", "pdyn.trace.variables.registry", "pdyn.trace.variables.restart")),
    ("variables.values", ("pdyn.trace.variables.values",)),
    ("variables.containers", ("pdyn.trace.variables.containers",)),
    ("variables.iterators", ("pdyn.trace.variables.iterators",)),
    ("variables.functions", ("pdyn.trace.variables.functions",)),
    ("variables.torch", ("pdyn.trace.variables.torch",)),
    # an exception's fields are read by every user object's getattr
    ("variables.exception_fields", ("pdyn.trace.variables.exceptions.exc_fields",)),
    ("variables.objects", ("pdyn.trace.variables.objects",)),
    ("variables.exceptions", ("pdyn.trace.variables.exceptions",)),
    ("variables.semantics", ("pdyn.trace.variables.semantics",)),
    ("variables.builtins", ("pdyn.trace.variables.builtins",)),
    ("variables.stdlib", ("pdyn.trace.variables.stdlib",)),
    ("variables.contexts", ("pdyn.trace.variables.contexts",)),
    # a Function subclass is a class the trace can call (ClassVariable, in builtins)
    ("variables.autograd_function", ("pdyn.trace.variables.torch.autograd_function",)),
    ("variables", ("pdyn.trace.variables",)),  # builder: a value to its tracker
]
VARIABLE_LAYERS = frozenset(layer for layer, _ in VARIABLES)
OUTSIDE_VARIABLES = frozenset({"context", "guards", "ops", "shapes", "sources", "base"})


def variables_below(layer: str) -> frozenset[str]:
    """What a layer of trace/variables/ may import: the layers below it, and the layers under trackers."""
    names = [name for name, _ in VARIABLES]
    return frozenset(names[:names.index(layer)]) | OUTSIDE_VARIABLES


# layer -> module prefixes (a prefix matches the module itself and everything under it)
LAYERS: dict[str, tuple[str, ...]] = {
    "face": ("pdyn.__init__", "pdyn.explain", "pdyn.debug", "pdyn.controls", "pdyn.report"),
    "hook": ("pdyn.hook",),
    "translator": ("pdyn.trace",),  # translator, output_graph, frame_codegen; the rest of trace/ below
    "handlers": ("pdyn.trace.handlers",),
    **{layer: prefixes for layer, prefixes in VARIABLES},
    "context": ("pdyn.trace.context",),
    "bytecode": ("pdyn.bytecode",),
    "guards": ("pdyn.guards",),
    "backends": ("pdyn.backends",),
    "ops": ("pdyn.ops",),
    "shapes": ("pdyn.shapes",),
    "sources": ("pdyn.sources",),
    "base": ("pdyn.base",),
}
# layer -> the layers it may import (its own layer always)
ALLOWED: dict[str, frozenset[str]] = {
    "face": frozenset({"hook", "backends", "guards", "shapes", "sources", "base"}),
    "hook": frozenset({"translator", "handlers", *VARIABLE_LAYERS, "context", "bytecode", "guards", "backends", "ops",
                       "shapes", "sources", "base"}),
    "translator": frozenset({"handlers", *VARIABLE_LAYERS, "context", "bytecode", "guards", "ops", "shapes", "sources",
                             "base"}),
    "handlers": frozenset({*VARIABLE_LAYERS, "context", "bytecode", "guards", "ops", "shapes", "sources", "base"}),
    **{layer: variables_below(layer) for layer in VARIABLE_LAYERS},
    "context": frozenset({"guards", "shapes", "sources", "base"}),
    "bytecode": frozenset({"base"}),
    "guards": frozenset({"shapes", "sources", "base"}),
    "backends": frozenset({"guards", "ops", "shapes", "sources", "base"}),
    "ops": frozenset({"shapes", "sources", "base"}),
    "shapes": frozenset({"sources", "base"}),
    "sources": frozenset({"base"}),
    "base": frozenset(),
}
# layers whose modules import only at module level: no import inside a function
NO_LAZY_IMPORTS = frozenset({"translator", "handlers", *VARIABLE_LAYERS, "context"})


@dataclass(frozen=True)
class Import:
    importer: str      # the importing module, e.g. pdyn.trace.variables.builder
    imported: str      # the imported pdyn module, e.g. pdyn.trace.variables.torch.tensor
    where: str         # file:line
    lazy: bool         # inside a function

    def __str__(self) -> str:
        kind = "function-level import of" if self.lazy else "imports"
        return f"{self.where}: {self.importer} {kind} {self.imported}"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1]) if parts[-1] == "__init__" and len(parts) > 1 and parts[:-1] != ("pdyn",) \
        else ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> list[str]:
    """The pdyn modules an import statement loads (`from pdyn.x import y` loads pdyn.x.y if that is one)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = _resolve(node, module, is_package)
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
    return [n for n in names if n == "pdyn" or n.startswith("pdyn.")]


def imports_of(text: str, module: str, path: str, is_package: bool, known: set[str]) -> list[Import]:
    """The pdyn imports of one module's source, skipping `if TYPE_CHECKING:` blocks."""
    found: list[Import] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    visit(sub, lazy)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in _targets(child, module, is_package, known):
                    found.append(Import(module, target, f"{path}:{child.lineno}", lazy))
                continue
            visit(child, lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(text, path), False)
    return found


def read_imports() -> tuple[list[Import], set[str]]:
    files = sorted(PACKAGE.rglob("*.py"))
    known = {module_name(f) for f in files}
    found: list[Import] = []
    for path in files:
        found += imports_of(path.read_text(), module_name(path), str(path.relative_to(ROOT)),
                            path.name == "__init__.py", known)
    return found, known


def layer_of(module: str) -> str | None:
    if module == "pdyn":
        module = "pdyn.__init__"
    best: tuple[int, str] | None = None
    for layer, prefixes in LAYERS.items():
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), layer)
    return best[1] if best else None


IMPORTS, MODULES = read_imports()


def test_the_layering_data_is_consistent():
    assert set(ALLOWED) == set(LAYERS), set(ALLOWED) ^ set(LAYERS)
    for layer, targets in ALLOWED.items():
        assert targets <= set(LAYERS), f"{layer} allows unknown layers {targets - set(LAYERS)}"


def test_every_module_belongs_to_a_layer():
    orphans = sorted(m for m in MODULES if layer_of(m) is None)
    assert not orphans, "modules in no layer (add them to LAYERS in tests/test_layering.py):\n  " + \
        "\n  ".join(orphans)


def forbidden(imports: list[Import]) -> list[str]:
    """Each import no arrow of `ALLOWED` permits, as `file:line: a imports b  (layer -> layer ...)`."""
    bad = []
    for imp in imports:
        source, target = layer_of(imp.importer), layer_of(imp.imported)
        if source is None or target is None or source == target:
            continue
        if target not in ALLOWED[source]:
            bad.append(f"{imp}  ({source} -> {target} is not allowed)")
    return bad


def test_no_import_crosses_a_forbidden_arrow():
    bad = forbidden(IMPORTS)
    assert not bad, "imports the layering forbids:\n  " + "\n  ".join(bad)


def test_a_tracker_importing_a_handler_is_reported_with_its_line():
    imports = imports_of("from pdyn.trace.handlers.ops import binary_op\nfrom pdyn.base.errors import Unsupported\n",
                         "pdyn.trace.variables.probe", "pdyn/variables/probe.py", False, set(MODULES))
    assert forbidden(imports) == ["pdyn/variables/probe.py:1: pdyn.trace.variables.probe imports pdyn.trace.handlers.ops  "
                                  "(variables -> handlers is not allowed)"]


def _layer_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle in the layer graph, as a path, or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def dfs(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := dfs(nxt)) is not None:
                return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(edges):
        if node not in state and (found := dfs(node)) is not None:
            return found
    return None


def test_no_cycle_between_layers():
    edges: dict[str, set[str]] = {}
    witness: dict[tuple[str, str], Import] = {}
    for imp in IMPORTS:
        source, target = layer_of(imp.importer), layer_of(imp.imported)
        if source and target and source != target:
            edges.setdefault(source, set()).add(target)
            witness.setdefault((source, target), imp)
    cycle = _layer_cycle(edges)
    assert cycle is None, "layers import each other in a cycle: " + " -> ".join(cycle) + "\n  " + \
        "\n  ".join(str(witness[(a, b)]) for a, b in zip(cycle, cycle[1:]))


def test_the_declared_layers_have_no_cycle():
    assert _layer_cycle({layer: set(targets) for layer, targets in ALLOWED.items()}) is None


def test_no_function_level_import_in_the_tracer():
    lazy = [str(imp) for imp in IMPORTS if imp.lazy and layer_of(imp.importer) in NO_LAZY_IMPORTS]
    assert not lazy, "function-level imports in the tracer:\n  " + "\n  ".join(lazy)


def test_variables_never_import_handlers_or_the_translator():
    bad = [str(imp) for imp in IMPORTS if layer_of(imp.importer) in VARIABLE_LAYERS
           and layer_of(imp.imported) in ("handlers", "translator")]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("source, imported, lazy", [
    ("from pdyn.trace.translator import handler\n", ["pdyn.trace.translator"], False),
    ("import pdyn.trace.handlers\n", ["pdyn.trace.handlers"], False),
    ("def f():\n    from pdyn.trace.variables import builder\n", ["pdyn.trace.variables.builder"], True),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pdyn.trace.output_graph import OutputGraph\n", [], False),
    ("from ....base.errors import Unsupported\nfrom . import tensor\n", ["pdyn.base.errors", "pdyn.trace.variables.torch.tensor"], False),
])
def test_the_reader_sees_imports_as_python_resolves_them(source, imported, lazy):
    found = imports_of(source, "pdyn.trace.variables.torch.probe", "probe.py", False, set(MODULES))
    assert [i.imported for i in found] == imported
    assert all(i.lazy == lazy for i in found)


def test_every_kind_of_tracker_has_its_layer():
    """A new sub-package of trace/variables/ is declared in VARIABLES, not left to the builder's layer."""
    undeclared = sorted(m for m in MODULES if layer_of(m) == "variables" and m != "pdyn.trace.variables.builder")
    assert not undeclared, "modules of trace/variables/ in no layer of VARIABLES:\n  " + "\n  ".join(undeclared)


@pytest.mark.parametrize("importer, imported, allowed", [
    ("pdyn.trace.variables.values.probe", "pdyn.trace.variables.containers.core", False),
    ("pdyn.trace.variables.containers.probe", "pdyn.trace.variables.values.constant", True),
    ("pdyn.trace.variables.objects.probe", "pdyn.trace.variables.builtins", False),
    ("pdyn.trace.variables.exceptions.exc_fields", "pdyn.trace.variables.objects.user_objects", False),
    ("pdyn.trace.variables.objects.user_objects", "pdyn.trace.variables.exceptions.exc_fields", True),
    ("pdyn.trace.variables.contexts.probe", "pdyn.trace.variables.builder", False),
])
def test_a_kind_of_tracker_imports_only_the_kinds_below_it(importer, imported, allowed):
    imports = [Import(importer, imported, "probe.py:1", False)]
    assert (forbidden(imports) == []) is allowed


def test_the_trace_never_imports_the_hook_not_even_for_annotations():
    """A graph break's frame code is built in trace/breaks/ and handed to hook/, never the reverse."""
    bad = []
    for path in sorted((PACKAGE / "trace").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            bad += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names if n.startswith("pdyn.hook")]
    assert not bad, "trace/ imports hook/:\n  " + "\n  ".join(bad)


def test_the_hook_reaches_trackers_only_through_their_base_and_restart():
    """hook/ asks trackers nothing by kind: what a value is to a break is a tracker method."""
    allowed = {"pdyn.trace.variables.base", "pdyn.trace.variables.restart"}
    bad = [str(imp) for imp in IMPORTS if layer_of(imp.importer) == "hook"
           and imp.imported.startswith("pdyn.trace.variables") and imp.imported not in allowed]
    assert not bad, "\n".join(bad)
