"""Check a controller against the plant's rules before shipping it.

Every piecewise-affine controller (trees, linear policies, mixtures) splits the state space into
regions with one affine rule each, so a property written in named features and actions (a
property file, :mod:`interp_rl.verify.properties`) is *decided* region by region with linear
programs (:mod:`interp_rl.verify.prove`): ``proved`` on the whole domain box, ``refuted`` with a
concrete counterexample state, or ``unknown`` with the reason. Beside the proof, the share of
visited states that break each property is measured, with a Clopper-Pearson upper bound (the check
Veri_HVAC runs on historical data).

The layers: property files are read into :class:`Property` objects, one registered class per kind
(:mod:`interp_rl.verify.properties`, the built-ins in :mod:`interp_rl.verify.kinds`), each carrying how
it is decided, searched, checked on samples and told; :func:`verify` (:mod:`interp_rl.verify.engine`)
runs them over a controller into a :class:`Verification` (:mod:`interp_rl.verify.result`), which
:mod:`interp_rl.verify.report` renders.

Examples
--------
>>> import numpy as np
>>> from interp_rl.kinds.tree import TreeProgram
>>> from interp_rl.program import Controller, Signal
>>> tree = TreeProgram.from_leaves(feature=[0, -1, -1], threshold=[23.5, 0, 0], left=[1, -1, -1],
...                                right=[2, -1, -1], intercept=[[0.0], [1.0], [-1.0]], obs_dim=1,
...                                action_low=[-1], action_high=[1])
>>> ctrl = Controller(tree, features=[Signal("zone_temperature", "°C")], actions=[Signal("setpoint_change", "°C")])
>>> props = '''
... [domain]
... from = "given"
... features.zone_temperature = [10, 35]
... [[property]]
... name = "hot room"
... when = ["zone_temperature > 23.5 [°C]"]
... then = ["setpoint_change <= 0 [°C]"]
... [[property]]
... name = "cold room"
... when = ["zone_temperature <= 18"]
... then = ["setpoint_change >= 0.5"]
... '''
>>> result = verify(ctrl, props)
>>> [(v.name, v.status) for v in result.verdicts]
[('hot room', 'proved'), ('cold room', 'proved')]
"""

from interp_rl.verify import kinds  # noqa: F401  (registers the built-in property kinds)
from interp_rl.verify.engine import verify
from interp_rl.verify.properties import (
    PROPERTY_KINDS,
    Domain,
    Property,
    PropertyError,
    PropertySet,
    Table,
    load_properties,
    parse_properties,
    register_property,
)
from interp_rl.verify.prove import Counterexample, Verdict
from interp_rl.verify.result import CONFIDENCE, Sampled, Verification, clopper_pearson_upper
from interp_rl.verify.search import TeacherSearch, search_policy

__all__ = ["Counterexample", "Domain", "Property", "PropertyError", "PropertySet", "Sampled", "Verdict",
           "Verification", "clopper_pearson_upper", "load_properties", "parse_properties", "verify"]
__all__ += ["TeacherSearch", "search_policy"]  # the teacher, side by side
__all__ += ["CONFIDENCE"]
__all__ += ["PROPERTY_KINDS", "Table", "register_property"]  # new kinds of property
