"""Run-time support for generated wrappers: loading kernel modules (cached per source text in
process and on disk), Triton's interpreter where there is no GPU, launch-time choices (persistent or
looped reduction, 32- or 64-bit indexing, block sizes) and calls into torch.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import torch.fx

_MODULES: dict[str, ModuleType] = {}
_LOCK = threading.Lock()
INT32_MAX = 2**31 - 1
PERSISTENT_MAX = 4096  # reduced elements that one block holds in registers


def use_interpreter() -> bool:
    """Triton's interpreter runs the kernels on CPU tensors where there is no GPU."""
    return not torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET") == "1"


def prepare_interpreter() -> None:
    """Triton's library functions (tl.sum, tl.sigmoid, ...) are interpreted only if TRITON_INTERPRET
    was set when triton was imported. Set it if triton is not imported yet; otherwise let a jit
    function called inside an interpreted kernel run interpreted too."""
    if "triton" not in sys.modules:
        os.environ["TRITON_INTERPRET"] = "1"
        return
    from triton.runtime import interpreter, jit

    if getattr(jit.JITFunction, "_pdyn_interpreted", False):
        return
    cache: dict[Any, Any] = {}

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.fn not in cache:
            cache[self.fn] = interpreter.InterpretedFunction(self.fn)
        return cache[self.fn](*args, **kwargs)

    jit.JITFunction.__call__ = call
    jit.JITFunction._pdyn_interpreted = True


def cache_dir() -> Path:
    root = os.environ.get("PDYN_CACHE_DIR") or os.path.join(tempfile.gettempdir(), f"pdyn_{os.getuid()}")
    path = Path(root) / "triton"
    path.mkdir(parents=True, exist_ok=True)
    return path


def load_kernel(source: str, interpret: bool) -> ModuleType:
    """Import the module holding `source`; written once under the cache dir (Triton reads kernel
    source from files, and its own cache then finds the compiled binary in a later process)."""
    key = hashlib.sha256(f"{interpret}\n{source}".encode()).hexdigest()[:32]
    with _LOCK:
        if key in _MODULES:
            return _MODULES[key]
        path = cache_dir() / f"k{key}.py"
        if not path.exists():
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(source)
            os.replace(tmp, path)  # NOTE: atomic, so a concurrent process never reads half a file
        module = _import(path, f"pdyn_kernel_{key}", interpret)
        _MODULES[key] = module
        return module


def _import(path: Path, name: str, interpret: bool) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # triton.jit reads TRITON_INTERPRET when it decorates, so it is set only while importing
    previous = os.environ.get("TRITON_INTERPRET")
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    try:
        spec.loader.exec_module(module)
    finally:
        if previous is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = previous
    return module


def next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def cdiv(a: int, b: int) -> int:
    return -(a // -b)


def needs_int64(numel: int, *tensors: torch.Tensor) -> bool:
    """64-bit indexing when an index could pass int32: the iteration space or any buffer's extent."""
    if numel > INT32_MAX:
        return True
    for t in tensors:
        extent = 1 + sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride()) if n > 0)
        if extent > INT32_MAX:
            return True
    return False


def launch_pointwise(module: ModuleType, args: tuple[Any, ...], xnumel: int, xblock: int,
                     tensors: tuple[torch.Tensor, ...]) -> None:
    if xnumel <= 0:
        return
    warps = 4 if xblock <= 512 else 8
    module.kernel[(cdiv(xnumel, xblock),)](*args, xnumel, XBLOCK=xblock,
                                           INDEX64=needs_int64(xnumel, *tensors), num_warps=warps)


def launch_reduction(module: ModuleType, args: tuple[Any, ...], xnumel: int, rnumel: int,
                     inner: bool, looped_blocks: tuple[int, int],
                     tensors: tuple[torch.Tensor, ...]) -> None:
    """Persistent when the actual reduced extent fits one block, looped otherwise."""
    if xnumel <= 0:
        return
    index64 = needs_int64(xnumel * max(rnumel, 1), *tensors)
    if rnumel <= PERSISTENT_MAX:
        rblock = next_pow2(max(rnumel, 1))
        xblock = max(1, min(64 if not inner else 32, 4096 // rblock))
        kernel = module.kernel_persistent
    else:
        xblock, rblock = looped_blocks
        kernel = module.kernel_looped
    warps = min(max(xblock * rblock // 256, 1), 8)
    kernel[(cdiv(xnumel, xblock),)](*args, xnumel, rnumel, XBLOCK=xblock, RBLOCK=rblock,
                                    INDEX64=index64, num_warps=warps)


def pointwise_block(numel_hint: int) -> int:
    return max(128, min(1024, next_pow2(numel_hint)))


def looped_blocks(inner: bool, xnumel_hint: int) -> tuple[int, int]:
    """(XBLOCK, RBLOCK) for the looped variant: rows share a long r loop (inner), or columns load
    contiguously along x (outer)."""
    if inner:
        return 1, 2048
    xblock = max(8, min(64, next_pow2(max(xnumel_hint // 256, 1))))
    return xblock, max(16, 2048 // xblock)


def contiguous(t: Any) -> Any:
    return t.contiguous() if isinstance(t, torch.Tensor) and not t.is_contiguous() else t


class TorchOp:
    """One fx node run with torch: `values` replace the node's input nodes in order."""

    def __init__(self, node: torch.fx.Node, gm: torch.fx.GraphModule, target: Any = None,
                 args: Any = None, kwargs: Any = None) -> None:
        self.inputs = list(node.all_input_nodes)
        self.op = node.op
        self.target = node.target if target is None else target
        self.args = node.args if args is None else args
        self.kwargs = node.kwargs if kwargs is None else kwargs
        if self.op == "get_attr":
            self.target = _fetch_attr(gm, node.target)
        if target is not None:
            self.op = "call_function"

    def __call__(self, *values: Any) -> Any:
        if self.op == "get_attr":
            return self.target
        env = dict(zip(self.inputs, values))
        args = torch.fx.node.map_arg(self.args, env.__getitem__)
        kwargs = torch.fx.node.map_arg(self.kwargs, env.__getitem__)
        if self.op == "call_method":
            return getattr(args[0], self.target)(*args[1:], **kwargs)
        if self.op == "call_module":
            raise NotImplementedError("call_module nodes run eagerly")
        return self.target(*args, **kwargs)


def _fetch_attr(gm: torch.fx.GraphModule, target: str) -> Any:
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj
