"""A refusal to acknowledge an integrity alarm reads as English: "an integrity alarm" (the roles' mutation run of
2026-12-07 found no test of the article: issue 39)."""

from __future__ import annotations

from controller.contract.roles import refusal


def test_a_refusal_to_acknowledge_an_integrity_alarm_says_an() -> None:
    assert refusal("pit", "ack_alarm", alarm=("integrity_card_count", True), reason="x") == (
        "role pit may not acknowledge an integrity alarm (integrity_card_count; only surveillance)")
    assert refusal("technician", "ack_alarm", alarm=("integrity_card_count", True), reason="x") == (
        "role technician may not acknowledge an integrity alarm (integrity_card_count; only surveillance)")
