"""The op table: one row (`Op`) per torch op pdyn knows, keyed by a canonical name, with its
spellings, the argument it writes, whether its output depends on data, whether tracing it is
refused and why. `canonical(target)` maps any fx target (`torch.add`, `"add_"`, `operator.ixor`,
an aten overload) to its row; shape rules and backend lowerings register on rows.
"""

from pdyn.ops import catalogue as _catalogue  # noqa: F401  # declares the rows
from pdyn.ops.table import (OPS, Op, Refusal, canonical, in_place_operator, is_in_place_operator, op_of,
                             plain_operator, row)

__all__ = ["OPS", "Op", "Refusal", "canonical", "in_place_operator", "is_in_place_operator", "op_of", "plain_operator",
           "row"]
