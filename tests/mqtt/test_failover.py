"""The one broker failover policy (controller/mqtt/failover.py), sans-I/O: the publisher and the recorder drive
it; here it is told what happened and its answers checked, no broker, no clock."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from controller.mqtt.failover import Failover, Retry


def _policy(brokers: int, lo: float = 0.05, hi: float = 5.0) -> Failover:
    return Failover(brokers, backoff_min=lo, backoff_max=hi, jitter=lambda: 0.5)  # jitter factor 1.0


def test_one_broker_waits_after_each_failure_doubling_to_the_cap() -> None:
    f = _policy(1, 0.05, 0.3)
    waits = []
    for _ in range(5):
        f.failed()
        waits.append(f.ended())
    assert [r.wait for r in waits] == [0.05, 0.1, 0.2, 0.3, 0.3]
    assert all(r.broker == 0 and not r.moved and not r.was_connected for r in waits)


def test_jitter_spreads_each_wait_from_half_to_one_and_a_half_times() -> None:
    low = Failover(1, backoff_min=1.0, backoff_max=8.0, jitter=lambda: 0.0)
    high = Failover(1, backoff_min=1.0, backoff_max=8.0, jitter=lambda: 1.0)
    assert [low.ended().wait for _ in range(5)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert [high.ended().wait for _ in range(5)] == [1.5, 3.0, 6.0, 12.0, 12.0]


def test_a_restarted_loop_goes_on_from_the_broker_it_had() -> None:
    f = Failover(3, backoff_min=0.1, backoff_max=1.0, jitter=None, start=2)
    assert f.current == 2
    assert [f.ended().wait for _ in range(3)] == [None, None, 0.1]


def test_a_connection_resets_the_backoff() -> None:
    f = _policy(1, 0.05, 5.0)
    for _ in range(4):
        f.ended()
    f.connected()
    assert f.ended() == Retry(0, 0.05, False, True)


def test_several_brokers_are_tried_at_once_and_a_round_of_failures_waits() -> None:
    f = _policy(3)
    assert f.current == 0
    assert f.ended() == Retry(1, None, True, False)
    assert f.ended() == Retry(2, None, True, False)
    assert f.ended() == Retry(0, 0.05, True, False)  # back to the first: the round failed, wait
    assert f.ended() == Retry(1, None, True, False)
    assert f.ended() == Retry(2, None, True, False)
    assert f.ended() == Retry(0, 0.1, True, False)


def test_a_lost_broker_starts_a_new_round_from_it() -> None:
    f = _policy(3)
    f.ended()  # 0 did not answer
    f.connected()  # 1 did
    assert f.ended() == Retry(2, None, True, True)  # lost 1: the next at once
    assert f.ended() == Retry(0, None, True, False)
    assert f.ended() == Retry(1, 0.05, True, False)  # round from 1 done: wait, the backoff reset by the connection


def test_the_outage_is_logged_once_until_the_next_connection() -> None:
    f = _policy(2)
    assert f.failed() is True
    assert [f.failed() for _ in range(3)] == [False, False, False]
    f.connected()
    assert f.failed() is True  # a lost connection is a new outage
    assert f.failed() is False


def test_no_broker_is_refused() -> None:
    try:
        Failover(0, backoff_min=0.1, backoff_max=1)
    except ValueError as exc:
        assert str(exc) == "no broker given"
    else:  # pragma: no cover
        raise AssertionError("accepted no broker")


@given(brokers=st.integers(1, 6), events=st.lists(st.sampled_from(["fail", "connect"]), max_size=80))
def test_every_broker_is_tried_before_any_wait(brokers: int, events: list[str]) -> None:
    """Between two waits each broker is tried exactly once; a wait follows only a whole round of failures."""
    f = _policy(brokers, 0.01, 1.0)
    tried = {f.current}
    for event in events:
        if event == "connect":
            f.connected()
            tried = {f.current}
        retry = f.ended()
        assert 0 <= retry.broker < brokers
        assert retry.broker == f.current
        if retry.wait is None:
            assert retry.broker not in tried
            tried.add(retry.broker)
        else:
            assert len(tried) == brokers
            assert 0.005 <= retry.wait <= 1.0
            tried = {retry.broker}
