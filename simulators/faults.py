"""A fault-injecting byte pipe shared by the simulators and the tests.

``FaultPipe(corrupt=0.001, drop=0.0, seed=7).apply(data)`` returns ``data``
with each byte independently dropped (rate ``drop``) or replaced by a
different random byte (rate ``corrupt``), and each chunk written whole twice (rate
``duplicate``: a frame the receiver gets twice, as when a device re-sends a card it thinks
was lost). It draws from its own
``random.Random``, so injecting faults never changes what a seeded device
deals: a faulty run can be compared card by card with a clean one.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(slots=True)
class FaultPipe:
    """Corrupts and drops bytes at given rates, deterministically for a seed."""

    corrupt: float = 0.0
    drop: float = 0.0
    seed: int | None = None
    duplicate: float = 0.0
    corrupted: int = 0
    dropped: int = 0
    duplicated: int = 0
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for name, rate in (("corrupt", self.corrupt), ("drop", self.drop), ("duplicate", self.duplicate)):
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"{name} rate must be between 0 and 1, got {rate}")
        self._rng = random.Random(self.seed)

    @property
    def active(self) -> bool:
        """Whether this pipe changes anything."""
        return self.corrupt > 0.0 or self.drop > 0.0 or self.duplicate > 0.0

    def apply(self, data: bytes) -> bytes:
        """``data`` with faults injected."""
        if not self.active or not data:
            return data
        if self.duplicate > 0.0 and self._rng.random() < self.duplicate:
            self.duplicated += 1
            data = data + data
        rnd = self._rng.random
        drop, bad = self.drop, self.drop + self.corrupt
        out = bytearray()
        for byte in data:
            r = rnd()
            if r >= bad:
                out.append(byte)
            elif r < drop:
                self.dropped += 1
            else:
                out.append((byte + self._rng.randrange(1, 256)) & 0xFF)
                self.corrupted += 1
        return bytes(out)

    def garbage(self, n: int) -> bytes:
        """``n`` random bytes (line noise to put between frames)."""
        return bytes(self._rng.randrange(256) for _ in range(n))
