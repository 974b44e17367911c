"""The simulated shoe on its own: its order, its cut card, its numbered reads and their replay.

docs/protocols.md (the shoe, "Card reads across a crash") and DESIGN ("the order dealt depends on
``--seed`` alone"). Messages are captured at ``_send``; the numbers are unpacked here with
:mod:`struct` by the documented layout (load u16, read u16, big-endian) rather than with the
simulator's own helpers.
"""

from __future__ import annotations

import struct
from collections import Counter

import pytest

from cardnotation import DECK, CardError
from drivers import shoe as proto
from simulators import DealingLocked, ShoeEmpty, SimShoe
from simulators.shoe import KeptRead
from tests.simulators.conftest import capture_sends

NUMBER = struct.Struct(">HH")
ASK = struct.Struct(">HHI")  # REPLAY: after (load, read), the host's tag
TAG = 0x5EED0001  # a host's tag, echoed in REPLAY_END


def _read(message: tuple[int, bytes]) -> tuple[int, int, int, bytes]:
    """(type, load, read, rest) of a numbered read."""
    mtype, payload = message
    load, read = NUMBER.unpack(payload[:4])
    return mtype, load, read, payload[4:]


def _deal_all(shoe: SimShoe) -> list[str]:
    out = []
    while shoe.remaining:
        out.append(shoe.deal())
    return out


# -- the order ---------------------------------------------------------------------------------------------


def test_a_seeded_shoe_holds_every_card_of_its_decks_once_per_deck() -> None:
    shoe = SimShoe(seed=11, decks=6)
    assert len(shoe.cards) == 312
    assert Counter(shoe.cards) == {card: 6 for card in DECK}
    assert shoe.cards != sorted(shoe.cards)  # shuffled


def test_the_order_depends_on_the_seed_alone_not_on_the_faults() -> None:
    clean = SimShoe(seed=5, decks=2)
    faulty = SimShoe(seed=5, decks=2, corrupt=0.3, drop=0.2, fault_seed=99)
    capture_sends(clean)
    capture_sends(faulty)
    assert _deal_all(clean) == _deal_all(faulty)
    clean.reshuffle()
    faulty.reshuffle()
    assert clean.cards == faulty.cards  # the next shoe too
    assert SimShoe(seed=6, decks=2).cards != SimShoe(seed=5, decks=2).cards


def test_each_reshuffle_loads_the_next_order_of_the_seed() -> None:
    a, b = SimShoe(seed=3, decks=1), SimShoe(seed=3, decks=1)
    first = list(a.cards)
    a.reshuffle()
    assert a.cards != first and Counter(a.cards) == Counter(first)
    b.reshuffle()
    assert b.cards == a.cards


def test_the_cut_card_comes_out_before_the_first_card_past_the_penetration() -> None:
    shoe = SimShoe(seed=1, decks=1, penetration=0.5)
    sent = capture_sends(shoe)
    assert shoe.cut_at == 26
    for _ in range(26):
        shoe.deal()
    assert not shoe.cut_card_out and [m for m, _ in sent] == [proto.CARD] * 26
    card = shoe.deal()
    assert shoe.cut_card_out
    assert [m for m, _ in sent[26:]] == [proto.CUT, proto.CARD]  # the cut card, then the 27th card
    assert sent[-1][1][4:] == card.encode("ascii")
    shoe.deal()
    assert [m for m, _ in sent[28:]] == [proto.CARD]  # once a shoe


@pytest.mark.parametrize("penetration", [0.0, -0.5, 1.01])
def test_a_penetration_outside_the_shoe_is_refused(penetration: float) -> None:
    with pytest.raises(ValueError, match="penetration"):
        SimShoe(seed=1, penetration=penetration)


def test_a_stacked_shoe_deals_exactly_its_cards_then_is_empty() -> None:
    shoe = SimShoe(stacked=["as", " KD", "5C"])  # the notation as parse_card reads it
    sent = capture_sends(shoe)
    assert [shoe.deal(), shoe.deal(), shoe.deal()] == ["AS", "KD", "5C"]
    assert [payload[4:] for _, payload in sent] == [b"AS", b"KD", b"5C"]
    assert not shoe.cut_card_out  # no cut card unless asked for
    with pytest.raises(ShoeEmpty):
        shoe.deal()
    assert len(sent) == 3 and shoe.dealt_total == 3


def test_a_stacked_shoe_with_a_cut_card_and_a_bad_card() -> None:
    shoe = SimShoe(seed=1)
    sent = capture_sends(shoe)
    shoe.stack(["2H", "3H", "4H"], cut_at=1)
    shoe.deal()
    shoe.deal()
    assert [m for m, _ in sent] == [proto.CARD, proto.CUT, proto.CARD]
    with pytest.raises(CardError):
        shoe.stack(["2H", "1H"])


# -- the hole card and the peek reader -------------------------------------------------------------------


def test_a_hole_card_stays_off_the_wire_until_it_is_turned() -> None:
    shoe = SimShoe(stacked=["9S", "KD"])
    sent = capture_sends(shoe)
    shoe.deal()
    assert shoe.deal(face_down=True) == "KD"
    assert sent[-1][0] == proto.HOLE_DEALT and sent[-1][1][4:] == b""  # its number only
    assert not any(b"KD" in payload for _, payload in sent)
    assert shoe.reveal_hole() == "KD"
    assert sent[-1][0] == proto.HOLE_REVEALED and sent[-1][1][4:] == b"KD"
    assert shoe.reveal_hole() is None and len(sent) == 3  # nothing left to turn, nothing sent


@pytest.mark.parametrize(
    ("hole", "up", "blackjack"),
    [("KD", "A", True), ("AS", "T", True), ("AS", "Q", True), ("QH", "J", False), ("9C", "A", False),
     ("AH", "A", False)],
)
def test_the_peek_reader_tells_blackjack_from_the_up_card(hole: str, up: str, blackjack: bool) -> None:
    shoe = SimShoe(stacked=[hole])
    capture_sends(shoe)
    shoe.deal(face_down=True)
    assert shoe.peek(up) is blackjack


def test_a_peek_request_is_answered_with_its_id_and_never_the_card() -> None:
    shoe = SimShoe(stacked=["TS", "AD"])
    sent = capture_sends(shoe)
    shoe._on_message(proto.PEEK_REQUEST, bytes((7,)) + b"A")
    assert sent == [(proto.PEEK_RESULT, bytes((7, 2)))]  # 2: no hole card held
    shoe.deal()
    shoe.deal(face_down=True)
    sent.clear()
    shoe._on_message(proto.PEEK_REQUEST, bytes((8,)) + b"T")
    shoe._on_message(proto.PEEK_REQUEST, bytes((9,)) + b"9")
    assert sent == [(proto.PEEK_RESULT, bytes((8, 1))), (proto.PEEK_RESULT, bytes((9, 0)))]
    assert shoe.peeks_answered == 3


def test_the_host_locks_and_enables_dealing() -> None:
    shoe = SimShoe(seed=2)
    sent = capture_sends(shoe)
    shoe._on_message(proto.LOCK, b"")
    assert sent == [(proto.DEALING, b"\x00")]
    with pytest.raises(DealingLocked):
        shoe.deal()
    assert shoe.position == 0  # the locked gate keeps the card in the shoe
    shoe._on_message(proto.RESET, b"")
    shoe._on_message(proto.ENABLE, b"")
    assert sent[1:] == [(proto.DEALING, b"\x00"), (proto.DEALING, b"\x01")]
    assert shoe.deal() == shoe.cards[0]


def test_a_misread_takes_a_card_and_a_foreign_card_takes_none() -> None:
    shoe = SimShoe(stacked=["7S", "8S"])
    sent = capture_sends(shoe)
    assert shoe.misread(2) == "7S"
    shoe.foreign_card("AH")
    assert shoe.deal() == "8S"
    assert [(m, p[4:]) for m, p in sent] == [(proto.MISREAD, b"\x02"), (proto.CARD, b"AH"), (proto.CARD, b"8S")]


# -- numbered reads ------------------------------------------------------------------------------------------


def test_every_read_is_numbered_within_its_load_and_a_new_load_starts_again() -> None:
    seen: list[KeptRead] = []
    shoe = SimShoe(stacked=["2C", "3C", "4C"], on_read=seen.append)
    sent = capture_sends(shoe)
    shoe.deal()
    shoe.deal(face_down=True)
    shoe.remove()
    shoe.insert()
    shoe.reveal_hole()
    shoe.stack(["5C"])
    shoe.deal()
    numbers = [_read(m)[1:3] for m in sent]
    assert numbers == [(1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (2, 1)]
    assert [m for m, _ in sent] == [proto.CARD, proto.HOLE_DEALT, proto.PRESENCE, proto.PRESENCE,
                                    proto.HOLE_REVEALED, proto.CARD]
    assert [p[4:] for _, p in sent[2:4]] == [b"\x00", b"\x01"]  # removed, put back
    assert [(k.load, k.read) for k in seen] == numbers  # on_read sees each read as it is made


def test_a_replay_sends_the_kept_reads_after_the_one_asked_then_the_end() -> None:
    shoe = SimShoe(seed=4)
    sent = capture_sends(shoe)
    for _ in range(5):
        shoe.deal()
    originals = list(sent)
    sent.clear()
    shoe._on_message(proto.REPLAY, ASK.pack(1, 2, TAG))
    assert sent[:3] == originals[2:]  # the very same messages, numbers included
    assert sent[3] == (proto.REPLAY_END, struct.pack(">HHHI", 1, 5, 0, TAG))
    assert len(sent) == 4 and shoe.replays_answered == 1


def test_a_replay_from_nothing_journaled_sends_only_the_end() -> None:
    shoe = SimShoe(seed=4)
    sent = capture_sends(shoe)
    shoe.deal()
    sent.clear()
    shoe._on_message(proto.REPLAY, ASK.pack(0, 0, TAG))
    assert sent == [(proto.REPLAY_END, struct.pack(">HHHI", 1, 1, 0, TAG))]


def test_a_replay_spans_loads() -> None:
    shoe = SimShoe(stacked=["2D", "3D", "4D"])
    sent = capture_sends(shoe)
    for _ in range(3):
        shoe.deal()
    shoe.stack(["5D", "6D"])
    shoe.deal()
    shoe.deal()
    sent.clear()
    shoe._on_message(proto.REPLAY, ASK.pack(1, 2, TAG))
    assert [_read(m)[1:] for m in sent[:-1]] == [(1, 3, b"4D"), (2, 1, b"5D"), (2, 2, b"6D")]
    assert sent[-1] == (proto.REPLAY_END, struct.pack(">HHHI", 2, 2, 0, TAG))


def test_reads_the_shoe_no_longer_keeps_are_counted_as_missing() -> None:
    shoe = SimShoe(seed=8, keep_reads=2)
    sent = capture_sends(shoe)
    for _ in range(5):
        shoe.deal()
    sent.clear()
    shoe._on_message(proto.REPLAY, ASK.pack(1, 1, TAG))
    assert [_read(m)[1:3] for m in sent[:-1]] == [(1, 4), (1, 5)]
    assert sent[-1] == (proto.REPLAY_END, struct.pack(">HHHI", 1, 5, 2, TAG))  # reads 2 and 3 are gone


@pytest.mark.parametrize("asked", [(7, 1), (1, 9)], ids=["a-load-it-never-had", "a-read-not-yet-made"])
def test_a_replay_it_cannot_place_says_it_cannot_tell(asked: tuple[int, int]) -> None:
    shoe = SimShoe(seed=8)
    sent = capture_sends(shoe)
    for _ in range(3):
        shoe.deal()
    sent.clear()
    shoe._on_message(proto.REPLAY, ASK.pack(*asked, TAG))
    assert sent == [(proto.REPLAY_END, struct.pack(">HHHI", 1, 3, 0xFFFF, TAG))]


def test_a_rebuilt_shoe_numbers_on_from_the_journal() -> None:
    shoe = SimShoe(seed=9)
    sent = capture_sends(shoe)
    shoe.restore_numbering(12, 40, loaded_since=False)
    shoe.deal()
    shoe.restore_numbering(12, 41, loaded_since=True)
    shoe.deal()
    assert [_read(m)[1:3] for m in sent] == [(12, 41), (13, 1)]


def test_the_load_number_wraps_after_65535_to_1() -> None:
    shoe = SimShoe(seed=9)
    sent = capture_sends(shoe)
    shoe.restore_numbering(0xFFFF, 3, loaded_since=False)
    shoe.deal()
    shoe.reshuffle()
    shoe.deal()
    assert [_read(m)[1:3] for m in sent] == [(0xFFFF, 4), (1, 1)]


def test_a_negative_keep_reads_is_refused() -> None:
    with pytest.raises(ValueError, match="keep_reads"):
        SimShoe(seed=1, keep_reads=-1)

