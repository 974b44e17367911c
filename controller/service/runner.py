"""``tablectl run``: one table PC's service, built from its settings, until a signal stops it.

The drivers come from the settings' device sections, the journal from ``state_dir`` (created
0700, the journal 0600; verified with ``journal_key``, and vouched for by its witnesses, the anchor in
``anchor_dir``, the ``state`` the broker retains of the table and the central recorder's position of it, before
the table goes online; a journal
is created only with ``--new-journal`` and one no witness vouches for is taken only when a person adopts
it: ``docs/journal.md``), the publisher from ``[mqtt]``. Opening a device that is not there
fails at once with its reason (exit 2, like a bad config: nothing to run on); later losses are
the service's business (alarm, hold, reconnect). SIGINT and SIGTERM close the table cleanly:
the devices are released, the outbox drained, ``status`` goes ``offline``, the journal closes.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

from controller.contract.topics import CommandTopic
from controller.journal import Journal, JournalError
from controller.journal.admission import Adoption, admit, open_verified
from controller.journal.anchor import Anchor
from controller.journal.witnesses import Witness
from controller.mqtt.addresses import redact_url
from controller.mqtt.late_witness import LateWitness, late_witness
from controller.mqtt.publisher import MqttPublisher
from controller.mqtt.witness import Retained, broker_witnesses, read_retained
from controller.selfcheck.gate import program_watch
from controller.service import strategy_cache
from controller.service.clock import TableClock
from controller.service.core import TableCore
from controller.service.ratings import enable_ratings
from controller.service.settings import TableSettings
from controller.service.table_service import TableService
from controller.stop_signals import on_stop_signals
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


def open_journal(settings: TableSettings, *, new_journal: bool = False) -> tuple[Journal, Anchor]:
    """The table's journal, every row verified (:func:`controller.journal.admission.open_verified`), and its anchor;
    not yet admitted. ``new_journal``: create it (``tablectl run --new-journal``); otherwise a missing journal is
    refused. A :class:`controller.journal.errors.JournalError` of one line otherwise."""
    if Path(os.path.realpath(settings.anchor_dir)).is_relative_to(os.path.realpath(settings.state_dir)):
        raise JournalError(f"anchor_dir {settings.anchor_dir}: inside state_dir {settings.state_dir}; an anchor is "
                           "kept apart from the state directory (so a state directory put back from a backup is "
                           "caught: docs/deploy.md)")
    settings.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    return open_verified(settings.journal_path, table_id=settings.table_id, key_file=settings.journal_key,
                         anchor_dir=settings.anchor_dir, new=new_journal, synchronous=settings.journal_sync)


def build_service(settings: TableSettings, journal: Journal, late: LateWitness | None = None) -> TableService:
    """Publisher, core and service of the table the settings describe, on its admitted journal; ``late``: the
    broker's witnesses to ask at the first connection (they could not be asked at start)."""
    mqtt = settings.mqtt
    service: TableService | None = None

    async def on_command(command: CommandTopic, payload: bytes) -> Any:
        assert service is not None
        return await service.on_command(command, payload)

    def on_halt(exc: JournalError) -> None:
        assert service is not None
        service.halt_on_witness(exc)

    publisher = MqttPublisher(
        journal, table_id=settings.table_id, broker=mqtt.broker_options(), prefix=mqtt.prefix,
        retained_refresh=mqtt.retained_refresh_s, on_command=on_command,
        first_contact=late.ask if late is not None else None, on_halt=on_halt,
    )
    clock = TableClock(jump_s=settings.clock_jump_s)  # the table's monotonic time, the wall clock watched
    core = TableCore(settings.table_id, settings.load_rules(), journal, publisher,
                     clock=clock, snapshot_every=settings.snapshot_every, pit=settings.pit,
                     require_dealer=settings.require_dealer)
    if settings.devices.chips.card_readers:  # rated play (controller/service/ratings.py)
        enable_ratings(core, idle_rounds=settings.rating_idle_rounds)
    service = TableService(core, build_devices(settings), clock=clock, open_if_new=settings.auto_open,
                           tick_every=settings.tick_every_s, program=program_watch(settings.selfcheck_every_s))
    return service


async def broker_witness(settings: TableSettings) -> list[Witness]:
    """The broker's retained ``state`` of the table and the central recorder's position of it, read in one short
    connection with the table's own credentials (DESIGN's roles let a table read its subtree and its recorder
    position). At most about 2 s a node when the broker does not answer: the witnesses are then silent."""
    mqtt = settings.mqtt
    url = mqtt.broker_urls[0]
    found = Retained("not asked", "not asked")
    for url in mqtt.broker_urls:  # a cluster's nodes hold the same retained messages: the first that answers
        read = await read_retained(
            url, prefix=mqtt.prefix, table_ids=(settings.table_id,), username=mqtt.username,
            password=mqtt.password.get_secret_value() if mqtt.password else None,
            tls_ca=mqtt.tls_ca, tls_cert=mqtt.tls_cert, tls_key=mqtt.tls_key)
        found = read[settings.table_id]
        if not isinstance(found.state, str) or not isinstance(found.recorder, str):
            break
    return broker_witnesses(settings.table_id, url, found)


async def run_table(settings: TableSettings, *, stop: asyncio.Event | None = None, new_journal: bool = False,
                    adopt: Adoption | None = None) -> int:
    """Serve until ``stop`` is set or SIGINT/SIGTERM arrives; 0 after a clean stop."""
    if settings.devices.chips.card_readers:  # rated play: its pricing worked out during the check if none is kept
        strategy_cache.work_ahead(settings.load_rules(), settings.journal_path)
    journal, anchor = open_journal(settings, new_journal=new_journal)
    try:
        # a journal started on purpose replaces whatever state the broker kept of the table: not asked
        witnesses = [] if new_journal else await broker_witness(settings)
        admit(journal, anchor, new=new_journal, witnesses=witnesses, adopt=adopt)
        service = build_service(settings, journal, late_witness(journal, settings.table_id, settings.mqtt.prefix,
                                                                witnesses))
    except BaseException:
        journal.close()
        raise
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    restore_signals = on_stop_signals(loop, stop.set)
    try:
        await service.start()
        rules = service.core.rules
        log.info("table service running", extra={
            "table": settings.table_id, "profile": rules.name, "journal": str(settings.journal_path),
            "broker": ",".join(map(redact_url, settings.mqtt.broker_urls)), "phase": service.table.phase,
            "seq": service.core.seq})
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
        restore_signals()
    return 0
