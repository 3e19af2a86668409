"""What a value is to a graph break's frame code, asked of its tracker (pdyn/trace/variables/base.py,
used by pdyn/trace/breaks/ and pdyn/trace/frame_effects.py): how it crosses, the sizes it carries,
how a mutated container and an attribute store are replayed, a with block's `__exit__`."""

import pytest
import torch

from pdyn.base.errors import Unsupported
from pdyn.sources import AttrSource, ItemSource, LocalSource, SizeSource
from pdyn.trace.frame_codegen import FrameCodegen, ResumeCodegen
from pdyn.trace.variables.base import NULL, VariableTracker
from pdyn.trace.variables.containers.core import DictVariable, IteratorVariable, ListVariable, TupleVariable
from pdyn.trace.variables.contexts.context_managers import GradModeVariable, NullContextVariable
from pdyn.trace.variables.exceptions.exc_slot import ExcInfoSlot
from pdyn.trace.variables.objects.user_objects import UserObjectVariable
from pdyn.trace.variables.values.constant import ConstantVariable


class Sized(VariableTracker):
    """A value holding one size, as a tensor of one dim does."""

    def sizes_held(self, source, depth):
        return [(SizeSource(source, 0), "s0")]


def test_a_stack_value_says_how_it_crosses_a_break():
    one = ConstantVariable(1)
    assert [vt.crossing(False) for vt in (NULL, ExcInfoSlot(None, one), IteratorVariable([one]), one)] == \
        ["null", "exc", "iter", "value"]
    assert IteratorVariable([one]).crossing(True) == "value"   # a live local holds it: that local's object


def test_the_sizes_a_container_holds_are_read_through_its_items_to_a_depth():
    t = LocalSource("t")
    nested = TupleVariable([Sized(), ListVariable([Sized()]), DictVariable({"k": Sized(), 2: ConstantVariable(3)})])
    assert nested.sizes_held(t, 4) == [(SizeSource(ItemSource(t, 0), 0), "s0"),
                                       (SizeSource(ItemSource(ItemSource(t, 1), 0), 0), "s0"),
                                       (SizeSource(ItemSource(ItemSource(t, 2), "k"), 0), "s0")]
    assert nested.sizes_held(t, 1) == [(SizeSource(ItemSource(t, 0), 0), "s0")]
    assert nested.sizes_held(t, 0) == []


def test_only_an_object_made_in_the_trace_hands_on_the_sizes_of_its_fields():
    made = UserObjectVariable.fresh(object)
    made.fields["h"] = Sized()
    assert made.sizes_held(LocalSource("o"), 4) == [(SizeSource(AttrSource(LocalSource("o"), "h"), 0), "s0")]
    read = UserObjectVariable(object(), LocalSource("o"))
    read.fields["h"] = Sized()
    assert read.sizes_held(LocalSource("o"), 4) == []


def test_a_mutated_list_and_dict_replay_their_final_contents():
    codegen = FrameCodegen()
    xs = ListVariable([ConstantVariable(1)], source=LocalSource("xs"))
    assert xs.replay_contents(codegen, "L['xs']", "e0") == "L['xs'][:] = e0"
    d = DictVariable({"a": ConstantVariable(2)}, source=LocalSource("d"))
    assert d.replay_contents(codegen, "L['d']", "e1") == "_replay_dict0(L['d'], e1)"
    assert codegen.lines == ["e0 = [1]", "e1 = {'a': 2}"]
    with pytest.raises(Unsupported):
        VariableTracker().replay_contents(codegen, "L['v']", "e2")


def test_a_user_objects_store_is_replayed_raw():
    assert UserObjectVariable(object(), LocalSource("o")).own_setattr_ran()
    assert not VariableTracker().own_setattr_ran()


def test_a_with_blocks_exit_at_a_break_is_what_its_manager_says():
    codegen = ResumeCodegen()
    assert GradModeVariable(torch.no_grad, False, prior=True).exit_at_break(codegen) == \
        "_RestoreGradMode0(True).__exit__"
    assert NullContextVariable(type(None), ConstantVariable(None)).exit_at_break(codegen) == \
        "_nullcontext1().__exit__"
    with pytest.raises(Unsupported, match="cannot be re-entered"):
        GradModeVariable(torch.no_grad, False).exit_at_break(codegen)   # never entered: no mode to restore
