"""The table's journal, split by job: a newcomer finds each write of the journal and each check of it in one place.

- :mod:`~controller.journal.chain`: the chain, pure: each row's hash, the genesis, the seals, the marks (no I/O)
- :mod:`~controller.journal.schema`: the two schemas, the meta keys, how a file's format is told
- :mod:`~controller.journal.store`: the file, its mode and its one-writer lock, reading it beside its writer
- :mod:`~controller.journal.writer`: :class:`Journal`, the writer: transactions, inputs, the outbox, snapshots;
  :mod:`~controller.journal.reads` what every handle reads
- :mod:`~controller.journal.outbox`, :mod:`~controller.journal.snapshots`: the rows the writer keeps
- :mod:`~controller.journal.verify` (its bulk, in worker processes on a long journal:
  :mod:`~controller.journal.bulk`), :mod:`~controller.journal.archive`, :mod:`~controller.journal.migrate`
- :mod:`~controller.journal.witnesses`: who may say a journal is the table's whole journal, and the judgement;
  :mod:`~controller.journal.positions` the one position judgement the broker's and the recorder's witnesses share;
  :mod:`~controller.journal.anchor` the anchor, the witness kept on the table PC;
  :mod:`~controller.journal.admission` how a table's journal is opened, judged and adopted.

Layering (``docs/architecture.md``): imports the contract and the domain libraries only, never the service, MQTT,
the floor or the command line.
"""

from controller.journal.chain import UNKEYED, AnchorPoint, ChainBase, key_id
from controller.journal.errors import JournalError, JournalIntegrityError
from controller.journal.outbox import OutboxRow
from controller.journal.reads import InputRow
from controller.journal.snapshots import Snapshot
from controller.journal.store import Synchronous
from controller.journal.verify import Verified
from controller.journal.writer import Journal

__all__ = ["UNKEYED", "AnchorPoint", "ChainBase", "InputRow", "Journal", "JournalError", "JournalIntegrityError",
           "OutboxRow", "Snapshot", "Synchronous", "Verified", "key_id"]
