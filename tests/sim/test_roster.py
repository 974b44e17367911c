"""The simulated dealers' roster and relief schedule (controller/sim/roster.py): pure, seeded, from the crew file."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from controller.errors import UsageError
from controller.sim.roster import ReliefSchedule, Roster, crew_file, default_roster, table_roster


def test_default_rosters_are_four_valid_dealers_of_their_own_at_every_table() -> None:
    seen: set[str] = set()
    for n in range(1, 501):
        roster = default_roster(f"t{n:02d}")
        assert len(roster.dealers) == 4 and roster.slow == roster.dealers[1] and roster.error_prone == roster.dealers[2]
        assert not seen & set(roster.dealers), n
        seen |= set(roster.dealers)


def test_a_300_round_table_sees_its_dealers_rotate_on_the_simulated_clock() -> None:
    schedule = ReliefSchedule(default_roster("t01"), seed=1, table_id="t01")
    dealers = [schedule.dealer_for(r) for r in range(1, 301)]
    assert len(set(dealers)) >= 2
    shifts = [d for i, d in enumerate(dealers) if i == 0 or dealers[i - 1] != d]
    assert shifts[:4] == list(default_roster("t01").dealers), shifts  # in turn, the first first
    # the same answer from a fresh schedule (a resumed demo), asked in any order
    again = ReliefSchedule(default_roster("t01"), seed=1, table_id="t01")
    assert [again.dealer_for(r) for r in (300, 1, 150)] == [dealers[299], dealers[0], dealers[149]]


def test_the_slow_dealer_deals_fewer_rounds_an_hour_and_the_error_prone_one_slips_more() -> None:
    roster = default_roster("t03")
    schedule = ReliefSchedule(roster, seed=7, table_id="t03")
    rounds: Counter[str] = Counter()
    seconds: dict[str, float] = dict.fromkeys(roster.dealers, 0.0)
    slips: Counter[str] = Counter()
    for r in range(1, 4001):
        dealer = schedule.dealer_for(r)
        rounds[dealer] += 1
        seconds[dealer] += schedule.round_seconds(r, dealer)
        slips[dealer] += schedule.slips(r)
    per_hour = {d: rounds[d] / seconds[d] * 3600 for d in roster.dealers}
    normal = [per_hour[d] for d in roster.dealers if d != roster.slow]
    assert roster.slow is not None and per_hour[roster.slow] < 0.7 * min(normal), per_hour
    rate = {d: slips[d] / rounds[d] for d in roster.dealers}
    assert roster.error_prone is not None
    assert rate[roster.error_prone] > 4 * max(r for d, r in rate.items() if d != roster.error_prone), rate


def test_the_crew_file_is_written_once_then_read_as_edited(tmp_path: Path) -> None:
    assert table_roster(tmp_path, "t02") == default_roster("t02")
    path = crew_file(tmp_path, "t02")
    assert path.read_text().startswith("#") and "[crew]" in path.read_text()
    path.write_text('[crew]\ndealers = ["x.one", "y.two"]\nrelief_minutes = 30\nslow = "y.two"\n')
    assert table_roster(tmp_path, "t02") == Roster(("x.one", "y.two"), 30.0, slow="y.two")


@pytest.mark.parametrize(("text", "says"), [
    ('[crew]\ndealers = ["X.One"]\n', "'X' is not one of a-z"),
    ('[crew]\ndealers = []\n', "at least one badge id"),
    ('[crew]\ndealers = ["a.b", "a.b"]\n', "each badge id once"),
    ('[crew]\ndealers = ["a.b"]\nslow = "c.d"\n', "slow 'c.d' is not one of the dealers"),
    ('[crew]\ndealers = ["a.b"]\nrelief_minutes = 0\n', "between 1 and 480"),
    ('[crew]\ndealers = ["a.b"]\nrelief = 3\n', "no key 'relief'"),
    ('[crew]\ndealers = "a.b"\n', "a list of badge ids"),
    ('[crew\n', "Expected"),
    ('dealers = ["a.b"]\n', "one [crew] section"),
])
def test_a_bad_crew_file_is_one_line_naming_it(tmp_path: Path, text: str, says: str) -> None:
    path = crew_file(tmp_path, "t01")
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(UsageError) as info:
        table_roster(tmp_path, "t01")
    message = str(info.value)
    assert str(path) in message and says in message and "\n" not in message, message
