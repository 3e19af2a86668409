"""The kernel cache cannot be planted: a folder another user owns or others may write is not used,
and a kernel file whose text is not the generated source never runs (issue 27, item 3)."""

from __future__ import annotations

import os
import stat
import warnings

import pytest

import pdyn
from pdyn.backends.triton import runtime
from pdyn.backends.triton.runtime import cache

PLANT = "import builtins\nbuiltins.PDYN_PLANTED = True\nVALUE = 'planted'\n"


def source(tag: str) -> str:
    return f"# pdyn cache trust test {tag}\nVALUE = {tag!r}\n"


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "_DIRS", {})
    monkeypatch.setattr(cache.tempfile, "tempdir", str(tmp_path))  # the fallback folders go here
    monkeypatch.delattr("builtins.PDYN_PLANTED", raising=False)
    with pdyn.config.patch(cache_dir=str(tmp_path / "c")):
        yield tmp_path / "c"
    import builtins
    assert not hasattr(builtins, "PDYN_PLANTED"), "planted code ran"


def test_cache_folder_is_created_private(root):
    folder = runtime.cache_dir()
    assert folder == root / "triton"
    for f in (root, folder):
        assert stat.S_IMODE(os.stat(f).st_mode) == 0o700


def test_a_changed_kernel_file_is_rewritten_and_never_run(root):
    text = source("a")
    path = cache.kernel_path(text, True)
    path.write_text(PLANT)
    module = runtime.load_kernel(text, True)
    assert module.VALUE == "a"
    assert path.read_text() == text


def test_a_world_writable_folder_is_not_used(root):
    (root / "triton").mkdir(parents=True)
    os.chmod(root / "triton", 0o777)
    text = source("b")
    planted = root / "triton" / f"k{cache._key(text, True)}.py"
    with pytest.warns(RuntimeWarning, match="writable by group or others"):
        folder = runtime.cache_dir()
    assert folder != root / "triton" and stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    planted.write_text(PLANT)
    assert runtime.load_kernel(text, True).VALUE == "b"
    assert planted.read_text() == PLANT  # untouched, and not read
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once
        assert runtime.cache_dir() == folder


def test_a_folder_owned_by_another_user_is_not_used(root, monkeypatch):
    runtime.cache_dir()  # made by this user
    monkeypatch.setattr(cache, "_DIRS", {})
    monkeypatch.setattr(cache, "_uid", lambda: os.getuid() + 1)
    text = source("c")
    (root / "triton" / f"k{cache._key(text, True)}.py").write_text(PLANT)
    with pytest.warns(RuntimeWarning, match="owned by another user"):
        folder = runtime.cache_dir()
    assert folder != root / "triton"
    assert runtime.load_kernel(text, True).VALUE == "c"


def test_compiled_function_runs_with_a_planted_cache(root):
    """End to end: every kernel file in the cache planted before the first call."""
    import torch
    fn = pdyn.optimize(lambda x: x.sigmoid() * 2 + 1, backend="triton")
    x = torch.randn(5, 3)
    torch.testing.assert_close(fn(x), x.sigmoid() * 2 + 1)
    kernels = list((root / "triton").glob("k*.py"))
    assert kernels
    for k in kernels:
        k.write_text(PLANT)
    cache._MODULES.clear()
    pdyn.reset()
    fn = pdyn.optimize(lambda x: x.sigmoid() * 2 + 1, backend="triton")
    torch.testing.assert_close(fn(x), x.sigmoid() * 2 + 1)
