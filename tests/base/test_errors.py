"""Errors users see: Unsupported with file:line, the line, a caret and a hint (pdyn/base/errors.py)."""

from __future__ import annotations

import pytest

import pdyn
from pdyn.base.errors import InternalError, SourceLoc, Unsupported, UserError, UserException

SOURCE_TEXT = "        y = print(x.shape)"  # the line the SourceLocs of these tests point at
LINE = next(n for n, text in enumerate(open(__file__).read().splitlines(), 1) if text.startswith("SOURCE_TEXT"))
TEXT = 'SOURCE_TEXT = "        y = print(x.shape)"  # the line the SourceLocs of these tests point at'


def here(col: int | None = None, end_col: int | None = None) -> SourceLoc:
    return SourceLoc(__file__, LINE, "forward", col, end_col)


def test_source_loc_str_is_file_colon_line():
    assert str(here()) == f"{__file__}:{LINE}"
    assert here().source_line() == TEXT


def test_render_has_where_the_line_and_a_caret_under_the_columns():
    loc = here(14, 34)
    assert loc.render().splitlines() == [
        f"  at {__file__}:{LINE} in forward",
        "      " + TEXT,
        "                    " + "^" * 20,
    ]


def test_render_without_columns_or_source_has_no_caret():
    assert here().render().count("^") == 0
    assert SourceLoc("<nowhere>", 3).render() == "  at <nowhere>:3"


def test_unsupported_renders_message_location_and_hint():
    err = Unsupported("print", "cannot trace a call to print(): it writes to stdout",
                      hint="move the print out of the compiled function", loc=here(14, 34))
    lines = str(err).splitlines()
    assert lines[0] == "cannot trace a call to print(): it writes to stdout"
    assert lines[1] == f"  at {__file__}:{LINE} in forward"
    assert lines[3].strip() == "^" * 20
    assert lines[4] == "  hint: move the print out of the compiled function"
    assert (err.key, err.loc.lineno) == ("print", LINE)


def test_unsupported_without_location_is_just_the_message():
    assert str(Unsupported("k", "no location")) == "no location"


def test_public_error_classes():
    assert pdyn.Unsupported is Unsupported and pdyn.UserError is UserError
    for cls in (Unsupported, UserError, InternalError):
        assert issubclass(cls, Exception)
    assert "PDYN_LOGS" in (InternalError.__doc__ or "")


def test_user_exception_carries_the_original():
    original = ValueError("bad")
    wrapped = UserException(original, here())
    assert wrapped.exc is original and str(wrapped) == "ValueError: bad"
    with pytest.raises(UserException):
        raise wrapped
