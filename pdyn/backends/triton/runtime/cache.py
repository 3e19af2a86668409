"""Kernel modules: written once per source text under the cache dir, imported once per process;
and Triton's interpreter, which runs them on CPU tensors where there is no GPU.
"""

from __future__ import annotations

import hashlib
import linecache
import os
import stat
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from pdyn.base.config import config

_MODULES: dict[str, ModuleType] = {}
_DIRS: dict[Path, Path] = {}  # configured root -> the folder kernels go to
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
    """`config.cache_dir`/triton (PDYN_CACHE_DIR), made private (0700) on first use. A folder that
    another user owns or that group or others may write is not used: anyone who can write there
    could plant a kernel module that this process imports. pdyn warns once and writes its kernels
    into a private temporary folder instead."""
    root = Path(config.cache_dir)
    with _LOCK:
        if root not in _DIRS:
            _DIRS[root] = _private_dir(root)
        return _DIRS[root]


def _private_dir(root: Path) -> Path:
    path = root / "triton"
    try:
        for folder in (root, path):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        problem = _untrusted(root) or _untrusted(path)
    except OSError as e:
        problem = f"cannot be made ({e})"
    if problem is None:
        return path
    fallback = Path(tempfile.mkdtemp(prefix="pdyn_triton_"))  # NOTE: mkdtemp makes it 0700
    warnings.warn(f"pdyn: the kernel cache {path} {problem}; kernels are compiled into {fallback}",
                  RuntimeWarning, stacklevel=3)
    return fallback


def _uid() -> int:
    """This process's user id (a function so that tests can play another user)."""
    return os.getuid()


def _untrusted(folder: Path) -> str | None:
    """Why `folder` must not hold kernels, or None: not a real folder (a link could point anywhere),
    not owned by this user, or writable by group or others."""
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if st.st_uid != _uid():
        return f"is owned by another user (uid {st.st_uid})"
    if st.st_mode & 0o022:
        return f"is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def kernel_path(source: str, interpret: bool) -> Path:
    """Where the module holding `source` is written."""
    return cache_dir() / f"k{_key(source, interpret)}.py"


def _key(source: str, interpret: bool) -> str:
    return hashlib.sha256(f"{interpret}\n{source}".encode()).hexdigest()[:32]


def load_kernel(source: str, interpret: bool) -> ModuleType:
    """Import the module holding `source`; written once under the cache dir (Triton reads kernel
    source from files, and its own cache then finds the compiled binary in a later process).
    The code run is `source` itself, never what the file holds; a file whose text differs is
    rewritten (atomically) so that Triton reads the same text."""
    key = _key(source, interpret)
    with _LOCK:
        if key in _MODULES:
            return _MODULES[key]
    path = kernel_path(source, interpret)
    with _LOCK:
        if key in _MODULES:
            return _MODULES[key]
        if _read(path) != source:
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(source)
            os.replace(tmp, path)  # NOTE: atomic, so a concurrent process never reads half a file
        module = _import(path, source, f"pdyn_kernel_{key}", interpret)
        _MODULES[key] = module
        return module


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _import(path: Path, source: str, name: str, interpret: bool) -> ModuleType:
    """Run `source` as module `name` whose file is `path`. linecache holds `source` under that
    name, so `inspect.getsource` (Triton's reader of kernel text) sees the text that ran."""
    module = ModuleType(name)
    module.__file__ = str(path)
    linecache.cache[str(path)] = (len(source), None, source.splitlines(True), str(path))
    code = compile(source, str(path), "exec")
    sys.modules[name] = module
    # triton.jit reads TRITON_INTERPRET when it decorates, so it is set only while importing
    previous = os.environ.get("TRITON_INTERPRET")
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    try:
        exec(code, module.__dict__)
    finally:
        if previous is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = previous
    return module
