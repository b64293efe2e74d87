"""Benchmarks and their committed reports (``benchmarks/results/``).

- ``python -m benchmarks.teacher_returns``: returns of the shared RL-Zoo teachers on ``-v5``.
- ``python -m benchmarks.train_budget``: steps ``interp-rl train`` needs to solve a task.
"""

#: The distribution that ships this package (read by interp_rl._packages: other distributions may use the name).
DISTRIBUTION = "interp-rl"
