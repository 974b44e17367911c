"""The journal's chain, pure (no I/O): each row's hash, the genesis, the chain's start, the seals, the marks.

Why here alone: every byte these functions hash is the on-disk format (``docs/journal.md``, "The chain"). The
writer, the verifier, ``tablectl journal migrate`` and the anchor all hash through them, so a journal written by
one checks under the others, and a reviewer reads the format in one place.

Every input and outbox row stores ``hash`` = HMAC-SHA256, under the table's journal key, of the previous row's
hash and the row's own canonical content (its kind, its id, every column but the outbox's ``delivered`` flag),
in one chain in commit order: input *i*, then the records it produced, then input *i + 1*. The chain starts at
the genesis (an HMAC of the journal's id) or, after an archive, at the archive's hash before the kept rows (a
:class:`ChainBase`). A snapshot is sealed to the hash of the input it was taken at. A seal signs a segment's
ranges, its head and a digest of every row's content and hash (:class:`Segment`), itself HMAC-chained.
"""

from __future__ import annotations

import array
import hashlib
import hmac
import json
import struct
from dataclasses import dataclass, field
from typing import Any

from controller.contract.topics import compact_json

__all__ = ["UNKEYED", "AnchorPoint", "ChainBase", "Mac", "Segment", "base_record", "combine", "dumps", "genesis",
           "key_id", "link_input", "link_record", "link_snapshot", "mark_mac", "read_base", "read_mark", "seal_digest",
           "seal_mac"]

#: the key of a journal opened without one (tests, benches): public, so its chain proves consistency only
UNKEYED = b"tablectl journal without a key: tests and benches only"

_IN = struct.Struct(">cqd").pack  # kind, id, ts
_OUT = struct.Struct(">cqq").pack  # kind, seq, input_id
_SNAP = struct.Struct(">cqqd").pack  # kind, input_id, seq, ts
_SEAL = struct.Struct(">qqqqq").pack  # n, first_input, last_input, first_seq, last_seq
_RANGES = struct.Struct(">qqqq").pack
_BASE = struct.Struct(">qq").pack


class Mac:
    """HMAC-SHA256 under one key (the standard ``hmac``): the keyed state made once, copied per message."""

    __slots__ = ("_keyed",)

    def __init__(self, key: bytes) -> None:
        self._keyed = hmac.new(key, digestmod="sha256")

    def __call__(self, data: bytes) -> bytes:
        h = self._keyed.copy()
        h.update(data)
        return h.digest()


def key_id(key: bytes) -> str:
    """A short public fingerprint of a journal key (stored in the journal; tells a wrong key from tampering)."""
    return Mac(key)(b"tablectl journal key id")[:8].hex()


def dumps(value: Any) -> str:
    """The journal's JSON text: compact, UTF-8 as is (what is stored, hashed and published:
    :func:`controller.contract.topics.compact_json`)."""
    return compact_json(value).decode()


def genesis(mac: Mac, journal_id: str) -> bytes:
    """Where the chain of a journal started from nothing begins: keyed by its id, so a row moved from another
    journal does not check."""
    return mac(b"tablectl journal genesis " + journal_id.encode())


def link_input(mac: Mac, prev: bytes, input_id: int, ts: float, event: str) -> bytes:
    """The chain hash of an input row after ``prev``."""
    return mac(prev + _IN(b"I", input_id, ts) + event.encode())


def link_record(mac: Mac, prev: bytes, seq: int, input_id: int, body: str) -> bytes:
    """The chain hash of an outbox row (record ``seq``, following input ``input_id``) after ``prev``."""
    return mac(prev + _OUT(b"O", seq, input_id) + body.encode())


def link_snapshot(mac: Mac, input_hash: bytes, input_id: int, seq: int, ts: float, state: str) -> bytes:
    """A snapshot's seal: its content bound to the chain hash of the input it was taken at."""
    return mac(input_hash + _SNAP(b"S", input_id, seq, ts) + state.encode())


def mark_mac(mac: Mac, name: str, journal_id: str, n: int) -> str:
    """The HMAC (hex) of a bookkeeping mark kept outside the chain (``delivered``, ``ratings_sent``...)."""
    return mac(name.encode() + b" " + journal_id.encode() + _BASE(n, 0)).hex()


def read_mark(mac: Mac, name: str, journal_id: str, text: str | None, at_most: int) -> int | None:
    """The ``N`` of a mark ``"N MAC"`` (:func:`mark_mac`) that checks and is no more than ``at_most``, else None."""
    if text is None:
        return None
    n, _, _ = text.partition(" ")
    if not n.isdecimal() or len(n) >= 19 or int(n) > at_most:
        return None
    return int(n) if hmac.compare_digest(text, f"{int(n)} {mark_mac(mac, name, journal_id, int(n))}") else None


@dataclass(frozen=True, slots=True)
class ChainBase:
    """Where the journal's chain starts: after input ``input``/record ``seq`` whose chain hash is ``hash``
    (0, 0 and the genesis hash for a journal started from nothing; an archive's cut for a continuation)."""

    input: int
    seq: int
    hash: bytes
    archive: str | None = None


@dataclass(frozen=True, slots=True)
class AnchorPoint:
    """What an anchor records of a journal: its id, how far it went, the row at its head and that row's hash."""

    journal_id: str
    inputs: int
    seq: int
    table: str
    row: int
    head: str


def base_record(mac: Mac, journal_id: str, base: ChainBase) -> str:
    """``meta.chain_base``'s text: the chain's start and its HMAC under the journal's key and id."""
    signed = mac(b"chain base " + journal_id.encode() + _BASE(base.input, base.seq) + base.hash
                 + (base.archive or "").encode())
    return dumps({"input": base.input, "seq": base.seq, "hash": base.hash.hex(), "archive": base.archive,
                  "mac": signed.hex()})


def read_base(text: str) -> tuple[ChainBase, bytes]:
    """The chain's start in ``meta.chain_base``'s text and the HMAC it carries (checked by the verifier);
    ValueError, KeyError or TypeError when it is not readable."""
    data = json.loads(text)
    base = ChainBase(int(data["input"]), int(data["seq"]), bytes.fromhex(data["hash"]), data.get("archive"))
    return base, bytes.fromhex(data["mac"])


def combine(ranges: tuple[int, int, int, int], parts: tuple[bytes, ...]) -> bytes:
    """A seal's digest from its ranges and the SHA-256 of each of its six concatenations."""
    h = hashlib.sha256(b"tablectl-seal-1" + _RANGES(*ranges))
    for part in parts:
        h.update(part)
    return h.digest()


def seal_digest(ranges: tuple[int, int, int, int], in_text: bytes, in_hashes: bytes, in_ts: bytes,
                out_text: bytes, out_inputs: bytes, out_hashes: bytes) -> bytes:
    """The digest a seal signs: a segment's ranges, and every row's content and hash."""
    parts = (in_text, in_hashes, in_ts, out_text, out_inputs, out_hashes)
    return combine(ranges, tuple(hashlib.sha256(p).digest() for p in parts))


def seal_mac(mac: Mac, prev_mac: bytes, n: int, ranges: tuple[int, int, int, int], head: bytes,
             digest: bytes) -> bytes:
    """Seal ``n``'s HMAC, chained to the previous seal's (the chain's start for the first)."""
    return mac(prev_mac + b"seal" + _SEAL(n, *ranges) + head + digest)


@dataclass(slots=True)
class Segment:
    """The rows written since the last seal (kept only while a writer seals: after a verify)."""

    first_input: int
    first_seq: int
    events: list[str] = field(default_factory=list)
    in_hashes: list[bytes] = field(default_factory=list)
    ts: list[float] = field(default_factory=list)
    out_lines: list[str] = field(default_factory=list)  # the bodies
    out_inputs: list[int] = field(default_factory=list)  # the input each body follows (written with :d: ints only)
    out_hashes: list[bytes] = field(default_factory=list)

    def lengths(self) -> tuple[int, int]:
        return len(self.events), len(self.out_lines)

    def truncate(self, n_in: int, n_out: int) -> None:
        del self.events[n_in:], self.in_hashes[n_in:], self.ts[n_in:]
        del self.out_lines[n_out:], self.out_inputs[n_out:], self.out_hashes[n_out:]

    def digest(self) -> tuple[tuple[int, int, int, int], bytes]:
        ranges = (self.first_input, self.first_input + len(self.events) - 1,
                  self.first_seq, self.first_seq + len(self.out_lines) - 1)
        return ranges, seal_digest(ranges, "\n".join(self.events).encode(), b"".join(self.in_hashes),
                                   array.array("d", self.ts).tobytes(), "\n".join(self.out_lines).encode(),
                                   ",".join(f"{i:d}" for i in self.out_inputs).encode(), b"".join(self.out_hashes))
