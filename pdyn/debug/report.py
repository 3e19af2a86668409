"""What `pdyn.debug.bisect` found, with a readable `str()`."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch.fx

from pdyn.base.errors import SourceLoc
from pdyn.shapes.steps import UNDO, Step

HEADS = {"none": "pdyn.debug.bisect: the optimized call returns what eager returns",
         "guards": "pdyn.debug.bisect: frontend fault in the guard set",
         "frontend": "pdyn.debug.bisect: frontend fault (wrong with the eager backend too)",
         "backend": "pdyn.debug.bisect: backend fault (right with the eager backend)"}


@dataclass
class BisectReport:
    """`fault`: "none", "guards", "frontend" or "backend"; `culprit`: the first wrong node, step,
    shape rule or fact; `loc`: the user's line it comes from. `step`: the ShapeEnv step whose undoing
    (replaying the served entry's trace) makes the call right, where one does; `z3`: what
    translation validation named (with z3 installed), to compare."""

    fault: str
    culprit: str
    loc: SourceLoc | None = None
    detail: str = ""
    node: torch.fx.Node | None = field(default=None, repr=False)
    error: Exception | None = field(default=None, repr=False)
    step: Step | None = None
    step_alone: bool = False   # undoing `step` alone is enough (not only with the steps before it)
    z3: BisectReport | None = field(default=None, repr=False)

    def __str__(self) -> str:
        lines = [HEADS[self.fault]]
        if self.culprit:
            lines.append(f"  first wrong: {self.culprit}")
        if self.loc is not None:
            lines.append(self.loc.render())
        if self.step is not None:
            how = "alone" if self.step_alone else "with the steps of its kind before it"
            lines.append(f"  undoing the step {self.step} ({UNDO[self.step.kind]}; {how}) makes the call right")
            if self.step.loc is not None and self.step.loc != self.loc:
                lines.append(f"  (the step serves {self.step.loc})")
        if self.z3 is not None:
            lines.append(f"  translation validation (z3) names: {self.z3.culprit}")
            lines.append(f"    {self.z3.detail}" + (f" (at {self.z3.loc})" if self.z3.loc is not None else ""))
        if self.detail:
            lines.append("  " + self.detail.replace("\n", "\n  "))
        return "\n".join(lines)
