"""``Journal.inputs_of``: the inputs of some types, told by their JSON's own ``type`` (a start's readers of a few
kinds in a long journal: the ratings sent again, the shuffle monitor's shoes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.journal import Journal

KEY = bytes(range(32))


def _journal(path: Path) -> Journal:
    journal = Journal(path, key=KEY)
    for event in ({"type": "card", "card": "QD"},
                  {"type": "rating", "rating": {"id": "r1"}},
                  {"type": "note", "text": "a \"rating\" in a text", "about": {"type": "rating"}},  # not a rating
                  {"type": "ratings_checkpoint", "rating": {"id": "r0"}},
                  {"type": "rating", "rating": {"id": "r2", "type": "card"}},
                  {"type": "shuffle_done"}):
        journal.commit_event(event, [])
    return journal


def test_the_inputs_of_a_type_are_those_whose_own_type_it_is(tmp_path: Path) -> None:
    with _journal(tmp_path / "t01.journal") as journal:
        assert [(r.id, r.event["rating"]["id"]) for r in journal.inputs_of(("rating",))] == [(2, "r1"), (5, "r2")]
        assert [r.id for r in journal.inputs_of(("rating",), 2)] == [5]
        assert [r.id for r in journal.inputs_of(("card", "shuffle_done"))] == [1, 6]
        assert journal.last_ids_of("rating", 5) == [5, 2]
        assert journal.last_ids_of("card", 5) == [1]


@pytest.mark.parametrize("kind", ["", "rat'ing", 'a"b', "x) OR 1=1 --"])
def test_a_type_that_is_not_a_plain_name_is_refused(tmp_path: Path, kind: str) -> None:
    with _journal(tmp_path / "t01.journal") as journal, pytest.raises(ValueError, match="plain names"):
        list(journal.inputs_of((kind,)))
