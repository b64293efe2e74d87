"""The report's built-in sections and their row builders, kept importable from here: they live in
:mod:`benchmarks.sections` (the registry, the context, the formatters and each family of sections in its own
module)."""

from benchmarks.sections import ANALYSES, ON_REQUEST, Analysis, ReportContext, analyses_of, register_analysis
from benchmarks.sections.comparisons import (
    against_equal_sizes,
    equal_size_section,
    held_out_choices,
    held_out_section,
    repair_pairs,
    repair_section,
    sparsest_within,
    sparsity_section,
    verification_section,
)
from benchmarks.sections.explanations import explanations
from benchmarks.sections.summary import aggregate_section, summary_section
from benchmarks.sections.targets import (
    FEWER_SUFFICE_POINTS,
    against_trees,
    against_trees_section,
    at_a_glance,
    closest,
    idle_check,
    load_tried,
    own_cells,
    target_checks,
    targets_section,
    where_short,
)
from benchmarks.sections.teachers import attribution_table, teachers_section

__all__ = ["ANALYSES", "FEWER_SUFFICE_POINTS", "ON_REQUEST", "Analysis", "ReportContext", "against_equal_sizes",
           "against_trees", "against_trees_section", "aggregate_section", "analyses_of", "at_a_glance",
           "attribution_table", "closest", "equal_size_section", "explanations", "held_out_choices",
           "held_out_section", "idle_check", "load_tried", "own_cells", "register_analysis", "repair_pairs",
           "repair_section", "sparsest_within", "sparsity_section", "summary_section", "target_checks",
           "targets_section", "teachers_section", "verification_section", "where_short"]
