"""The ARS study's parts on a small task: one worker against two, and a two-node Ray cluster against a process
pool, each giving the same controller (``benchmarks.studies.ars``)."""

from __future__ import annotations

import pytest

from benchmarks.studies import ars


def test_one_and_two_workers_give_the_same_controller() -> None:
    record = ars.workers("InvertedPendulum-v5", 1, repeats=2)
    assert record["same_controller"] is True and record["repeats"] == 2
    assert [(r["repeat"], r["workers"]) for r in record["runs"]] == [(0, 1), (0, 2), (1, 1), (1, 2)]
    assert len({r["env_steps"] for r in record["runs"]}) == 1 and record["runs"][0]["env_steps"] > 0


@pytest.mark.xdist_group("ray")  # one Ray cluster at a time on the machine: the tests of a group share a worker
def test_a_two_node_ray_cluster_gives_the_process_pools_controller() -> None:
    pytest.importorskip("ray")
    record = ars.ray_cluster("InvertedPendulum-v5", 1)
    assert record["same_controller"] is True
    pool, cluster = record["runs"]
    assert pool["executor"] == "process" and cluster["executor"] == "ray"
    assert cluster["cluster_nodes"] == 2 and cluster["nodes_used"] == 2
