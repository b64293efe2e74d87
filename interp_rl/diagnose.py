"""Why a controller fails where its teacher would not: points of no return, critical states, pieces and evidence.

:func:`diagnose` runs a controller and its teacher on the same fresh episodes and, for every episode the
controller fails (its return below half the teacher's mean on those episodes, the benchmark harness's
definition), finds

* the **point of no return**: the first step from which the teacher, taking over from the exact simulator state
  (:mod:`interp_rl.simstate`), no longer brings the episode above that line without falling (where the teacher's
  own episode does not fall). It is found by bisection over the episode, each takeover a real rollout: the
  takeover one step before it recovers, the one at it does not;
* the **critical states** before it: the steps where the controller's action costs most by the teacher's own
  judgement, the critic gap ``Q(s, a_teacher) - Q(s, a_controller)`` for a Q-function teacher, or for a teacher
  with a state value only a short look-ahead: ``horizon`` steps of the teacher after its own first action or after
  the controller's, bootstrapped with its ``V``;
* **which piece acted** there (leaf, expert, equations), its rule at that state in named features, and the
  Shapley attribution of teacher and controller side by side;
* the **evidence** that piece rests on (the Accountable Offline Controller's decision corpus): the nearest
  teacher-labelled states it was fitted on (:mod:`interp_rl.evidence`), the teacher's actions there, and how far
  the failing state lies from them.

It also counts the **piece graph** over every episode (:mod:`interp_rl.piece_graph`), and the teacher's, by
clustering the states it visits as its policy network's last hidden layer sees them (``teacher.latent``, as ARLIN
does; the raw observations for a teacher without one). :func:`interp_rl.diagnosis_report.write_diagnosis` turns
the result into one page.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from interp_rl.compare import half_of_teacher, percent_of_teacher
from interp_rl.errors import InterpRLError
from interp_rl.evidence import DistillationData, nearest_examples, typical_spacing
from interp_rl.piece_graph import PieceGraph, cluster_states, piece_graph
from interp_rl.program import Controller
from interp_rl.rollouts import run_episodes
from interp_rl.seeds import DIAGNOSE_SEED
from interp_rl.simstate import SimState
from interp_rl.teachers import Teacher, check_teacher
from interp_rl.validation import check_int

__all__ = ["DIAGNOSE_SEED", "CriticalState", "Diagnosis", "FailedEpisode", "Takeover", "critic_gaps", "diagnose",
           "failure_interval", "failure_profile", "points_of_no_return"]


Progress = Callable[[str, int, int], None]


@dataclass
class Takeover:
    """The teacher taking over an episode at ``step``: the whole episode's return, the controller's rewards before
    ``step`` and the teacher's after it, and whether that clears the failure line."""

    step: int
    episode_return: float
    recovered: bool


@dataclass
class CriticalState:
    """A step before the point of no return where the controller's action cost most, by the teacher's judgement."""

    episode: int
    seed: int
    step: int
    gap: float
    """What the controller's action costs against the teacher's, in return (critic gap or look-ahead)."""
    piece: int
    piece_label: str
    rule: str
    """Why the controller acted as it did there, in named features (``explain_decision``)."""
    observation: list[float]
    controller_action: list[float]
    teacher_action: list[float]
    attribution: dict[str, Any] = field(default_factory=dict)
    """``{"action": name, "teacher": [[feature, value], ...], "controller": [...]}``: the top features of the action
    on which they differ most."""
    evidence: dict[str, Any] | None = None
    """The nearest recorded teacher states of the piece: rows, distances (standard deviations), the teacher's
    actions there, the piece's usual spacing, and the features on which the state differs most from the nearest."""


@dataclass
class FailedEpisode:
    """One failed episode of the diagnosis."""

    episode: int
    seed: int
    episode_return: float
    percent_of_teacher: float
    length: int
    terminated: bool
    teacher_return: float
    no_return: int | None
    """The point of no return (a step index); ``None`` when the teacher fails this episode from its start too."""
    takeovers: list[Takeover] = field(default_factory=list)
    critical: list[CriticalState] = field(default_factory=list)
    note: str = ""


@dataclass
class Diagnosis:
    """What :func:`diagnose` found (``to_dict`` is JSON-ready; the recorded steps stay in memory for the page)."""

    task: str
    kind: str
    features: list[str]
    units: list[str]
    actions: list[str]
    seed: int
    episodes: int
    teacher_mean: float
    threshold: float
    controller_returns: list[float]
    teacher_returns: list[float]
    lengths: list[int]
    failed: list[FailedEpisode]
    rate: float
    rate_interval: tuple[float, float]
    judge: str
    """How critical states were scored (``critic`` or ``look-ahead of N steps``)."""
    graph: PieceGraph
    teacher_graph: PieceGraph
    window: int = 100
    """Steps before each point of no return searched for critical states (the run-up)."""
    evidence_note: str = ""
    attribution_note: str = ""
    frames_note: str = ""
    seconds: dict[str, float] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    # kept for the page, not written to JSON
    steps_: dict[str, Any] = field(default_factory=dict, repr=False)
    frames_: dict[int, tuple[list[int], list[np.ndarray]]] = field(default_factory=dict, repr=False)

    @property
    def n_failed(self) -> int:
        return len(self.failed)

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if not k.endswith("_") and k not in ("graph", "teacher_graph")}
        out["graph"] = self.graph.to_dict()
        out["teacher_graph"] = self.teacher_graph.to_dict()
        out["n_failed"] = self.n_failed
        return out


def failure_interval(failures: int, episodes: int, level: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson interval of a failure rate (exact binomial).

    Examples
    --------
    >>> [round(v, 4) for v in failure_interval(0, 100)]
    [0.0, 0.0362]
    """
    from scipy.stats import binomtest

    if episodes <= 0:
        return (float("nan"), float("nan"))
    ci = binomtest(int(failures), int(episodes)).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


def failure_profile(policies: dict[str, Any], teacher: Any, *, episodes: int, seed: int,
                    n_envs: int = 8) -> dict[str, Any]:
    """Each policy and the teacher on the same ``episodes`` fresh episodes (seeds ``seed ...``): mean and worst
    episode as % of the teacher's mean, failures (below half of it) with their Clopper-Pearson interval."""
    from interp_rl.rollouts import evaluate

    t_res = evaluate(teacher, teacher.env_fn, episodes, seed=seed, n_envs=n_envs)
    mean = t_res.mean_return
    out: dict[str, Any] = {"episodes": episodes, "first_seed": seed, "teacher_mean": mean,
                           "threshold": half_of_teacher(mean), "teacher_returns": t_res.returns}
    for name, policy in policies.items():
        r = np.asarray(evaluate(policy, teacher.env_fn, episodes, seed=seed, n_envs=n_envs).returns)
        k = int(np.sum(r < half_of_teacher(mean)))
        out[name] = {"percent_of_teacher": float(percent_of_teacher(float(r.mean()), mean)),
                     "worst_percent_of_teacher": float(percent_of_teacher(float(r.min()), mean)),
                     "failures": k, "rate": k / episodes, "rate_interval": failure_interval(k, episodes),
                     "returns": r.tolist()}
    return out


# ---------------------------------------------------------------------------------------------- pieces
def _pieces(controller: Controller) -> tuple[Callable[[np.ndarray], np.ndarray], dict[int, str]]:
    """The piece acting at each state and what people call it; one piece for a program without pieces."""
    if not controller.program.can("affine"):
        return (lambda X: np.zeros(len(X), dtype=np.int64)), {0: f"the {controller.kind} program"}
    ap = controller.program.affine_pieces()
    return (lambda X: np.asarray(ap.assign(np.asarray(X, dtype=np.float64)), dtype=np.int64)), dict(
        enumerate(ap.labels))


# ---------------------------------------------------------------------------------------------- takeovers
def points_of_no_return(teacher: Any, env_fn: Callable[[int], Any], states: list[list[SimState]],
                        rewards: list[np.ndarray], threshold: float, *, recovered_at_start: list[bool],
                        stays_up: list[bool] | None = None, n_envs: int = 8,
                        progress: Progress | None = None) -> list[tuple[int | None, list[Takeover]]]:
    """Bisect each failed episode for the first step from which a teacher takeover no longer recovers.

    ``states[e]`` are the episode's recorded states (step 0 ... L-1), ``rewards[e]`` the controller's rewards there.
    A takeover at step ``t`` is a real rollout of the teacher from ``states[e][t]`` to the episode's end; it
    recovers when the controller's rewards before ``t`` plus the teacher's reach ``threshold`` and, where
    ``stays_up[e]`` (the teacher's own episode on that seed ran to its time limit), the teacher does not fall
    (the task does not terminate) either: a takeover that only collects enough return before falling has not
    recovered. The search keeps
    "recovers at ``lo``, fails at ``hi``" (``lo = 0``: the teacher's own episode, ``recovered_at_start``; ``hi = L``:
    the controller's own), so it returns ``hi`` with a recovering takeover at ``hi - 1``. The takeovers of all
    episodes of one bisection round run together.
    """
    n = len(states)
    prefix = [np.concatenate([[0.0], np.cumsum(r)]) for r in rewards]
    lo = [0] * n
    hi = [len(s) for s in states]
    log: list[list[Takeover]] = [[] for _ in range(n)]
    active = [e for e in range(n) if recovered_at_start[e]]
    rounds = int(np.ceil(np.log2(max(max(hi, default=1), 2))))
    done = 0
    while True:
        todo = [e for e in active if hi[e] - lo[e] > 1]
        if not todo:
            break
        mids = [(lo[e] + hi[e]) // 2 for e in todo]
        ran = run_episodes(teacher, env_fn, [states[e][m] for e, m in zip(todo, mids, strict=True)],
                           n_envs=min(n_envs, len(todo)))
        for e, m, ret, fell in zip(todo, mids, ran.returns, ran.terminated, strict=True):
            total = float(prefix[e][m] + ret)
            ok = total >= threshold and not (fell and stays_up is not None and stays_up[e])
            log[e].append(Takeover(m, total, ok))
            if ok:
                lo[e] = m
            else:
                hi[e] = m
        done += 1
        if progress is not None:
            progress("points of no return", min(done, rounds), rounds)
    return [(hi[e] if recovered_at_start[e] else None, sorted(log[e], key=lambda t: t.step)) for e in range(n)]


def critic_gaps(teacher: Any, controller: Any, env_fn: Callable[[int], Any], observations: np.ndarray,
                states: list[SimState], *, horizon: int = 25, n_envs: int = 16) -> tuple[np.ndarray, str]:
    """What the controller's action costs at each state by the teacher's judgement, and how it was judged.

    A Q-function teacher: ``Q(s, a_T) - Q(s, a_C)``. Otherwise two look-ahead rollouts per state of ``horizon``
    steps, the teacher acting from the second step on, one starting with the teacher's action and one with the
    controller's: the difference of their discounted returns, each bootstrapped with the teacher's ``V`` where it
    has one.
    """
    obs = np.asarray(observations, dtype=np.float64)
    if len(obs) == 0:
        return np.zeros(0), "critic"
    a_t = np.asarray(teacher.predict(obs), dtype=np.float64).reshape(len(obs), -1)
    a_c = np.asarray(controller.predict(obs), dtype=np.float64).reshape(a_t.shape)
    if getattr(teacher, "has_q", False):
        return np.asarray(teacher.q_values(obs, a_t) - teacher.q_values(obs, a_c), dtype=np.float64), "critic"
    gamma = float(getattr(teacher, "gamma", 0.99))
    use_v = bool(getattr(teacher, "has_value", False))
    out = []
    for first in (a_t, a_c):
        started: set[int] = set()

        def act(batch: np.ndarray, episodes: np.ndarray, first: np.ndarray = first,
                started: set[int] = started) -> np.ndarray:
            acts = np.asarray(teacher.predict(batch), dtype=np.float64).reshape(len(batch), -1)
            for i, e in enumerate(episodes.tolist()):
                if e not in started:
                    acts[i] = first[e]
                    started.add(e)
            return acts

        ran = run_episodes(act, env_fn, states, n_envs=n_envs, record=True, episode_steps=horizon)
        assert ran.rollout is not None
        ro = ran.rollout
        value = np.zeros(len(states))
        for e in range(len(states)):
            r = ro.rewards[ro.episodes == e]
            value[e] = float(np.sum(r * gamma ** np.arange(len(r))))
        if use_v:
            alive = [e for e in range(len(states)) if not ran.terminated[e]]
            if alive:
                v = teacher.value(np.stack([ran.final_observations[e] for e in alive]))
                for e, ve in zip(alive, np.asarray(v, dtype=np.float64).ravel(), strict=True):
                    value[e] += gamma ** ran.lengths[e] * ve
        out.append(value)
    how = f"look-ahead of {horizon} steps" + (" bootstrapped with the teacher's V" if use_v else "")
    return out[0] - out[1], how


def _top_separated(gap: np.ndarray, k: int, min_gap: int = 3) -> list[int]:
    """Indices of the ``k`` largest values, at least ``min_gap`` apart."""
    chosen: list[int] = []
    for i in np.argsort(-gap, kind="stable"):
        if all(abs(int(i) - j) >= min_gap for j in chosen):
            chosen.append(int(i))
        if len(chosen) == k:
            break
    return sorted(chosen)


# ---------------------------------------------------------------------------------------------- the diagnosis
def diagnose(
    controller: Controller,
    teacher: Teacher,
    *,
    episodes: int = 100,
    seed: int = DIAGNOSE_SEED,
    window: int = 100,
    critical: int = 5,
    horizon: int = 25,
    neighbours: int = 5,
    data: DistillationData | None = None,
    evidence_note: str = "",
    attribution: bool = True,
    frames: bool = True,
    n_envs: int = 8,
    progress: Progress | None = None,
) -> Diagnosis:
    """Run ``controller`` and ``teacher`` on ``episodes`` fresh episodes (seeds ``seed ...``) and explain every failure.

    Parameters
    ----------
    controller : Controller
        Any program kind; its pieces come from ``program.affine_pieces()`` (one piece when it has none).
    teacher : Teacher
        The policy it was distilled from, with its ``env_fn`` (and its critic, when it has one).
    episodes, seed : int
        Episodes and the reset seed of the first.
    window : int
        Steps before each point of no return searched for critical states.
    critical : int
        Critical states kept per failed episode (at least 3 steps apart).
    horizon : int
        Look-ahead steps of a teacher without a Q-function.
    neighbours : int
        Nearest recorded teacher states shown as evidence.
    data : DistillationData, optional
        The states the controller was fitted on (:func:`interp_rl.evidence.load_data`); without them the evidence
        is left out and ``evidence_note`` says why.
    attribution, frames : bool
        Compute the Shapley values at the critical states; draw frames around the points of no return.
    """
    check_teacher(teacher, "diagnose")
    episodes = check_int(episodes, "episodes", "diagnose")
    window = check_int(window, "window", "diagnose")
    critical = check_int(critical, "critical", "diagnose")
    horizon = check_int(horizon, "horizon", "diagnose")
    neighbours = check_int(neighbours, "neighbours", "diagnose")
    if controller.program.obs_dim != teacher.obs_dim:
        raise InterpRLError(f"The controller observes {controller.program.obs_dim} features, but the teacher "
                            f"{teacher.obs_dim}; they are for different tasks.")
    if data is not None and data.observations.shape[1] != controller.program.obs_dim:
        raise InterpRLError(f"The distillation data has {data.observations.shape[1]} features per state; the "
                            f"controller reads {controller.program.obs_dim}.")
    env_fn = teacher.env_fn
    seeds = list(range(seed, seed + episodes))
    clock: dict[str, float] = {}
    tick = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal tick
        now = time.perf_counter()
        clock[name] = now - tick
        tick = now

    def say(stage: str, done: int, total: int) -> None:
        if progress is not None:
            progress(stage, done, total)

    count = {"t": 0, "c": 0}

    def counter(key: str, stage: str) -> Callable[[int], None]:
        def bump(n: int) -> None:
            count[key] += n
            say(stage, count[key], episodes)
        return bump

    t_run = run_episodes(teacher, env_fn, seeds, n_envs=n_envs, record=True, task=teacher.task,
                         progress=counter("t", "teacher episodes"))
    c_run = run_episodes(controller, env_fn, seeds, n_envs=n_envs, record=True, snapshots=True, task=teacher.task,
                         progress=counter("c", "controller episodes"))
    lap("episodes")
    assert t_run.rollout is not None and c_run.rollout is not None
    t_ro, c_ro = t_run.rollout, c_run.rollout
    teacher_mean = float(np.mean(t_run.returns))
    threshold = half_of_teacher(teacher_mean)
    c_ret = np.asarray(c_run.returns)
    failed_idx = [int(i) for i in np.flatnonzero(c_ret < threshold)]
    rows = {i: np.flatnonzero(c_ro.episodes == i) for i in failed_idx}

    # points of no return
    found = points_of_no_return(
        teacher, env_fn, [[c_ro.states[r] for r in rows[i]] for i in failed_idx],
        [c_ro.rewards[rows[i]] for i in failed_idx], threshold,
        recovered_at_start=[t_run.returns[i] >= threshold for i in failed_idx],
        stays_up=[not t_run.terminated[i] for i in failed_idx], n_envs=n_envs, progress=progress)
    lap("points of no return")
    failed: list[FailedEpisode] = []
    for i, (pnr, log) in zip(failed_idx, found, strict=True):
        note = "" if pnr is not None else "The teacher fails this episode too, from its start."
        failed.append(FailedEpisode(i, seeds[i], float(c_ret[i]), float(percent_of_teacher(c_ret[i], teacher_mean)),
                                    int(c_run.lengths[i]), bool(c_run.terminated[i]), float(t_run.returns[i]), pnr,
                                    log, note=note))

    # critical states: the steps in the window before each point of no return
    assign, labels = _pieces(controller)
    cand: list[tuple[int, int]] = []  # (failed position, step)
    for k, fe in enumerate(failed):
        if fe.no_return:
            cand += [(k, t) for t in range(max(0, fe.no_return - window), fe.no_return)]
    judge = "critic" if getattr(teacher, "has_q", False) else f"look-ahead of {horizon} steps"
    if cand:
        cand_rows = np.array([rows[failed[k].episode][t] for k, t in cand], dtype=np.int64)
        gaps, judge = critic_gaps(teacher, controller, env_fn, c_ro.observations[cand_rows],
                                  [c_ro.states[r] for r in cand_rows], horizon=horizon, n_envs=2 * n_envs)
        say("critical states", 1, 1)
        for k, fe in enumerate(failed):
            mine = [j for j, (kk, _) in enumerate(cand) if kk == k]
            if not mine:
                continue
            pick = _top_separated(gaps[mine], critical)
            for j in pick:
                r = int(cand_rows[mine[j]])
                x = c_ro.observations[r]
                piece = int(assign(x[None, :])[0])
                fe.critical.append(CriticalState(
                    fe.episode, fe.seed, cand[mine[j]][1], float(gaps[mine[j]]), piece, labels.get(piece, str(piece)),
                    controller.program.explain_decision(controller, x), x.tolist(),
                    np.asarray(controller.predict(x[None, :]))[0].tolist(),
                    np.asarray(teacher.predict(x[None, :]))[0].tolist()))
            fe.critical.sort(key=lambda c: -c.gap)
    lap("critical states")
    crit = [c for fe in failed for c in fe.critical]

    attribution_note = ""
    if attribution and crit:
        attribution_note = _attribute(crit, controller, teacher, t_ro.observations, seed)
    elif not attribution:
        attribution_note = "Attribution was not computed (turned off)."
    lap("attribution")

    if crit and data is not None:
        _evidence(crit, controller, data, assign, neighbours)
    elif crit and not evidence_note:
        evidence_note = "No distillation data was given, so the evidence each piece rests on is not shown."
    lap("evidence")

    # piece graphs: the controller's pieces, the teacher's clusters
    order = np.lexsort((np.arange(len(c_ro.episodes)), c_ro.episodes))
    c_pieces = assign(c_ro.observations)[order]
    marks = []
    pos_of = {int(r): p for p, r in enumerate(order)}
    phase = np.zeros(len(c_ro.episodes), dtype=np.int64)  # by recorded row: run-up (1), lost (2)
    for fe in failed:
        if fe.no_return is not None:
            mine = rows[fe.episode]
            r = mine[min(fe.no_return, len(mine) - 1)]
            marks.append(pos_of[int(r)])
            phase[mine[max(0, fe.no_return - window):fe.no_return]] = 1
            phase[mine[fe.no_return:]] = 2
    fail_mask = (c_ret < threshold).tolist()
    graph = piece_graph(c_pieces, c_ro.episodes[order], c_ro.rewards[order], failed=fail_mask, phase=phase[order],
                        marks=marks, labels=labels, title=f"{controller.kind} controller: pieces")
    t_order = np.lexsort((np.arange(len(t_ro.episodes)), t_ro.episodes))
    n_clusters = int(np.clip(len(graph.nodes), 2, 12))
    seen_as, where = t_ro.observations, "its visited states"
    if callable(getattr(teacher, "latent", None)):  # ARLIN clusters the agent's own hidden layer
        seen_as, where = np.asarray(teacher.latent(t_ro.observations), dtype=np.float64), "its hidden layer"
    clusters, _ = cluster_states(seen_as, n_clusters, seed=seed)
    t_fail = (np.asarray(t_run.returns) < threshold).tolist()
    teacher_graph = piece_graph(clusters[t_order], t_ro.episodes[t_order], t_ro.rewards[t_order], failed=t_fail,
                                labels={c: f"cluster {c + 1}" for c in range(n_clusters)},
                                title=f"teacher: {n_clusters} k-means clusters of {where} over its visited states")
    lap("piece graphs")

    diag = Diagnosis(
        task=teacher.task, kind=controller.kind, features=controller.feature_names,
        units=[f.unit for f in controller.features], actions=controller.action_names, seed=seed, episodes=episodes,
        teacher_mean=teacher_mean, threshold=threshold, controller_returns=[float(v) for v in c_ret],
        teacher_returns=[float(v) for v in t_run.returns], lengths=[int(v) for v in c_run.lengths], failed=failed,
        rate=len(failed) / episodes, rate_interval=failure_interval(len(failed), episodes), judge=judge, graph=graph,
        teacher_graph=teacher_graph, window=window, evidence_note=evidence_note, attribution_note=attribution_note,
        sources={"teacher": str(getattr(teacher, "source", "")), "algo": str(getattr(teacher, "algo", ""))})
    diag.steps_ = {"c_obs": c_ro.observations, "c_episodes": c_ro.episodes, "t_obs": t_ro.observations,
                   "t_episodes": t_ro.episodes, "c_rewards": c_ro.rewards}
    if frames and failed:
        _frames(diag, env_fn, {fe.episode: [c_ro.states[r] for r in rows[fe.episode]] for fe in failed})
    lap("frames")
    diag.seconds = clock
    return diag


def _attribute(crit: list[CriticalState], controller: Controller, teacher: Any, teacher_states: np.ndarray,
               seed: int, top: int = 3, cap: int = 60) -> str:
    """Fill each critical state's side-by-side Shapley attribution (the action on which the two differ most)."""
    from interp_rl.attribution import explain, explained_model, summarize_background

    chosen = crit[:cap]
    X = np.asarray([c.observation for c in chosen])
    bg = summarize_background(teacher_states, 16, seed=seed)
    names = controller.feature_names
    t_att = explain(explained_model(teacher), X, bg, seed=seed, features=names)
    c_att = explain(controller, X, bg, seed=seed, features=names)
    span = np.asarray(controller.program.action_high) - np.asarray(controller.program.action_low)
    span = np.where(np.isfinite(span) & (span > 0), span, 1.0)
    for n, c in enumerate(chosen):
        diff = np.abs(np.asarray(c.teacher_action) - np.asarray(c.controller_action)) / span
        a = int(np.argmax(diff))

        def best(values: np.ndarray, a: int = a) -> list[list[Any]]:
            order = np.argsort(-np.abs(values[:, a]), kind="stable")[:top]
            return [[names[i], float(values[i, a])] for i in order]

        c.attribution = {"action": controller.action_names[a], "teacher": best(t_att.values[n]),
                         "controller": best(c_att.values[n]), "teacher_method": t_att.method,
                         "controller_method": c_att.method}
    left = len(crit) - len(chosen)
    return f"Attribution of the first {cap} critical states only ({left} more)." if left > 0 else ""


def _evidence(crit: list[CriticalState], controller: Controller, data: DistillationData,
              assign: Callable[[np.ndarray], np.ndarray], k: int) -> None:
    """Fill each critical state's evidence: the nearest recorded states of the piece that acted there."""
    scale = data.scale()
    data_piece = assign(data.observations)
    X = np.asarray([c.observation for c in crit])
    among = [np.flatnonzero(data_piece == c.piece) for c in crit]
    near = nearest_examples(data, X, k=k, among=among, scale=scale)
    spacing: dict[int, float] = {}
    units = [f.unit for f in controller.features]
    for n, c in enumerate(crit):
        if c.piece not in spacing:
            spacing[c.piece] = typical_spacing(data, among[n], scale=scale)
        idx = [int(i) for i in near.index[n] if i >= 0]
        rows_fitted = int(len(among[n]))
        if not idx:
            c.evidence = {"rows_fitted": 0, "rows": [], "distance_sd": [], "teacher_actions": [],
                          "typical_sd": float("nan"), "deviations": []}
            continue
        diff = X[n] - data.observations[idx[0]]
        order = np.argsort(-np.abs(diff / scale), kind="stable")[:3]
        c.evidence = {
            "rows_fitted": rows_fitted, "rows": idx,
            "distance_sd": [float(d) for d in near.distance[n][: len(idx)]],
            "teacher_actions": data.actions[idx].tolist(),
            "typical_sd": spacing[c.piece],
            "deviations": [[controller.feature_names[i], float(diff[i]), units[i], float(diff[i] / scale[i])]
                           for i in order],
        }


def _frames(diag: Diagnosis, env_fn: Callable[[int], Any], states: dict[int, list[SimState]],
            worst: int = 3, offsets: tuple[int, ...] = (-40, -20, -10, 0, 10, 20)) -> None:
    """Frames around the point of no return of the worst failed episodes (or a one-line reason in ``frames_note``)."""
    from interp_rl._frames import render_states

    chosen = [fe for fe in sorted(diag.failed, key=lambda f: f.episode_return) if fe.no_return is not None][:worst]
    for fe in chosen:
        last = len(states[fe.episode]) - 1
        steps = sorted({int(np.clip(fe.no_return + o, 0, last)) for o in offsets})  # type: ignore[operator]
        pics, why = render_states(env_fn, [states[fe.episode][s] for s in steps])
        if why:
            diag.frames_note = f"No frames: {why}."
            return
        diag.frames_[fe.episode] = (steps, pics)
