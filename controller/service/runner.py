"""``tablectl run``: one table PC's service, built from its settings, until a signal stops it.

The drivers come from the settings' device sections, the journal from ``state_dir`` (created
0700, the journal 0600; verified with ``journal_key`` against its anchor in ``anchor_dir``, and against
the ``state`` the broker retains of the table, before the table goes online: ``docs/journal.md``), the
publisher from ``[mqtt]``. Opening a device that is not there
fails at once with its reason (exit 2, like a bad config: nothing to run on); later losses are
the service's business (alarm, hold, reconnect). SIGINT and SIGTERM close the table cleanly:
the devices are released, the outbox drained, ``status`` goes ``offline``, the journal closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from typing import Any

from controller.mqtt.addresses import redact_url
from controller.mqtt.publisher import MqttPublisher
from controller.mqtt.topics import CommandTopic
from controller.mqtt.witness import check_retained_seq, retained_state_seq
from controller.service.anchor import open_table_journal
from controller.service.core import TableCore
from controller.service.journal import Journal
from controller.service.ratings import enable_ratings
from controller.service.settings import TableSettings
from controller.service.table_service import TableService
from drivers.base import Device
from drivers.chips import ChipsDriver
from drivers.console import ConsoleDriver
from drivers.group import DeviceGroup
from drivers.shoe import ShoeDriver
from drivers.shuffler import ShufflerDriver

log = logging.getLogger("controller.run")


def build_devices(settings: TableSettings) -> DeviceGroup:
    """The four drivers of the table, not yet opened."""
    d = settings.devices
    devices: dict[str, Device] = {  # each opens the transport its port (the console: its backend) names
        "shoe": ShoeDriver(d.shoe),
        "shuffler": ShufflerDriver(d.shuffler),
        "chips": ChipsDriver(d.chips),
        "console": ConsoleDriver(d.console),  # backend "sim": a bench table without a console, the simulated one
    }
    return DeviceGroup(**devices)


def build_service(settings: TableSettings, *, new_journal: bool = False) -> tuple[TableService, Journal]:
    """Journal, publisher, core and service of the table the settings describe.

    The journal is opened by :func:`controller.service.anchor.open_table_journal`: its key, its anchor and every
    row checked before anything else (a :class:`controller.service.journal.JournalError` otherwise, one line).
    ``new_journal``: create it (``tablectl run --new-journal``); otherwise a missing journal is refused.
    """
    settings.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    journal = open_table_journal(settings.journal_path, key_file=settings.journal_key,
                                 anchor_dir=settings.anchor_dir, new="yes" if new_journal else "no",
                                 synchronous=settings.journal_sync)
    mqtt = settings.mqtt
    service: TableService | None = None

    async def on_command(command: CommandTopic, payload: bytes) -> Any:
        assert service is not None
        return await service.on_command(command, payload)

    publisher = MqttPublisher(
        journal, table_id=settings.table_id, broker_url=mqtt.url, prefix=mqtt.prefix,
        username=mqtt.username, password=mqtt.password.get_secret_value() if mqtt.password else None,
        tls_ca=mqtt.tls_ca, tls_cert=mqtt.tls_cert, tls_key=mqtt.tls_key, keepalive=mqtt.keepalive,
        on_command=on_command,
    )
    core = TableCore(settings.table_id, settings.load_rules(), journal, publisher,
                     snapshot_every=settings.snapshot_every)
    if settings.devices.chips.card_readers:  # rated play (controller/service/ratings.py)
        enable_ratings(core, idle_rounds=settings.rating_idle_rounds)
    service = TableService(core, build_devices(settings), open_if_new=settings.auto_open,
                           tick_every=settings.tick_every_s)
    return service, journal


async def check_broker_witness(settings: TableSettings, journal: Journal) -> None:
    """Refuse (:class:`controller.service.journal.JournalError`) a journal that ends before the ``state`` the broker
    retains of the table: rolled back together with its anchor (``docs/journal.md``). At most about 2 s
    when the broker does not answer; the anchor alone then guards the journal's end."""
    mqtt = settings.mqtt
    retained = await retained_state_seq(
        mqtt.url, prefix=mqtt.prefix, table_id=settings.table_id, username=mqtt.username,
        password=mqtt.password.get_secret_value() if mqtt.password else None,
        tls_ca=mqtt.tls_ca, tls_cert=mqtt.tls_cert, tls_key=mqtt.tls_key)
    check_retained_seq(journal, settings.table_id, retained)


async def run_table(settings: TableSettings, *, stop: asyncio.Event | None = None, new_journal: bool = False) -> int:
    """Serve until ``stop`` is set or SIGINT/SIGTERM arrives; 0 after a clean stop."""
    service, journal = build_service(settings, new_journal=new_journal)
    if not new_journal:  # a journal started on purpose replaces whatever state the broker kept of the table
        try:
            await check_broker_witness(settings, journal)
        except BaseException:
            journal.close()
            raise
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await service.start()
        rules = service.core.rules
        log.info("table service running", extra={
            "table": settings.table_id, "profile": rules.name, "journal": str(settings.journal_path),
            "broker": redact_url(settings.mqtt.url), "phase": service.table.phase, "seq": service.core.seq})
        stopping: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
        failed: asyncio.Future[Any] = service.failed
        await asyncio.wait({stopping, failed}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if service.failed.done():
            service.failed.result()  # raises: exit 1, systemd restarts, the journal resumes
        log.info("stopping", extra={"table": settings.table_id})
    finally:
        await service.stop()
        journal.close()
    return 0
