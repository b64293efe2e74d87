"""The sections of a benchmark report, in layers: what every section reads (:mod:`.context`), the registry
(:mod:`.registry`), the formatters they share (:mod:`.format`), and the sections themselves: the overview
(:mod:`.summary`), the targets (:mod:`.targets`), what is set side by side (:mod:`.comparisons`), each teacher
with its controllers explained (:mod:`.teachers`, :mod:`.explanations`), and the study suites' own
(:mod:`.studies`); the published peers' section is :func:`benchmarks.peers.peers_section`.

This package registers the built-in sections, in the order a report lays them out when its suite lists none; a
section of your own is one function and one :func:`register_analysis` call (after the built-ins)::

    from benchmarks.sections import register_analysis

    @register_analysis("fastest")
    def fastest(ctx, doc):
        ...
"""

from benchmarks.peers import peers_section
from benchmarks.sections.comparisons import (
    equal_size_section,
    held_out_section,
    repair_section,
    sparsity_section,
    verification_section,
)
from benchmarks.sections.context import Picture, ReportContext
from benchmarks.sections.format import fmt, slug
from benchmarks.sections.registry import (
    ANALYSES,
    ON_REQUEST,
    Analysis,
    analyses_of,
    register_analysis,
    unregister_analysis,
)
from benchmarks.sections.studies import sensors_section, silver_section, warm_vs_scratch_section
from benchmarks.sections.summary import aggregate_section, summary_section
from benchmarks.sections.targets import targets_section
from benchmarks.sections.teachers import teachers_section

__all__ = ["ANALYSES", "ON_REQUEST", "Analysis", "Picture", "ReportContext", "analyses_of", "fmt",
           "register_analysis", "slug", "unregister_analysis"]

#: The built-in sections: (name, section, in the default set of a suite that lists none), in report order.
BUILT_IN = (
    ("summary", summary_section, True),
    ("targets", targets_section, True),
    ("repair", repair_section, True),
    ("verification", verification_section, True),
    ("held-out-choices", held_out_section, True),
    ("sparsity", sparsity_section, True),
    ("equal-size", equal_size_section, True),
    ("aggregate", aggregate_section, True),
    ("teachers", teachers_section, True),
    ("peers", peers_section, False),  # our frontier against the published peers: only where a suite lists it
    ("silver", silver_section, True),
    ("sensors", sensors_section, True),
    ("warm-vs-scratch", warm_vs_scratch_section, True),
)
for _name, _section, _default in BUILT_IN:
    register_analysis(_name, default=_default)(_section)
