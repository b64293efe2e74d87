"""Moved to :mod:`benchmarks.studies.attribution`; this module stays only while ``benchmarks.sensor_study``
imports ``TEACHERS`` from it (delete it once that import reads :func:`benchmarks.harness.default_teachers_dir`).
"""

from benchmarks.harness import default_teachers_dir

#: The shared teachers' folder: ``$INTERP_RL_TEACHERS``, else ``../shared/teachers``.
TEACHERS = default_teachers_dir()
