"""The study suites' report sections, kept importable from here: they live in :mod:`benchmarks.sections.studies`."""

from benchmarks.sections.studies import (
    PICKS,
    env_steps,
    sensor_rows,
    sensors_section,
    silver_rows,
    silver_section,
    warm_curve,
    warm_vs_scratch_section,
)

__all__ = ["PICKS", "env_steps", "sensor_rows", "sensors_section", "silver_rows", "silver_section", "warm_curve",
           "warm_vs_scratch_section"]
