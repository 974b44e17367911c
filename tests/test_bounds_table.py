"""docs/conformance.md's table of every option's bound per profile is the profiles' own (issue 36)."""

from __future__ import annotations

from pathlib import Path

from controller.bounds_table import BEGIN, END, markdown, rewrite

DOC = Path(__file__).resolve().parent.parent / "docs" / "conformance.md"


def test_the_documented_bounds_table_is_the_profiles_own() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert rewrite(text) == text, "docs/conformance.md: run python -m controller.bounds_table docs/conformance.md"
    table = text.partition(BEGIN)[2].partition(END)[0]
    row = next(line for line in table.splitlines() if line.startswith("| `ties` |"))
    assert "one of push, push_naturals_only" in row, "the shoe card's ties"
    assert markdown().count("at most 3 at 7 spots, 4 at 6 spots") == 2, "max_hands and max_hands_by_spots"


def test_a_changed_bound_makes_the_table_differ() -> None:
    text = DOC.read_text(encoding="utf-8")
    stale = text.replace("one of push, push_naturals_only", "cited, no bound", 1)
    assert rewrite(stale) != stale
