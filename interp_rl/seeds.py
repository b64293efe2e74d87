"""Where every stage's episodes start: the reset-seed offsets, in one place.

A run's episodes are reset with ``seed + offset``, ``seed + offset + 1``, ... Each stage that plays
episodes has its own offset, far enough from the others that no two stages ever play the same
episode: the report's evaluation uses ``seed, seed + 1, ...`` (offset 0), so choosing a candidate on
held-out episodes never looks at the episodes reported. A new stage takes a new offset here, apart
from these. (Round ``r`` of DAgger rolls out from ``seed + 100,000 × (r + 1)``, so its training episodes may
meet leaf tuning's; both are training episodes, never the ones a choice or a report is made on.)

================================  ============  ==============================================
offset                            value         episodes
================================  ============  ==============================================
(evaluation)                      0             the report's (``--episodes`` of them)
``STUDY_EVAL_SEED``               1,000 (abs.)  a study's evaluation episodes (seeds 1000, 1001, ...)
``SELECTION_SEED_OFFSET``         50,000        DAgger's round choice; ARS's held-out scoring
``SWEEP_SEED_OFFSET``             60,000        the sparsity sweep's fits
``ROLLOUT_SEED_STRIDE``           100,000 × r   DAgger round ``r``'s rollouts
``TUNING_SEED_OFFSET``            200,000       leaf tuning's candidates
``RL_SEED_OFFSET``                300,000       actor-critic fine-tuning
``FAILURE_SEED_OFFSET``           700,000       the benchmark's failure rate
``TRAIN_EVAL_SEED_OFFSET``        1,000,000     a training run's held-out evaluations
``DYNA_DATA_SEED_OFFSET``         1,000,000     the Dyna loop's first transitions
``DYNA_ROLLOUT_SEED_OFFSET``      2,000,000     the Dyna loop's later rollouts (+ 10,000 × it)
``DIAGNOSE_SEED``                 10,000,000    a diagnosis
``REPAIR_SEED_OFFSET``            20,000,000    the failure repair's episodes
``REPAIR_SELECTION_SEED_OFFSET``  25,000,000    the repair's choice of round
``RESTART_SEED_OFFSET``           30,000,000    the restarts' and the DART levels' choice
``RL_LEVELS_SEED_OFFSET``         31,000,000    the choice between fine-tuned DART levels
================================  ============  ==============================================
"""

from __future__ import annotations

__all__ = ["DIAGNOSE_SEED", "DYNA_DATA_SEED_OFFSET", "DYNA_ROLLOUT_SEED_OFFSET", "FAILURE_SEED_OFFSET",
           "REPAIR_SEED_OFFSET", "REPAIR_SELECTION_SEED_OFFSET", "RESTART_SEED_OFFSET", "RL_LEVELS_SEED_OFFSET",
           "RL_SEED_OFFSET", "ROLLOUT_SEED_STRIDE", "SELECTION_SEED_OFFSET", "STUDY_EVAL_SEED", "SWEEP_SEED_OFFSET",
           "TRAIN_EVAL_SEED_OFFSET", "TUNING_SEED_OFFSET"]

#: A study's evaluation episodes: absolute reset seeds ``STUDY_EVAL_SEED``, ``STUDY_EVAL_SEED + 1``, ...
STUDY_EVAL_SEED = 1000
#: Held-out episodes that choose among DAgger's rounds (and score ARS's result); the report evaluates on 0, 1, ...
SELECTION_SEED_OFFSET = 50_000
#: Held-out episodes scoring each fit of the sparsity sweep.
SWEEP_SEED_OFFSET = SELECTION_SEED_OFFSET + 10_000
#: DAgger round ``r`` rolls out from ``seed + ROLLOUT_SEED_STRIDE * (r + 1)`` on.
ROLLOUT_SEED_STRIDE = 100_000
#: Leaf tuning's candidate episodes.
TUNING_SEED_OFFSET = 200_000
#: Actor-critic fine-tuning's training and held-out episodes.
RL_SEED_OFFSET = 300_000
#: The benchmark's failure-rate episodes, apart from the evaluation and selection seeds.
FAILURE_SEED_OFFSET = 700_000
#: A training run's (teacher's, UDRL's, a diagnosis's measurement's) held-out evaluation episodes.
TRAIN_EVAL_SEED_OFFSET = 1_000_000
#: The Dyna loop's first real transitions, and its later rollouts (``+ 10,000 * iteration``).
DYNA_DATA_SEED_OFFSET = 1_000_000
DYNA_ROLLOUT_SEED_OFFSET = 2_000_000
#: First reset seed of a diagnosis: far from the seeds distillation, selection and evaluation use.
DIAGNOSE_SEED = 10_000_000
#: The failure repair's episodes.
REPAIR_SEED_OFFSET = 20_000_000
#: The failure repair's choice between its rounds.
REPAIR_SELECTION_SEED_OFFSET = REPAIR_SEED_OFFSET + 5_000_000
#: The restarts' held-out episodes (and the choice between DART levels, which compares their kept restarts).
RESTART_SEED_OFFSET = 30_000_000
#: The further held-out episodes that choose between fine-tuned DART levels (``rl_levels='each'``).
RL_LEVELS_SEED_OFFSET = 31_000_000
