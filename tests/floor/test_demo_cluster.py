"""``tablectl demo --cluster 3``: the pit on a NATS cluster started in the state dir, resumed on the same nodes."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from controller.floor.cluster import NatsCluster
from controller.journal import Journal
from controller.journal.anchor import load_key
from controller.mqtt.witness import retained_state_seqs
from tests.recorder.helpers import assert_holds_the_journal


def _demo(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "controller.cli", "demo", "--cluster", "3", "--speed", "max",
                           "--no-dashboard", "--quiet", "--state-dir", str(state), *args],
                          capture_output=True, text=True, timeout=240)


async def test_demo_on_a_cluster_plays_publishes_retained_state_and_resumes(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = _demo(state, "--tables", "2", "--rounds", "2")
    assert first.returncode == 0, first.stderr
    assert "NATS cluster of 3 nodes" in first.stdout and "t02: rounds 2" in first.stdout
    again = _demo(state, "--tables", "2", "--rounds", "3")  # resumed on the same nodes: one more round each
    assert again.returncode == 0, again.stderr
    assert "t01: rounds 3" in again.stdout
    # the nodes kept each table's retained state: the witness of its journal's end, read as the dashboard user
    cluster = NatsCluster(state / "cluster")
    creds = tomllib.loads((state / "cluster" / "credentials.toml").read_text())
    cluster.start()
    try:
        seqs = await retained_state_seqs(cluster.mqtt_urls[2], prefix="tables", table_ids=["t01", "t02"],
                                         username="dashboard", password=creds["users"]["dashboard"]["password"])
    finally:
        cluster.stop()
    for t in ("t01", "t02"):
        journal = Journal(state / f"{t}.journal", key=load_key(state / "journal.key"), create=False,
                          readonly=True)
        try:
            assert seqs[t] == journal.last_seq > 0
            # the demo's recorder holds each journal seq for seq, across the restart (<state-dir>/recorder.db)
            assert_holds_the_journal(state / "recorder.db", t, journal)
        finally:
            journal.close()
    more = _demo(state, "--tables", "3", "--rounds", "3")
    assert more.returncode == 2 and "no user for t03" in more.stderr and len(more.stderr.strip().splitlines()) == 1
