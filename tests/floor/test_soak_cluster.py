"""``tablectl soak --cluster 3``: the chaos soak on a three-node cluster of its own, nodes lost on schedule.

The soak starts its own cluster in its state dir (never the session's ``nats_floor``: it kills nodes), so
this test shares nothing with the other floor tests but the machine.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from controller.floor.cluster import NatsNotInstalled, find_nats_server

TABLECTL = [sys.executable, "-m", "controller.cli"]


@pytest.fixture(autouse=True)
def _needs_nats() -> None:
    try:
        find_nats_server()
    except NatsNotInstalled as exc:
        pytest.skip(str(exc))


def test_a_ci_sized_cluster_soak_holds_every_invariant_through_node_quorum_and_recorder_losses(
        tmp_path: Path) -> None:
    """Seed 138's schedule on two tables opens with one node lost, then two (no quorum), then new decks, a
    kill -9 of the pit and a close/open as far as the rounds last (same seed, same schedule), the recorder
    killed on its own schedule (first 6.4 s after it starts): every invariant of the soak holds through them, the
    recorder's database holding exactly each journal."""
    state = tmp_path / "soak"
    proc = subprocess.run([*TABLECTL, "soak", "--cluster", "3", "--recorder", "--tables", "2", "--rounds", "100",
                           "--seed", "138", "--step-every", "0.7", "--state-dir", str(state)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = proc.stdout.strip().splitlines()[-1]
    assert "on a 3-node nats cluster" in summary and "every invariant held" in summary, summary
    counts = {name: int(n) for n, name in re.findall(
        r"(\d+) (device faults|kills|node losses|quorum losses|recorder kills|commands|rounds settled)", summary)}
    # what the seed's first steps hold whatever the machine's pace (how many steps fit in 200 rounds does not)
    assert counts["node losses"] >= 1 and counts["quorum losses"] >= 1, summary
    assert counts["recorder kills"] >= 1 and counts["device faults"] >= 1, summary
    assert counts["rounds settled"] == 200, summary
    assert "Traceback" not in proc.stderr, proc.stderr
    # the record the invariant was read from: every event of both tables, as their journals hold them
    from controller.recorder.store import open_store

    store = open_store(str(state / "recorder.db"), create=False)
    try:
        assert {t.table_id for t in store.tables()} == {"t01", "t02"}
        assert sum(t.last_seq for t in store.tables()) >= counts["rounds settled"] * 20
        assert all(not store.gaps(t) for t in ("t01", "t02"))
    finally:
        store.close()
    # the cluster was the soak's own, in its state dir, with the soak's people (a user per role)
    creds = tomllib.loads((state / "cluster" / "credentials.toml").read_text())
    assert {"t01", "t02", "soak", "soak-surveillance"} <= set(creds["users"])
    assert creds["users"]["soak"]["role"] == "pit"
    # the nodes were killed and started again: one lost, then two, so at least three starts past the first three
    logs = [(state / "cluster" / n / "nats.log").read_text() for n in ("n1", "n2", "n3")]
    starts = [log.count("Starting nats-server") for log in logs]
    assert sum(starts) >= 3 + 3, starts


@pytest.mark.parametrize(("args", "says"), [
    (["--cluster", "2"], "--cluster 2: 3"),
    (["--cluster", "3", "--broker", "mqtt://127.0.0.1:1883"], "--cluster: the pit runs on the cluster the soak"),
])
def test_bad_cluster_soak_arguments_exit_2_with_one_line(args: list[str], says: str) -> None:
    proc = subprocess.run([*TABLECTL, "soak", "--tables", "2", "--rounds", "5", "--seed", "1", *args],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], proc.stderr


def test_the_demo_s_cluster_dir_needs_a_cluster_and_a_configuration(tmp_path: Path) -> None:
    for args, says in ((["--cluster-dir", str(tmp_path)], "--cluster-dir: only with --cluster N"),
                       (["--cluster", "3", "--cluster-dir", str(tmp_path)], "no cluster.toml")):
        proc = subprocess.run([*TABLECTL, "demo", "--no-dashboard", "--rounds", "1", *args],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0], proc.stderr
