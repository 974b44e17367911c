"""How many refused commands the journal takes: an audit sees attempts, a flood cannot fill the disk.

Every refused command is answered on its result topic; it is journaled (a ``command_refused`` record:
who, verb, why) while its sender's budget lasts. :class:`RefusalBudget` is a pair of token buckets,
sans-I/O (``now`` passed in): each user may have ``per_user`` refusals journaled at once and one more
every ``per_user_every`` seconds; all users together ``overall`` at once and one more every
``overall_every`` seconds. So one person's flood adds at most ``per_user`` records and then one each
``per_user_every`` seconds (by default 10, then 1 every 6 s: 610 an hour), and a flood under any
number of names (possible only where the broker enforces no ACL) at most ``overall`` and one a second.
A refusal past the budget is still answered and counted: the user's next journaled refusal says how
many were not journaled (``suppressed``), so the audit knows the flood happened and how large it was.
Invalid user names share one bucket (they are nobody's).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RefusalBudget"]

#: the bucket of every sender whose name is not a user name
NOBODY = "\0invalid"


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float
    suppressed: int = 0

    def take(self, now: float, capacity: float, every: float) -> bool:
        self.tokens = min(capacity, self.tokens + max(0.0, now - self.at) / every)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


class RefusalBudget:
    """Which refusals are journaled (see the module docstring)."""

    def __init__(self, *, per_user: int = 10, per_user_every: float = 6.0, overall: int = 60,
                 overall_every: float = 1.0, max_users: int = 1024) -> None:
        self.per_user, self.per_user_every = per_user, per_user_every
        self.overall, self.overall_every = overall, overall_every
        self.max_users = max_users
        self._users: dict[str, _Bucket] = {}
        self._all: _Bucket | None = None

    def admit(self, user: str | None, now: float) -> int | None:
        """None: do not journal this refusal (counted); else journal it, saying the returned number of
        this user's refusals were not journaled since its last journaled one."""
        key = NOBODY if user is None else user
        bucket = self._users.get(key)
        if bucket is None:
            if len(self._users) >= self.max_users:  # forget the sender that waited longest (a full bucket by now)
                del self._users[min(self._users, key=lambda k: self._users[k].at)]
            bucket = self._users[key] = _Bucket(float(self.per_user), now)
        if self._all is None:
            self._all = _Bucket(float(self.overall), now)
        if not bucket.take(now, self.per_user, self.per_user_every):
            bucket.suppressed += 1
            return None
        if not self._all.take(now, self.overall, self.overall_every):
            bucket.tokens += 1.0  # not spent: nothing was journaled
            bucket.suppressed += 1
            return None
        suppressed, bucket.suppressed = bucket.suppressed, 0
        return suppressed
