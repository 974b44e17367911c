"""Whatever the order of reliefs, sign-outs, alarms, closes and reopens, each dealer's figures add up to the
table's: rounds, hands, wagers, handle, wins and errors exactly, time on duty to the table's pace time (the report)
and open time (the live topic), and every round of the live figures is one dealer's or no one's."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.analytics.live import LiveAnalytics
from controller.analytics.shift import read_shift
from controller.game.money import parse_money
from controller.profiles import load_rules
from tests.analytics.dealer_records import Records

DEALERS = st.sampled_from(["d.ames", "d.bo", "d.cruz", None])
ALARMS = st.sampled_from(["dead_card", "peek_mismatch", "irregularity:console", "device_lost:shoe", "deck_change_due"])
STEP = st.one_of(
    st.tuples(st.just("round"), st.dictionaries(st.integers(1, 7), st.integers(1, 50), min_size=1, max_size=7),
              st.integers(-3, 3), st.lists(ALARMS, max_size=2), st.one_of(st.none(), DEALERS)),
    st.tuples(st.just("change"), DEALERS),
    st.tuples(st.just("alarm"), ALARMS),
    st.tuples(st.just("reopen")),
)


def play(steps: list[tuple[object, ...]]) -> Records:
    r = Records()
    r.opened()
    on_duty: str | None = None
    for step in steps:
        if step[0] == "round":
            _, wagers, sign, alarms, relief = step
            assert isinstance(wagers, dict) and isinstance(sign, int) and isinstance(alarms, list)
            held = relief if relief != on_duty else "-"
            r.round(on_duty, {s: 100 * w for s, w in wagers.items()}, {s: 50 * w * sign for s, w in wagers.items()},
                    alarms=tuple(alarms), relieved_by=held)
            if held != "-":
                r.dealer(held if isinstance(held, str) else None, on_duty, dt=0.001)
                on_duty = held if isinstance(held, str) else None
        elif step[0] == "change" and step[1] != on_duty:
            dealer = step[1] if isinstance(step[1], str) else None
            r.dealer(dealer, on_duty)
            on_duty = dealer
        elif step[0] == "alarm":
            r.alarm(str(step[1]))
        elif step[0] == "reopen":
            r.closed()
            r.opened()
    return r


@settings(max_examples=150, deadline=None)
@given(st.lists(STEP, max_size=30))
def test_the_dealers_add_up_to_the_table(steps: list[tuple[object, ...]]) -> None:
    r = play(steps)
    shift = read_shift(r.bodies, load_rules("house-h17"))
    f, dealers = shift.figures, shift.dealers
    assert sum(s.rounds for s in dealers.values()) == f.rounds
    assert sum(s.hands for s in dealers.values()) == f.hands
    assert sum(s.initial for s in dealers.values()) == f.initial_wagers
    assert sum(s.handle for s in dealers.values()) == f.handle
    assert sum(s.house_net for s in dealers.values()) == f.house_net
    assert abs(sum(s.on_duty_s for s in dealers.values()) - (f.play_s + f.idle_s)) < 1e-6
    counted = sum(n for s in dealers.values() for n in s.errors.values())
    assert counted == sum(1 for b in r.bodies if b["type"] == "alarm" and b["code"] in
                          ("dead_card", "peek_mismatch", "irregularity:console"))

    live = LiveAnalytics()
    for body in r.bodies:
        live.take(body)
    payload = live.payload(None, table_id="t01", profile="house-h17")
    named = payload["dealers"]
    no_one = live.dealers.sums.get(None)
    assert sum(d["rounds"] for d in named.values()) + (no_one.rounds if no_one else 0) == payload["rounds"]
    assert sum(parse_money(d["actual_win"]) for d in named.values()) + (no_one.house_net if no_one else 0) == \
        parse_money(payload["house_net"])
    on_duty = sum(d["on_duty_s"] for d in named.values()) + (no_one.on_duty_s if no_one else 0) + \
        live.dealers.unattributed.on_duty_s  # the dealer on duty since the open, not said yet
    assert abs(on_duty - payload["open_s"]) < 1e-3
