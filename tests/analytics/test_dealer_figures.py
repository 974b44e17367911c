"""Each dealer's figures (DESIGN, "The dealer on duty"; controller/analytics/dealers.py) on hand-made records: the
live topic's ``dealers`` and the report's per-dealer sums, against the table's own figures."""

from __future__ import annotations

import math
from typing import Any

import pytest

from controller.analytics.dealers import DealerFold
from controller.analytics.hold import Spread, win_variance, z_score
from controller.analytics.live import LiveAnalytics, Theory
from controller.analytics.shift import read_shift
from controller.contract.alarms import device_lost, irregularity, procedure_error
from controller.game.money import format_money, parse_money
from controller.profiles import load_rules
from controller.selfcheck.watch import ALARM_SOURCE as PROGRAM_SOURCE
from tests.analytics.dealer_records import Log, Records

THEORY = Theory(0.006, Spread(1.15, "test", 0.45))


def live(records: Records) -> dict[str, Any]:
    analytics = LiveAnalytics()
    for body in records.bodies:
        analytics.take(body)
    analytics.upto = len(records.bodies)
    return analytics.payload(THEORY, table_id="t01", profile="house-h17")


def shift_of_two_dealers() -> Records:
    """d.ames deals rounds 1-3 (a dead card in round 2), is relieved during round 4 by d.bo (the change held to its
    settlement), d.bo deals 5-6 (a card left the shoe unread), signs out; round 7 has no dealer on duty."""
    r = Records()
    r.opened()
    r.dealer("d.ames", None, by="pit.kim")
    r.round("d.ames", {1: 1000, 2: 500}, {1: 1000, 2: -500})
    r.round("d.ames", {1: 1000}, {1: -1000}, alarms=("dead_card",))
    r.round("d.ames", {3: 2500}, {3: 3750})
    r.round("d.ames", {1: 1000, 3: 1000}, {1: -1000, 3: 0}, relieved_by="d.bo")
    r.dealer("d.bo", "d.ames")
    r.round("d.bo", {2: 2000}, {2: -2000}, alarms=(device_lost("shoe"), "deck_change_due"))
    r.round("d.bo", {2: 2000, 5: 100}, {2: 2000, 5: -100}, alarms=(irregularity("shoe"),))
    r.dealer(None, "d.bo")
    r.round(None, {4: 1500}, {4: -1500}, alarms=("dead_card",))
    return r


def test_the_alarms_a_dealer_answers_for_are_those_of_the_dealing() -> None:
    assert procedure_error("dead_card", False)
    assert procedure_error("peek_mismatch", True)
    assert procedure_error("integrity_card_count", True)
    assert procedure_error(irregularity("shoe"), True)
    assert procedure_error(irregularity("console"), False)
    assert not procedure_error(device_lost("shoe"), True)
    assert not procedure_error(irregularity("card_reader"), False)
    assert not procedure_error("journal_write", True)
    assert not procedure_error("deck_change_due", False)
    assert not procedure_error("deck_change_overdue", True)
    assert not procedure_error("shuffle_quality", False)
    assert not procedure_error("clock_jump", False)
    assert not procedure_error(irregularity(PROGRAM_SOURCE), True)  # the program's own check names the same source


def test_the_live_topic_gives_each_dealer_their_rounds_errors_wagers_and_wins() -> None:
    payload = live(shift_of_two_dealers())
    dealers = payload["dealers"]
    assert sorted(dealers) == ["d.ames", "d.bo"]  # the round with no dealer on duty is no one's
    ames, bo = dealers["d.ames"], dealers["d.bo"]
    assert (ames["rounds"], ames["hands"], bo["rounds"], bo["hands"]) == (4, 6, 2, 3)
    assert ames["procedure_errors"] == {"dead_card": 1}
    assert bo["procedure_errors"] == {"irregularity:shoe": 1}  # not the shoe lost, nor the decks due
    assert ames["initial_wagers"] == "70" and bo["initial_wagers"] == "41"
    assert ames["actual_win"] == "-22.50" and bo["actual_win"] == "1"  # the players' nets negated
    assert ames["theoretical_win"] == "0.42" and bo["theoretical_win"] == "0.25"  # 7000 x 0.006, 4100 x 0.006
    assert ames["win_z"] is None and ames["min_rounds"] == 10  # too few rounds, as the table's
    variance = win_variance(THEORY.spread, 1000**2 + 500**2 + 1000**2 + 2500**2 + 2 * 1000**2,
                            2 * 1000 * 500 + 2 * 1000 * 1000)
    assert ames["win_sd"] == format_money(round(math.sqrt(variance)))


def test_the_dealers_time_on_duty_adds_up_to_the_tables_open_time_and_gives_their_pace() -> None:
    r = shift_of_two_dealers()
    payload = live(r)
    opened = r.bodies[0]["ts"]
    changes = [b["ts"] for b in r.bodies if b["type"] == "dealer_changed"]
    ames, bo = payload["dealers"]["d.ames"], payload["dealers"]["d.bo"]
    assert ames["on_duty_s"] == pytest.approx(changes[1] - changes[0])  # the sign-in to the relief
    assert bo["on_duty_s"] == pytest.approx(changes[2] - changes[1])
    no_one = changes[0] - opened + r.bodies[-1]["ts"] - changes[2]
    assert ames["on_duty_s"] + bo["on_duty_s"] + no_one == pytest.approx(payload["open_s"])
    assert ames["hands_per_hour"] == pytest.approx(6 / (ames["on_duty_s"] / 3600), rel=1e-6)


def test_a_dealer_who_dealt_every_round_has_the_tables_own_figures() -> None:
    r = Records()
    r.opened()
    r.dealer("d.ames", None, dt=0.0)  # signed in as the table opened
    for n in range(12):
        r.round("d.ames", {1: 1000 + 100 * n, 2: 500}, {1: (-1) ** n * 1000, 2: 500 if n % 3 else -1000})
    payload = live(r)
    ames = payload["dealers"]["d.ames"]
    for mine, table in (("rounds", "rounds"), ("hands", "hands"), ("initial_wagers", "initial_wagers"),
                        ("actual_win", "house_net"), ("theoretical_win", "theoretical_win"), ("win_z", "win_z"),
                        ("win_sd", "win_sd"), ("hands_per_hour", "hands_per_hour")):
        assert ames[mine] == payload[table], mine
    assert ames["win_z"] is not None


def test_the_dealer_on_duty_before_the_records_began_is_found_from_the_first_round_or_change() -> None:
    r = Records()
    r.opened()  # d.cruz signed in before the open: no change since
    r.alarm("dead_card")
    r.round("d.cruz", {1: 1000}, {1: 0})
    r.dealer("d.dee", "d.cruz")
    r.round("d.dee", {1: 1000}, {1: 0})
    assert live(r)["dealers"]["d.cruz"] == {**live(r)["dealers"]["d.cruz"], "rounds": 1,
                                            "procedure_errors": {"dead_card": 1}}
    r2 = Records()
    r2.opened()
    r2.alarm("dead_card")
    r2.dealer("d.dee", "d.cruz")  # the change names who was on duty
    r2.round("d.dee", {1: 1000}, {1: 0})
    dealers = live(r2)["dealers"]
    assert dealers["d.cruz"]["procedure_errors"] == {"dead_card": 1} and dealers["d.cruz"]["rounds"] == 0
    assert dealers["d.cruz"]["on_duty_s"] > 0


def test_after_a_restart_the_figures_are_those_of_a_table_that_never_stopped() -> None:
    r = Records()
    r.opened()
    r.dealer("d.ames", None)
    r.round("d.ames", {1: 1000}, {1: 1000})
    r.closed()
    r.opened()  # the figures start again at an open
    r.round("d.ames", {1: 2000}, {1: -2000}, alarms=("dead_card",))
    r.dealer("d.bo", "d.ames")
    r.round("d.bo", {2: 700}, {2: 0})
    restarted = LiveAnalytics()
    restarted.load(Log(r.bodies))
    payload = restarted.payload(THEORY, table_id="t01", profile="house-h17")
    assert payload == live(r)
    assert payload["dealers"]["d.ames"]["rounds"] == 1 and payload["dealers"]["d.ames"]["actual_win"] == "20"


def test_without_the_theory_the_dealers_theoretical_figures_are_null() -> None:
    analytics = LiveAnalytics()
    for body in shift_of_two_dealers().bodies:
        analytics.take(body)
    ames = analytics.payload(None, table_id="t01", profile="house-h17")["dealers"]["d.ames"]
    assert (ames["theoretical_win"], ames["win_z"], ames["win_sd"]) == (None, None, None)
    assert ames["actual_win"] == "-22.50"


def _sum(dealers: dict[str | None, Any], name: str) -> Any:
    return sum(getattr(s, name) for s in dealers.values())


def test_the_reports_dealers_sum_to_the_shifts_figures_and_time() -> None:
    r = shift_of_two_dealers()
    rules = load_rules("house-h17")
    shift = read_shift(r.bodies, rules)
    f, dealers = shift.figures, shift.dealers
    assert set(dealers) == {"d.ames", "d.bo", None}
    assert _sum(dealers, "rounds") == f.rounds == 7
    assert _sum(dealers, "hands") == f.hands
    assert _sum(dealers, "initial") == f.initial_wagers
    assert _sum(dealers, "house_net") == f.house_net
    assert _sum(dealers, "handle") == f.handle
    assert _sum(dealers, "on_duty_s") == pytest.approx(f.play_s + f.idle_s)  # first round's start to last's end
    assert dealers[None].errors == {"dead_card": 1} and dealers[None].rounds == 1


def test_a_shift_counts_the_rounds_started_and_the_errors_raised_within_it() -> None:
    r = shift_of_two_dealers()
    settled = [b for b in r.bodies if b["type"] == "round_settled"]
    since, until = settled[1]["ts"], settled[5]["ts"]  # rounds 3 to 6 started within
    shift = read_shift(r.bodies, load_rules("house-h17"), since=since, until=until)
    assert {d: s.rounds for d, s in shift.dealers.items()} == {"d.ames": 2, "d.bo": 2}
    assert shift.dealers["d.ames"].errors == {}  # round 2's dead card was before the shift
    assert shift.dealers["d.bo"].errors == {"irregularity:shoe": 1}
    assert _sum(shift.dealers, "on_duty_s") == pytest.approx(shift.figures.play_s + shift.figures.idle_s)


def test_a_journal_from_before_dealers_is_all_no_dealers() -> None:
    r = Records()
    r.opened()
    r.round(None, {1: 1000}, {1: 1000}, named=False, alarms=("dead_card",))
    r.round(None, {1: 1000}, {1: -1000}, named=False)
    shift = read_shift(r.bodies, load_rules("house-h17"))
    assert list(shift.dealers) == [None] and shift.dealers[None].rounds == 2
    assert shift.dealers[None].errors == {"dead_card": 1}
    assert live(r)["dealers"] == {}


def test_the_fold_gives_what_no_record_named_to_no_dealer_at_the_end() -> None:
    fold = DealerFold()
    fold.take({"type": "alarm", "ts": 1.0, "code": "dead_card", "halts": False})
    assert fold.sums == {}
    assert fold.finish()[None].errors == {"dead_card": 1}


def test_z_of_a_dealer_is_the_tables_formula() -> None:
    r = Records()
    r.opened()
    r.dealer("d.ames", None)
    for _ in range(10):
        r.round("d.ames", {1: 1000}, {1: -1000})
    ames = live(r)["dealers"]["d.ames"]
    theo = round(10_000 * THEORY.edge)
    expected = z_score(10_000, theo, win_variance(THEORY.spread, 10 * 1000**2, 0), 10)
    assert ames["win_z"] == pytest.approx(expected, abs=1e-6)
    assert parse_money(ames["theoretical_win"]) == theo


def test_report_by_dealer_adds_a_dealer_across_tables_and_the_lines_add_up_to_the_tables() -> None:
    from controller.analytics.dealer_report import by_dealer, text_lines

    rules = load_rules("house-h17")
    t1 = shift_of_two_dealers()
    t2 = Records()
    t2.opened()
    t2.dealer("d.bo", None)
    for n in range(9):
        t2.round("d.bo", {1: 1000, 2: 300 * (n + 1)}, {1: -1000 if n % 2 else 1500, 2: 0},
                 alarms=("dead_card",) * (n == 4))
    shifts = [("t01", read_shift(t1.bodies, rules)), ("t02", read_shift(t2.bodies, rules))]
    report = by_dealer(shifts)
    lines = {d["dealer_id"]: d for d in report["dealers"]}
    assert [d["dealer_id"] for d in report["dealers"]] == ["d.ames", "d.bo", None]
    bo = lines["d.bo"]
    assert bo["tables"] == ["t01", "t02"] and bo["rounds"] == 2 + 9
    assert bo["procedure_errors"] == {"dead_card": 1, "irregularity:shoe": 1}
    assert bo["win_z"] is not None  # 11 rounds across the two tables: enough for a z
    total = report["total"]
    tables = [s.figures for _, s in shifts]
    for name in ("rounds", "hands"):
        assert sum(d[name] for d in report["dealers"]) == total[name] == sum(getattr(f, name) for f in tables)
    for name, table in (("initial_wagers", "initial_wagers"), ("actual_win", "house_net"), ("handle", "handle")):
        assert sum(parse_money(d[name]) for d in report["dealers"]) == parse_money(total[name]) \
            == sum(getattr(f, table) for f in tables), name
    assert parse_money(total["theoretical_win"]) == sum(f.theoretical_win for f in tables)
    assert abs(sum(parse_money(d["theoretical_win"]) for d in report["dealers"])
               - parse_money(total["theoretical_win"])) <= len(report["dealers"]) * len(shifts) / 2
    assert sum(sum(d["procedure_errors"].values()) for d in report["dealers"]) == 4 == \
        sum(total["procedure_errors"].values())
    text = text_lines(report)
    assert text[1].startswith("d.ames") and text[3].startswith("no dealer on duty") and text[4].startswith("total")
