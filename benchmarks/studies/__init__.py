"""Stand-alone studies that are not distillation runs, each with its records and its report.

Run from the repository's root, as ``python -m benchmarks.studies.NAME PART``:

- ``attribution``: Shapley attribution against exact values and shap's explainers (``accuracy``, ``check``,
  ``speed``);
- ``dyna``: the Dyna loop on a SINDy surrogate against model-free SAC, in real steps (``run``);
- ``teacher_returns``: returns of the shared RL-Zoo teachers on the ``-v5`` tasks (``run``);
- ``train_budget``: steps ``interp-rl train`` needs to reach a target return (``run``);
- ``udrl``: upside-down RL with tree ensembles against SB3 DQN and PPO at the same environment steps (``run``).

Every study writes its JSON records and its report (``report.md``, ``figures/``, ``report.html``) into ``--out``
(default ``benchmarks/results/NAME``, relative to the current directory; ``benchmarks/results/teachers`` for
``teacher_returns``), reads the shared teachers from ``--teachers`` (default
:func:`benchmarks.harness.default_teachers_dir`), and rebuilds its report from its records alone with
``python -m benchmarks.studies.NAME report``. What they share is in ``benchmarks/studies/_common.py``.
"""
