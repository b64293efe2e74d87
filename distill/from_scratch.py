"""RL from scratch in place of distillation: SMOSE proper, as a method's first stage.

:class:`ScratchTrainer` trains the mixture the student would have distilled (same number of experts,
a linear router) end to end with SB3 (``interp-rl train --policy moe``) on the teacher's task, in the
teacher's own observation layout, for a fixed number of environment steps. The teacher is not
consulted: it is only the yardstick the harness measures the result against, on the same episodes as
every distilled controller. Set as :class:`~distill.job.Distillation`'s ``scratch`` stage (the
``moe`` method's ``--scratch-steps``), it makes RL from scratch one more cell of every benchmark
suite, next to distillation and fine-tuning at equal environment steps.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sklearn.base import BaseEstimator

from distill.events import ScratchStep
from interp_rl.errors import InterpRLError
from interp_rl.teachers import Teacher
from interp_rl.validation import check_choice, check_int

__all__ = ["ScratchTrainer"]

#: The algorithms that train a mixture actor (``interp-rl train --policy moe``), and ARS, which searches any kind
#: that starts from zeros (a linear policy: ``interp-rl train --algo ars --policy linear``).
SCRATCH_ALGOS = ("sac", "ppo", "a2c", "trpo", "ars", "cmaes")


class ScratchTrainer(BaseEstimator):
    """Train a top-1 mixture of linear experts by RL from scratch on the teacher's task.

    Parameters
    ----------
    n_steps : int, default=0
        Environment steps (0: off; the method distils as usual).
    algo : {'sac', 'ppo', 'a2c', 'trpo', 'ars', 'cmaes'}, default='sac'
        The RL algorithm (SMOSE used SAC), with the toolkit's shipped hyperparameters for the task. ``'ars'``
        is augmented random search over the student's own kind from all zeros (:class:`distill.ars.ARS` with
        the task's settings, one process), for kinds that can start from nothing (a linear policy); ``'cmaes'``
        searches the same numbers by CMA-ES (:class:`distill.cmaes.CMAES`).
    seed : int, default=0
        Seeds the environments, the networks and the exploration.
    eval_episodes : int, default=5
        Deterministic episodes at every checkpoint (tenths of ``n_steps``, at most 25,000 steps apart); the best
        checkpoint is kept.

    Attributes
    ----------
    student_ : MixturePolicy
        The student running the trained mixture.
    history_ : list of dict
        ``step``, ``eval_return``, ``recent_return`` and ``seconds`` at every checkpoint.
    seconds_ : float
        Wall-clock seconds of the training, a resumed run's earlier ones included.

    Examples
    --------
    >>> ScratchTrainer(n_steps=190_000, algo="sac")
    ScratchTrainer(n_steps=190000)
    """

    def __init__(self, n_steps: int = 0, algo: str = "sac", seed: int = 0, eval_episodes: int = 5) -> None:
        self.n_steps = n_steps
        self.algo = algo
        self.seed = seed
        self.eval_episodes = eval_episodes

    def _validate_params(self) -> None:
        owner = type(self).__name__
        check_int(self.n_steps, "n_steps", owner, low=0)
        check_choice(self.algo, "algo", owner, SCRATCH_ALGOS)
        check_int(self.seed, "seed", owner, low=0)
        check_int(self.eval_episodes, "eval_episodes", owner, low=1)

    def fit(self, student: Any, teacher: Teacher, *, checkpoint_dir: str | Path,
            resume: bool = False, progress: Callable[[dict[str, Any]], None] | None = None) -> ScratchTrainer:
        """Train the mixture ``student`` describes (an unfitted :class:`~distill.moe.MixturePolicy`: its
        ``n_experts``; the router is linear) on ``teacher``'s task and observation layout, in
        ``checkpoint_dir`` (``resume=True`` continues an interrupted run there)."""
        from interp_rl.program import load_controller

        self._validate_params()
        if self.algo in ("ars", "cmaes"):
            return self._fit_ars(student, teacher, Path(checkpoint_dir), resume, progress)
        if getattr(student, "n_experts", None) is None:  # what SB3 trains here: a mixture actor of n experts
            raise InterpRLError(f"RL from scratch trains mixtures of linear experts; this method's student is a "
                                f"{getattr(student, 'program_kind', type(student).__name__)} (use the moe method).")
        if student.router != "linear":
            raise InterpRLError(f"RL from scratch trains a linear router; got router={student.router!r} (distil "
                                "the router into a tree afterwards, or use router='linear').")
        train = getattr(teacher, "train_from_scratch", None)
        if not callable(train):
            raise InterpRLError(f"RL from scratch needs a teacher that can train on its own task "
                                f"(train_from_scratch, as teachers from envs.load_teacher have); "
                                f"{type(teacher).__name__} has none.")
        run = Path(checkpoint_dir)
        t0 = time.perf_counter()
        def tell(row: dict[str, Any]) -> None:
            if progress is not None:
                progress(ScratchStep(step=row["step"], total=self.n_steps, return_mean=row.get("eval_return")))

        # a checkpoint (and a held-out evaluation) every tenth of the run, at most 25,000 steps apart: a long run
        # stopped with its session loses at most that much
        meta = train(run, algo=self.algo, steps=self.n_steps, seed=self.seed, eval_episodes=self.eval_episodes,
                     hyperparams={"policy": "moe", "policy_kwargs": {"n_experts": int(student.n_experts)}},
                     resume=resume and run.is_dir(), on_checkpoint=tell,
                     checkpoint_every=max(1000, min(self.n_steps // 10, 25_000)))
        self.history_ = list(meta.get("history", []))
        earlier = max([0.0, *(float(h.get("seconds", 0.0)) for h in self.history_)])
        self.seconds_ = max(earlier, time.perf_counter() - t0)
        controller = load_controller(run / "controller.json")
        names = getattr(teacher, "feature_names", None)
        if names is not None and controller.program.obs_dim != len(names):
            raise InterpRLError(f"The mixture trained in {str(run)!r} reads {controller.program.obs_dim} features; "
                                f"the teacher's {teacher.task} gives {len(names)}.")
        self.student_ = type(student).from_program(controller.program)
        self.meta_ = json.loads(json.dumps(meta, default=str))
        return self

    def _fit_ars(self, student: Any, teacher: Teacher, run: Path, resume: bool,
                 progress: Callable[[dict[str, Any]], None] | None) -> ScratchTrainer:
        """``algo='ars'`` or ``'cmaes'``: :func:`distill.ars.run_ars_job` from the student's kind at zero, in
        ``run``."""
        from distill.ars import run_ars_job
        from distill.cmaes import search_for
        from interp_rl.program import PROGRAMS, load_controller

        kind = getattr(student, "program_kind", None)
        if kind not in PROGRAMS or not PROGRAMS[kind].kind_can("from_scratch"):  # type: ignore[index]
            search = "CMA-ES" if self.algo == "cmaes" else "ARS"
            raise InterpRLError(f"{search} from scratch searches a kind that starts from zeros (a linear policy); this "
                                f"method's student is a {kind or type(student).__name__}, whose structure must be "
                                "learnt first (distil it, then fine-tune with rl_search='ars').")
        env_fn = getattr(teacher, "env_fn", None)
        if env_fn is None:
            raise InterpRLError(f"ARS from scratch needs the teacher's environment; {type(teacher).__name__} has "
                                "none.")
        t0 = time.perf_counter()

        def tell(row: dict[str, Any]) -> None:
            if progress is not None:
                progress(ScratchStep(step=row["env_steps"], total=self.n_steps, return_mean=row["return_mean"]))

        search = search_for(self.algo, teacher, seed=self.seed)
        metrics = run_ars_job(search, kind, env_fn, run, steps=self.n_steps, task=teacher.task,
                              resume=resume and (run / "checkpoint").is_dir(), eval_episodes=self.eval_episodes,
                              progress=tell)
        self.history_ = [{"step": h["env_steps"], "eval_return": None, "recent_return": h["return_mean"],
                          "seconds": h["seconds"]} for h in metrics["history"]]
        self.seconds_ = max(float(metrics["wall_seconds"]), time.perf_counter() - t0)
        program = load_controller(run / "controller.json").program
        self.student_ = type(student).from_program(program)
        self.meta_ = {"model_step": metrics["env_steps"], "model_eval_return": metrics["eval_return_mean"],
                      "ars": {k: metrics[k] for k in ("config", "iterations", "n_parameters")}}
        return self
