"""The property kinds shipped with interp-rl, one module each; importing this package registers them.

- :mod:`interp_rl.verify.kinds.rule`: linear requirements on the action at every state of ``when``
  (``rule``, the default).
- :mod:`interp_rl.verify.kinds.range`: an action within ``[low, high]`` (``range``).
- :mod:`interp_rl.verify.kinds.monotone`: an action that never falls (or never rises) as a feature grows
  (``monotone``).
- :mod:`interp_rl.verify.kinds.lipschitz`: an action that changes by at most ``bound`` per unit of a feature
  (``lipschitz``).
- :mod:`interp_rl.verify.kinds.teacher`: every action within ``epsilon`` of the teacher's (``teacher``).

The last three but one share :class:`~interp_rl.verify.kinds.pair.PairProperty`: properties of how an action
changes along a feature, decided from slopes and jumps and searched on pairs of states.

They are registered here, in this order (the order errors list them in). A new kind is a subclass of
:class:`~interp_rl.verify.properties.Property` (or of one of these) registered with
:func:`~interp_rl.verify.properties.register_property`, in a module here or anywhere; see
:mod:`interp_rl.verify.properties`.
"""

from interp_rl.verify.kinds.lipschitz import LipschitzProperty
from interp_rl.verify.kinds.monotone import MonotoneProperty
from interp_rl.verify.kinds.pair import PairProperty
from interp_rl.verify.kinds.range import RangeProperty
from interp_rl.verify.kinds.rule import RuleProperty
from interp_rl.verify.kinds.teacher import TeacherProperty
from interp_rl.verify.properties import register_property

__all__ = ["LipschitzProperty", "MonotoneProperty", "PairProperty", "RangeProperty", "RuleProperty",
           "TeacherProperty"]

for _cls in (RuleProperty, RangeProperty, MonotoneProperty, LipschitzProperty, TeacherProperty):
    register_property(_cls)
