"""Kernel modules: written once per source text under the cache dir, imported once per process;
and Triton's interpreter, which runs them on CPU tensors where there is no GPU.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from pdyn.base.config import config

_MODULES: dict[str, ModuleType] = {}
_LOCK = threading.Lock()


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
    """`config.cache_dir`/triton (PDYN_CACHE_DIR), made on first use."""
    path = Path(config.cache_dir) / "triton"
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
