"""The UDRL study (``benchmarks/studies/udrl.py``) on a tiny budget: its record, its report, and a rerun that reuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.studies import udrl

TINY = ["run", "--task", "CartPole-v1", "--steps", "600", "--seeds", "0", "--estimators", "forest", "--baselines",
        "ppo", "--episodes", "2", "--eval-every", "256",
        *[x for hp in ("n_trees=5", "warmup_episodes=5", "episodes_per_iter=5", "top_episodes=5", "buffer_episodes=20",
                       "eval_episodes=1") for x in ("--udrl-hp", hp)]]


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], Path, Path]:
    tmp = tmp_path_factory.mktemp("udrl-study")
    args = [*TINY, "--work", str(tmp / "work"), "--out", str(tmp / "out")]
    udrl.main(args)
    return args, tmp / "work", tmp / "out"


def test_the_run_records_every_run_and_the_report_rebuilds_from_the_record(study: tuple[list[str], Path, Path]) -> None:
    _, _, out = study
    record = udrl.read_json(out / "udrl_CartPole-v1.json")
    assert [(r["method"], r["estimator"], r["seed"]) for r in record["runs"]] == [("udrl", "forest", 0), ("ppo", "", 0)]
    for r in record["runs"]:
        assert len(r["returns"]) == 2 and r["env_steps"] >= 600 and r["curve"] and r["size"]["parameters"] > 0
        assert [s for s, _ in r["curve"]] == sorted(s for s, _ in r["curve"])
    forest = record["runs"][0]
    assert forest["played"] == "controller" and forest["size"]["trees"] == 5 and forest["same_as_train_eval"]
    assert record["settings"]["udrl-forest"]["n_trees"] == 5 and record["settings"]["ppo"]["checkpoint_every"] == 256
    assert record["commands"][0].startswith("python -m benchmarks.studies.udrl run --task CartPole-v1 --steps 600 ")
    assert "--udrl-hp n_trees=5" in record["commands"][0] and "--work" not in record["commands"][0]
    written = (out / "report.md").read_bytes()
    assert udrl.PAPER.encode() in written and (out / "figures" / "curves-CartPole-v1.png").is_file()
    (out / "report.md").unlink()
    udrl.main(["report", "--out", str(out)])
    assert (out / "report.md").read_bytes() == written


def test_a_second_run_reads_the_finished_runs_back(study: tuple[list[str], Path, Path],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    args, work, out = study
    kept = [work / "CartPole-v1-udrl-forest-seed0" / "metrics.json", work / "CartPole-v1-udrl-forest-seed0" /
            "controller.json", work / "CartPole-v1-ppo-seed0" / "teacher.json", work / "CartPole-v1-ppo-seed0" /
            "model.zip"]
    before = [(p.stat().st_mtime_ns, p.read_bytes()) for p in kept]
    record = (out / "udrl_CartPole-v1.json").read_bytes()
    capsys.readouterr()
    udrl.main(args)
    said = capsys.readouterr().out
    assert "udrl forest seed 0: finished before" in said and "ppo seed 0: finished before" in said
    assert "training in" not in said
    assert [(p.stat().st_mtime_ns, p.read_bytes()) for p in kept] == before
    assert (out / "udrl_CartPole-v1.json").read_bytes() == record


def test_finished_runs_are_kept_in_out_and_read_back_without_the_work_folder(
        study: tuple[list[str], Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    args, work, out = study
    record = udrl.read_json(out / "udrl_CartPole-v1.json")
    assert record["planned_runs"] == 2 and "Partial" not in (out / "report.md").read_text()
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["CartPole-v1-ppo-seed0.json",
                                                                "CartPole-v1-udrl-forest-seed0.json"]
    moved = tmp_path / "out"
    shutil.copytree(out, moved)
    gone = [a if a != str(work) else str(tmp_path / "no-work") for a in args]
    gone[gone.index("--out") + 1] = str(moved)
    capsys.readouterr()
    udrl.main(gone)
    said = capsys.readouterr().out
    assert said.count("finished before, read back from") == 2 and "training" not in said
    assert not (tmp_path / "no-work").exists()
    assert udrl.read_json(moved / "udrl_CartPole-v1.json") == record


def test_a_cut_short_study_reports_what_it_finished_as_partial(study: tuple[list[str], Path, Path],
                                                                 tmp_path: Path) -> None:
    import shutil

    args, work, out = study
    moved = tmp_path / "out"
    shutil.copytree(out, moved)
    (moved / "runs" / "CartPole-v1-ppo-seed0.json").unlink()
    # the PPO run cannot train again: its work folder names a file, so the study stops after the forest's run
    blocker = tmp_path / "blocked"
    shutil.copytree(work / "CartPole-v1-udrl-forest-seed0", blocker / "CartPole-v1-udrl-forest-seed0")
    (blocker / "CartPole-v1-ppo-seed0").write_text("in the way")
    cut = list(args)
    cut[cut.index("--work") + 1], cut[cut.index("--out") + 1] = str(blocker), str(moved)
    with pytest.raises((SystemExit, OSError)):
        udrl.main(cut)
    record = udrl.read_json(moved / "udrl_CartPole-v1.json")
    assert [r["method"] for r in record["runs"]] == ["udrl"] and record["planned_runs"] == 2
    assert "**Partial:** runs finished so far: 1 of the 2 this" in (moved / "report.md").read_text()


def test_a_kept_run_with_other_settings_is_refused_in_one_line(study: tuple[list[str], Path, Path]) -> None:
    args, _, out = study
    other = list(args)
    other[other.index("--episodes") + 1] = "3"
    with pytest.raises(SystemExit) as stop:
        udrl.main(other)
    message = str(stop.value.code)
    assert message.startswith("Error: ") and "runs/CartPole-v1-udrl-forest-seed0.json" in message
    assert "episodes differ" in message and "\n" not in message


@pytest.mark.parametrize("part", [["run"], ["read"], ["report"]])
def test_an_out_that_is_a_file_is_refused_in_one_line(tmp_path: Path, part: list[str]) -> None:
    afile = tmp_path / "notes.txt"
    afile.write_text("not a folder")
    for out in (afile, afile / "below"):
        with pytest.raises(SystemExit) as stop:
            udrl.main([*part, "--out", str(out), *(["--work", str(tmp_path / "work")] if part == ["run"] else [])])
        message = str(stop.value.code)
        assert message.startswith("Error: --out ") and str(out) in message and "\n" not in message, message
    assert afile.read_text() == "not a folder" and not (tmp_path / "work").exists()


def test_read_distils_one_small_tree_from_each_forest_and_reports_it(
        study: tuple[list[str], Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    from interp_rl.program import load_controller

    _, work, out = study
    moved = tmp_path / "out"
    shutil.copytree(out, moved)
    monkeypatch.setattr(udrl, "READ", {**udrl.READ, "iterations": 1, "steps": 300, "eval_episodes": 1})
    udrl.main(["read", "--work", str(work), "--out", str(moved), "--leaves", "4"])
    forest = udrl.read_json(moved / "udrl_CartPole-v1.json")["runs"][0]
    row = udrl.read_json(moved / "runs" / "CartPole-v1-udrl-forest-seed0-tree.json")["row"]
    assert row["size"]["leaves"] <= 4 and len(row["returns"]) == len(forest["returns"]) == 2
    assert 0.0 <= row["fidelity"]["forest_states"]["agreement"] <= 1.0 and row["rules"].startswith("|---")
    kept = moved / "trees" / "CartPole-v1-udrl-forest-seed0"
    tree = load_controller(kept)
    assert tree.kind == "tree" and tree.feature_names[-2:] == ["desired_return", "desired_horizon"]
    assert tree.metadata["command"] == forest["command"] and (kept / "rules.txt").read_text() == row["rules"]
    _, replay = udrl.play_udrl(kept, 2)  # the kept tree gives the row's returns
    assert [float(r) for r in replay.returns] == row["returns"]
    text = (moved / "report.md").read_text()
    assert "### A small tree read from each forest" in text and row["rules"].splitlines()[0] in text
    assert "python -m benchmarks.studies.udrl read --task CartPole-v1 --leaves 4" in text
    assert (moved / "figures" / "size-CartPole-v1.png").is_file()
    capsys.readouterr()  # made before: read back, even without the work folder
    udrl.main(["read", "--work", str(tmp_path / "no-work"), "--out", str(moved), "--leaves", "4"])
    assert "made before, read back from" in capsys.readouterr().out and not (tmp_path / "no-work").exists()
    with pytest.raises(SystemExit, match=r"holds a finished run with other settings \(max_leaves differ\)"):
        udrl.main(["read", "--work", str(work), "--out", str(moved), "--leaves", "5"])
    with pytest.raises(SystemExit, match="no record of Acrobot-v1 in .*records: CartPole-v1"):
        udrl.main(["read", "--task", "Acrobot-v1", "--work", str(work), "--out", str(moved)])
