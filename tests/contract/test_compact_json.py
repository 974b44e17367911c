"""compact_json (orjson) writes the bytes json.dumps wrote for everything a table writes, and leaves to json what
orjson would write otherwise (controller/contract/topics.py): the journal hashes these bytes and screens read them."""

from __future__ import annotations

import enum
import json
import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.contract.topics import compact_json, json_payload


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


#: floats as a table writes them: times, ratios, minutes, penetration (never under 1e-4 but zero, never NaN)
_floats = st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: x == 0 or abs(x) >= 1e-4)
_scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | _floats | st.text()
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=5)
                       | st.dictionaries(st.text(), inner, max_size=5), max_leaves=40)


@settings(max_examples=400)
@given(_values)
def test_the_same_bytes_as_json_dumps(value: Any) -> None:
    assert compact_json(value) == _json(value)


def test_a_card_state_and_record_as_json_dumps_wrote_them() -> None:
    state = {"seq": 3002, "table_id": "t01", "phase": "dealing", "halted": None, "closing": False,
             "spots": {"1": {"hands": [{"cards": ["AH", "7S"], "total": 18, "soft": True, "wager": "10"}],
                             "rating": {"player": "*******107", "minutes": 0.06, "started": 1796625849.49}}},
             "shoe": {"penetration": 0.1234, "cards_dealt": 141}, "ts": 1796625852.123, "note": "é ✓ \u2028"}
    assert compact_json(state) == _json(state)
    assert json_payload(state) == _json(state)


class _Spot(enum.IntEnum):
    ONE = 1


def test_what_orjson_would_write_otherwise_goes_to_json() -> None:
    for value in ({1: "a"}, {"big": 2**70}, {"spot": _Spot.ONE}, {"tiny": 1e-05}):
        written = compact_json(value)
        assert json.loads(written) == json.loads(_json(value))
        if value != {"tiny": 1e-05}:  # an integer key, an integer past 64 bits, an enum: json's own bytes
            assert written == _json(value)
    assert compact_json({"x": math.nan}) == b'{"x":null}'  # valid JSON, where json.dumps wrote NaN


def test_what_neither_writes_is_refused_as_json_refuses_it() -> None:
    with pytest.raises(TypeError, match="Decimal"):
        compact_json({"wager": Decimal("10")})


@settings(max_examples=300)
@given(_values)
def test_sorted_keys_the_same_bytes_as_json_dumps_sorted(value: Any) -> None:
    assert compact_json(value, sort_keys=True) == json.dumps(value, separators=(",", ":"), ensure_ascii=False,
                                                             sort_keys=True).encode()


@given(st.fixed_dictionaries({
    "table_id": st.from_regex(r"[a-z0-9][a-z0-9_-]{0,30}", fullmatch=True),
    "journal_id": st.from_regex(r"[0-9a-f]{32}", fullmatch=True),
    "inputs": st.integers(0, 2**62), "seq": st.integers(0, 2**62), "table": st.sampled_from(["inputs", "outbox"]),
    "row": st.integers(0, 2**62), "head": st.from_regex(r"[0-9a-f]{64}", fullmatch=True)}))
def test_an_anchors_signed_text_is_the_one_json_signed(fields: dict[str, Any]) -> None:
    """Every anchor on a table PC was signed over ``json.dumps(fields, sort_keys=True, separators=(",", ":"))``: the
    text signed now is the same, so they still vouch (controller/journal/anchor.py)."""
    from controller.journal.anchor import _canonical

    assert _canonical(fields) == json.dumps(fields, sort_keys=True, separators=(",", ":"))
