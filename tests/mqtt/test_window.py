"""The outbox window (controller/mqtt/window.py) on its own: no broker, no event loop, no journal.

The publisher asks the window what to send and tells it what was acknowledged; these tests play the
publisher's part by hand: an outbox is a list of records, a PUBACK is ``acknowledge(ticket)``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from controller.mqtt.window import Marks, OutboxWindow, RefreshTicks, Send, batches

WINDOW_SOURCE = Path(__file__).resolve().parents[2] / "controller" / "mqtt" / "window.py"


@dataclass(frozen=True, slots=True)
class Row:
    """An outbox record as the journal gives it."""

    seq: int
    body: str


def rows(upto: int, start: int = 1) -> list[Row]:
    return [Row(seq, f'{{"seq":{seq}}}') for seq in range(start, upto + 1)]


def step(window: OutboxWindow, outbox: list[Row]) -> list[Send]:
    """What the publisher's ``_send`` does: read what the window wants from the outbox, make its sends."""
    last_seq = outbox[-1].seq if outbox else 0
    wanted = window.wanted(last_seq)
    records: list[Row] = []
    if wanted is not None:
        after, limit = wanted
        records = [row for row in outbox if row.seq > after][:limit]
    return list(window.sends(records, last_seq))


def shown(sends: list[Send]) -> list[str]:
    """``e3`` for the record seq 3, ``state:<body>``, ``alarms:<body>``... in wire order."""
    return [f"e{s.seq}" if s.topic == "events" else f"{s.topic}:{s.payload.decode()}" for s in sends]


def opened(**kwargs: int) -> OutboxWindow:
    window = OutboxWindow(**kwargs)
    window.connection_made()
    window.opened(0)
    return window


# ---- order on the wire ------------------------------------------------------------------------------------


def test_records_go_in_seq_order_each_state_right_after_the_record_it_follows() -> None:
    window = opened()
    window.queue_state(1, b"s1")
    window.queue_state(3, b"s3")
    assert shown(step(window, rows(3))) == ["e1", "state:s1", "e2", "e3", "state:s3"]


def test_a_state_waits_until_the_record_it_follows_is_sent() -> None:
    window = opened()
    window.queue_state(5, b"s5")
    assert shown(step(window, rows(4))) == ["e1", "e2", "e3", "e4"]
    assert window.pending_states == 1
    assert shown(step(window, rows(5))) == ["e5", "state:s5"]


def test_a_record_is_handed_out_once_per_connection() -> None:
    window = opened()
    assert shown(step(window, rows(2))) == ["e1", "e2"]
    assert step(window, rows(2)) == []
    assert shown(step(window, rows(3))) == ["e3"]
    assert window.sent_upto == 3


def test_only_events_are_published_without_retain() -> None:
    window = opened()
    window.queue_state(1, b"s")
    window.replace("alarms", b"[]")
    window.replace("history", b"[]")
    window.replace("analytics", b"{}")
    sends = step(window, rows(1))
    assert [(s.topic, s.retain) for s in sends] == [
        ("events", False), ("state", True), ("alarms", True), ("history", True), ("analytics", True)]
    assert sends[0].payload == b'{"seq":1}', "a record's body goes as the journal holds it"


def test_tickets_name_each_send_in_wire_order() -> None:
    window = opened()
    window.queue_state(1, b"s1")
    sends = step(window, rows(2))
    assert [s.ticket for s in sends] == sorted({s.ticket for s in sends})
    assert window.oldest == sends[0].ticket
    assert window.in_flight == 3


# ---- the window's size ------------------------------------------------------------------------------------


def test_the_window_bounds_how_many_records_are_read_while_others_are_in_flight() -> None:
    window = opened(size=3)
    outbox = rows(10)
    first = step(window, outbox)
    assert shown(first) == ["e1", "e2", "e3"]
    assert window.wanted(10) is None, "a full window reads nothing more"
    assert step(window, outbox) == []
    assert window.acknowledge(first[0].ticket) == 1
    assert window.wanted(10) == (3, 1), "one PUBACK, room for one more record after seq 3"
    assert shown(step(window, outbox)) == ["e4"]


def test_the_states_due_with_the_records_ride_along_beyond_the_window() -> None:
    window = opened(size=2)
    window.queue_state(1, b"s1")
    window.queue_state(2, b"s2")
    assert shown(step(window, rows(2))) == ["e1", "state:s1", "e2", "state:s2"]
    assert window.in_flight == 4
    assert window.wanted(3) is None


def test_a_window_is_at_least_one() -> None:
    window = opened(size=0)
    assert shown(step(window, rows(3))) == ["e1"]


def test_nothing_is_sent_while_the_connection_is_not_open() -> None:
    window = OutboxWindow()
    window.queue_state(1, b"s1")
    window.replace("alarms", b"[1]")
    assert window.wanted(1) is None
    assert list(window.sends(rows(1), 1)) == []
    window.opened(0)
    assert shown(step(window, rows(1))) == ["e1", "state:s1", "alarms:[1]"]
    window.connection_lost()
    window.queue_state(2, b"s2")
    assert window.wanted(2) is None
    assert list(window.sends(rows(2, start=2), 2)) == []


# ---- acknowledgements and the delivered mark --------------------------------------------------------------


def test_out_of_order_acks_advance_the_mark_only_over_a_contiguous_prefix() -> None:
    window = opened()
    e1, e2, e3, e4 = step(window, rows(4))
    assert window.acknowledge(e3.ticket) == 0
    assert window.acknowledge(e2.ticket) == 0
    assert window.delivered_upto == 0, "record 1 is not acknowledged: nothing after it is delivered"
    assert window.acknowledge(e1.ticket) == 3
    assert window.delivered_upto == 3
    assert window.oldest == e4.ticket
    assert window.acknowledge(e4.ticket) == 1
    assert window.delivered_upto == 4
    assert window.in_flight == 0


def test_an_unacknowledged_state_holds_back_the_mark_of_the_records_after_it() -> None:
    window = opened()
    window.queue_state(1, b"s1")
    e1, s1, e2 = step(window, rows(2))
    assert window.acknowledge(e1.ticket) == 1
    assert window.delivered_upto == 1
    assert window.acknowledge(e2.ticket) == 0
    assert window.delivered_upto == 1
    assert window.acknowledge(s1.ticket) == 2
    assert window.delivered_upto == 2
    assert window.acked.states == 1


def test_an_ack_twice_or_from_a_lost_connection_changes_nothing() -> None:
    window = opened()
    old = step(window, rows(3))
    window.connection_lost()
    window.opened(0)
    again = step(window, rows(3))
    assert shown(again) == ["e1", "e2", "e3"]
    for send in old:
        assert window.acknowledge(send.ticket) == 0
    assert window.delivered_upto == 0
    assert window.acknowledge(again[0].ticket) == 1
    assert window.acknowledge(again[0].ticket) == 0
    assert window.delivered_upto == 1
    assert window.acknowledge(10_000) == 0


def test_acknowledged_states_and_retained_payloads_are_counted_by_their_newest_version() -> None:
    window = opened()
    window.queue_state(1, b"s1")
    window.replace("alarms", b"[1]")
    window.replace("alarms", b"[1,2]")
    window.replace("history", b"[]")
    sends = step(window, rows(1))
    assert shown(sends) == ["e1", "state:s1", "alarms:[1,2]", "history:[]"]
    queued = window.queued
    assert queued == Marks(states=1, alarms=2, history=1, analytics=0)
    assert not window.acked.covers(queued)
    for send in sends[:-1]:
        window.acknowledge(send.ticket)
    assert window.acked == Marks(states=1, alarms=2, history=0, analytics=0)
    assert not window.acked.covers(queued), "the history is not acknowledged yet"
    window.acknowledge(sends[-1].ticket)
    assert window.acked.covers(queued)


# ---- a lost connection ------------------------------------------------------------------------------------


def test_a_lost_connection_sends_the_unacknowledged_records_again_in_order() -> None:
    window = opened()
    outbox = rows(5)
    e1, e2, _, _, _ = step(window, outbox)
    window.acknowledge(e1.ticket)
    window.acknowledge(e2.ticket)
    window.connection_lost()
    assert window.in_flight == 0
    window.connection_made()
    window.opened(window.delivered_upto)
    assert window.wanted(5) == (2, 64)
    assert shown(step(window, outbox)) == ["e3", "e4", "e5"]


def test_a_new_connection_starts_from_the_mark_it_is_given() -> None:
    window = opened()
    step(window, rows(5))
    window.connection_lost()
    window.opened(4)  # the journal says: delivered up to 4 (an earlier process had them acknowledged)
    assert window.delivered_upto == 4
    assert shown(step(window, rows(6))) == ["e5", "e6"]


def test_opening_forgets_what_an_earlier_connection_had_in_flight() -> None:
    window = opened()
    step(window, rows(3))
    window.opened(1)
    assert window.in_flight == 0
    assert shown(step(window, rows(3))) == ["e2", "e3"]


def test_the_newest_acknowledged_records_are_resent_on_a_new_connection() -> None:
    window = OutboxWindow(size=64, resend=64)
    assert window.resend_span(100) == (37, 100)
    assert window.resend_span(10) == (1, 10)
    assert window.resend_span(0) is None, "nothing acknowledged, nothing to repeat"
    assert OutboxWindow(resend=0).resend_span(100) is None
    assert OutboxWindow(resend=-3).resend_span(100) is None


def test_a_resend_goes_in_batches_of_the_window() -> None:
    got = list(batches(rows(7), 3))
    assert [[row.seq for row in batch] for batch in got] == [[1, 2, 3], [4, 5, 6], [7]]
    assert list(batches([], 3)) == []


# ---- the state queue and the retained payloads ------------------------------------------------------------


def test_the_state_queue_drops_the_oldest_and_keeps_the_newest() -> None:
    window = OutboxWindow(max_pending_states=3)
    for seq in range(1, 6):
        window.queue_state(seq, f"s{seq}".encode())
    assert window.pending_states == 3
    assert window.queued.states == 5
    window.connection_made()
    window.opened(0)
    assert shown(step(window, rows(5))) == ["e1", "e2", "e3", "state:s3", "e4", "state:s4", "e5", "state:s5"]


def test_a_new_connection_publishes_the_newest_state_again() -> None:
    window = opened()
    window.queue_state(1, b"s1")
    for send in step(window, rows(1)):
        window.acknowledge(send.ticket)
    assert window.idle()
    window.connection_lost()
    window.connection_made()
    assert window.pending_states == 1, "a restarted broker may have lost its retained state"
    window.opened(1)
    assert shown(step(window, rows(1))) == ["state:s1"]


def test_a_new_connection_does_not_queue_an_older_state_before_a_pending_newer_one() -> None:
    window = opened()
    window.queue_state(1, b"s1")
    step(window, rows(1))
    window.connection_lost()
    window.queue_state(2, b"s2")
    window.connection_made()
    assert window.pending_states == 1
    window.opened(0)
    assert shown(step(window, rows(2))) == ["e1", "e2", "state:s2"]


def test_retained_payloads_wait_until_every_record_is_sent_and_only_the_newest_goes() -> None:
    window = opened(size=2)
    window.replace("analytics", b"a1")
    window.replace("alarms", b"[1]")
    window.replace("analytics", b"a2")
    outbox = rows(3)
    first = step(window, outbox)
    assert shown(first) == ["e1", "e2"], "record 3 is not out yet"
    window.acknowledge(first[0].ticket)
    assert shown(step(window, outbox)) == ["e3", "alarms:[1]", "analytics:a2"]
    assert step(window, outbox) == [], "sent once"


def test_a_new_connection_publishes_the_retained_payloads_again() -> None:
    window = opened()
    window.replace("history", b"[h]")
    for send in step(window, []):
        window.acknowledge(send.ticket)
    window.connection_lost()
    window.connection_made()
    assert not window.idle()
    window.opened(0)
    assert shown(step(window, [])) == ["history:[h]"]


def test_a_retained_topic_never_given_a_payload_is_not_published() -> None:
    window = opened()
    window.connection_made()
    assert window.idle()
    assert step(window, []) == []


def test_idle_means_nothing_queued_and_nothing_in_flight() -> None:
    window = opened()
    assert window.idle()
    window.queue_state(1, b"s1")
    assert not window.idle()
    sends = step(window, rows(1))
    assert not window.idle(), "in flight"
    for send in sends:
        window.acknowledge(send.ticket)
    assert window.idle()
    window.replace("alarms", b"[]")
    assert not window.idle()


# ---- the retained refresh (a copy a broker failed to store is replaced: docs/floor.md) ---------------------


def _sent_and_acknowledged(window: OutboxWindow, outbox: list[Row]) -> list[Send]:
    sends = step(window, outbox)
    for send in sends:
        window.acknowledge(send.ticket)
    return sends


def test_a_refresh_sends_the_newest_retained_payloads_again_byte_for_byte() -> None:
    window = opened()
    window.queue_state(1, b'{"seq":1,"ts":1.5}')
    window.queue_state(2, b'{"seq":2,"ts":2.5}')
    window.replace("alarms", b"[1]")
    window.replace("history", b"[h]")
    window.replace("analytics", b"a1")
    _sent_and_acknowledged(window, rows(2))
    assert window.idle()
    queued = window.queued
    window.refresh(("state", "alarms", "history", "analytics"))
    assert not window.idle()
    sends = step(window, rows(2))
    assert shown(sends) == ['state:{"seq":2,"ts":2.5}', "alarms:[1]", "history:[h]", "analytics:a1"]
    assert all(s.retain for s in sends)
    assert window.queued == queued, "the same snapshot and payloads again, not new ones"
    for send in sends:
        window.acknowledge(send.ticket)
    assert window.idle() and window.acked.covers(queued)


def test_a_refresh_only_of_the_topics_it_names() -> None:
    window = opened()
    window.queue_state(1, b"s1")
    window.replace("alarms", b"[1]")
    window.replace("history", b"[h]")
    _sent_and_acknowledged(window, rows(1))
    window.refresh(("history",))
    assert shown(step(window, rows(1))) == ["history:[h]"]


def test_a_refresh_never_overtakes_a_queued_newer_state() -> None:
    window = opened()
    window.queue_state(1, b"s1")
    _sent_and_acknowledged(window, rows(1))
    window.queue_state(2, b"s2")  # its record is not in the outbox yet: it waits for it
    window.refresh(("state",))
    assert step(window, rows(1)) == [], "s1 is not sent again while the newer s2 waits"
    assert window.pending_states == 1
    assert shown(step(window, rows(2))) == ["e2", "state:s2"]


def test_a_refresh_sends_the_newest_state_even_while_it_is_in_flight_never_an_older_one() -> None:
    window = opened()
    window.queue_state(1, b"s1")
    _sent_and_acknowledged(window, rows(1))
    window.queue_state(2, b"s2")
    assert shown(step(window, rows(2))) == ["e2", "state:s2"]  # not acknowledged yet
    window.refresh(("state",))
    assert shown(step(window, rows(2))) == ["state:s2"]


def test_a_refreshed_state_still_follows_its_record_after_a_reconnect() -> None:
    window = opened()
    window.queue_state(1, b"s1")
    step(window, rows(1))
    window.connection_lost()
    window.connection_made()  # the newest state queued again already
    window.opened(0)
    window.refresh(("state",))
    assert window.pending_states == 1, "queued once, not twice"
    assert shown(step(window, rows(1))) == ["e1", "state:s1"]


def test_a_refreshed_retained_payload_waits_for_the_records_and_goes_once_as_its_newest() -> None:
    window = opened()
    window.replace("alarms", b"[1]")
    _sent_and_acknowledged(window, [])
    window.replace("alarms", b"[1,2]")
    window.refresh(("alarms",))
    assert shown(step(window, rows(2))) == ["e1", "e2", "alarms:[1,2]"]
    assert step(window, rows(2)) == []


def test_a_refresh_publishes_nothing_the_table_never_gave() -> None:
    window = opened()
    window.refresh(("state", "alarms", "history", "analytics"))
    assert window.idle()
    assert step(window, []) == []


def test_a_topic_is_due_for_a_refresh_after_two_quiet_ticks_and_then_every_second_tick() -> None:
    ticks = RefreshTicks()
    assert ticks.tick({"state": 1, "alarms": 1}) == [], "the first tick only looks"
    assert ticks.tick({"state": 2, "alarms": 1}) == [], "the state changed; the alarms are quiet for one tick"
    assert ticks.tick({"state": 2, "alarms": 1}) == ["alarms"]
    assert ticks.tick({"state": 2, "alarms": 1}) == ["state"]
    assert ticks.tick({"state": 2, "alarms": 1}) == ["alarms"], "a refresh is not a change: again two ticks on"
    assert ticks.tick({"state": 2, "alarms": 1}) == ["state"]


def test_a_topic_published_at_every_tick_is_never_refreshed() -> None:
    ticks = RefreshTicks()
    for mark in range(1, 20):
        assert ticks.tick({"state": mark}) == []


# ---- sans-I/O ---------------------------------------------------------------------------------------------

ALLOWED_IMPORTS = {"__future__", "collections", "collections.abc", "dataclasses", "typing"}


def test_the_window_imports_no_io_no_clock_no_event_loop() -> None:
    imported: set[str] = set()
    for node in ast.walk(ast.parse(WINDOW_SOURCE.read_text(), str(WINDOW_SOURCE))):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add("." * node.level + (node.module or ""))
    assert imported, "the check reads the imports"
    assert imported <= ALLOWED_IMPORTS, sorted(imported - ALLOWED_IMPORTS)
