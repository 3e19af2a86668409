"""Resume and step functions built with `bytecode` (pdyn/bytecode/transform.py): they run as the
original code would from the break on, keep the user's file and lines, and are built once per point.
No torch here, so the file also runs on its own under another Python (`python -m pytest` or directly).
"""

from __future__ import annotations

import traceback
import types

from pdyn.bytecode.transform import (JUMPED, NEXT, ORIGINS, RAISED, ResumePoint, live_locals, original_of, resume_code,
                                     resume_index, step_code, why_not_resumable)
from pdyn.bytecode.instructions import decode


def sample(x, y):
    z = x + 1
    print("z is", z)
    if z > 2:
        w = y * 2
    else:
        w = y
    for i in range(2):
        z = z + i
    return z, w


def raiser(x):
    a = x + 1
    print(a)
    raise ValueError(f"boom {a}")


def in_try(x):
    try:
        print(x)
    except ValueError:
        return 0
    return x


def first(code, opname):
    return next(i for i in decode(code) if i.opname == opname)


def resume(fn, inst, branch, stack):
    start = resume_index(fn.__code__, inst.index, branch)
    names = tuple(sorted(live_locals(fn.__code__, start)))
    point = ResumePoint(fn.__code__, inst.index, branch, stack, names)
    return types.FunctionType(resume_code(point), fn.__globals__), names


def test_live_locals_after_the_print_are_read_before_written():
    call = first(sample.__code__, "CALL")
    assert live_locals(sample.__code__, call.index + 1) == {"y", "z"}


def test_step_function_runs_the_call_and_returns_its_value_and_branch(capsys):
    call = first(sample.__code__, "CALL")
    step = types.FunctionType(step_code(sample.__code__, call, ("null", "value", "value", "value")), {})
    assert step(print, "z is", 5) == (None, NEXT)
    assert capsys.readouterr().out == "z is 5\n"


def test_step_function_of_a_conditional_jump_says_which_way_it_went():
    jump = first(sample.__code__, "POP_JUMP_IF_FALSE")
    step = types.FunctionType(step_code(sample.__code__, jump, ("value",)), {})
    assert step(True) == (NEXT,) and step(False) == (JUMPED,)


def test_resume_after_a_call_runs_the_rest_with_stack_and_locals():
    call = first(sample.__code__, "CALL")
    fn, names = resume(sample, call, NEXT, ("value",))
    assert names == ("y", "z")
    assert fn(None, 1, 5) == sample(4, 1)


def test_resume_function_per_jump_target():
    jump = first(sample.__code__, "POP_JUMP_IF_FALSE")
    taken, names = resume(sample, jump, NEXT, ())
    skipped, _ = resume(sample, jump, JUMPED, ())
    assert names == ("y", "z")
    assert taken(4, 10) == (11, 8) and skipped(4, 10) == (11, 4)


def test_resume_code_is_built_once_per_point_and_maps_back_to_the_user_code():
    call = first(sample.__code__, "CALL")
    point = ResumePoint(sample.__code__, call.index, NEXT, ("value",), ("y", "z"))
    code = resume_code(point)
    assert resume_code(point) is code
    offset = ORIGINS[code][1]
    assert original_of(code, call.index + offset) == (sample.__code__, call.index)
    assert code.co_filename == sample.__code__.co_filename


def test_exception_in_a_resume_function_points_at_the_users_line():
    call = first(raiser.__code__, "CALL")
    fn, _ = resume(raiser, call, NEXT, ("value",))
    try:
        fn(None, 3)
    except ValueError as e:
        assert str(e) == "boom 3"
        last = traceback.extract_tb(e.__traceback__)[-1]
        assert (last.filename, last.lineno) == (__file__, raiser.__code__.co_firstlineno + 3)
    else:
        raise AssertionError("the resume function did not raise")


def in_try_finally(x, log):
    try:
        print(x)
        y = int(x)
    except ValueError:
        log.append("handled")
        y = -1
    finally:
        log.append("finally")
    return y


class Recorder:
    def __init__(self, log, swallow):
        self.log, self.swallow = log, swallow

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.log.append(("exit", exc[0]))
        return self.swallow


def in_with(cm, x):
    with cm:
        y = int(x)
        cm.log.append(y)
    return "after"


def test_a_break_inside_a_try_block_is_resumable():
    call = first(in_try.__code__, "CALL")
    assert call.handler is not None and why_not_resumable(in_try.__code__, call) is None
    assert why_not_resumable(sample.__code__, first(sample.__code__, "CALL")) is None


def test_step_function_inside_a_try_returns_what_it_raised():
    call = [i for i in decode(in_try_finally.__code__) if i.opname == "CALL"][1]   # int(x)
    step = types.FunctionType(step_code(in_try_finally.__code__, call, ("null", "value", "value")), {})
    assert step(int, "3") == (3, NEXT)
    exc, branch = step(int, "x")
    assert branch == RAISED and isinstance(exc, ValueError)


def raised_resume(fn, call, below):
    """The RAISED resume function of `call` (its handler keeps `below` stack slots)."""
    assert call.handler_depth == len(below)
    return resume(fn, call, RAISED, below + ("value",))


def test_resume_after_a_raise_runs_the_handler_and_finally_once():
    call = [i for i in decode(in_try_finally.__code__) if i.opname == "CALL"][1]
    fn, names = raised_resume(in_try_finally, call, ())
    assert names == ("log",)
    log = []
    assert fn(ValueError("bad"), log) == -1 and log == ["handled", "finally"]
    log = []
    try:
        fn(KeyError("other"), log)
    except KeyError:
        assert log == ["finally"]
    else:
        raise AssertionError("an exception the handler does not match went on")


def test_resume_after_a_raise_in_a_with_block_calls_exit_with_it():
    call = [i for i in decode(in_with.__code__) if i.opname == "CALL"][0]   # int(x)
    for swallow in (True, False):
        log = []
        cm = Recorder(log, swallow)
        fn, names = raised_resume(in_with, call, ("value",))
        try:
            result = fn(cm.__exit__, ValueError("bad"), *[{"cm": cm}[n] for n in names])
        except ValueError:
            result = "raised"
        assert log == [("exit", ValueError)] and result == ("after" if swallow else "raised")


def test_resume_inside_a_with_block_exits_once():
    call = [i for i in decode(in_with.__code__) if i.opname == "CALL"][0]
    log = []
    cm = Recorder(log, False)
    fn, names = resume(in_with, call, NEXT, ("value", "value"))
    assert fn(cm.__exit__, 5, *[{"cm": cm}[n] for n in names]) == "after"
    assert log == [5, ("exit", None)]


if __name__ == "__main__":  # run without pytest, e.g. under a Python that has only `bytecode`
    import contextlib
    import io

    class Capsys:
        def __init__(self, buf):
            self.buf = buf

        def readouterr(self):
            out = types.SimpleNamespace(out=self.buf.getvalue())
            self.buf.truncate(0)
            self.buf.seek(0)
            return out

    for name, test in list(globals().items()):
        if name.startswith("test_"):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                test(Capsys(buf)) if test.__code__.co_argcount else test()
            print("ok", name)
