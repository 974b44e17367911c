"""``tablectl recorder``: the central record of every table (DESIGN.md, "The casino floor"), until Ctrl-C or SIGTERM.

``tablectl recorder --broker URL[,URL...] [--db URL] [--prefix P] [--username U] [--password-file FILE]
[--tls-ca FILE] [--stream nats://HOST:PORT[,...]]``: reads every table's events, state and ratings from a
persistent MQTT session and writes them into ``--db`` (an SQLite path, by default ``recorder.db`` here, or
``postgresql://...``), acknowledging each message only once stored (:mod:`controller.recorder.service`).
The password is the environment's ``TABLECTL_RECORDER_PASSWORD`` or the first line of ``--password-file``
(never an option: a command line is readable by every user of the machine). With ``--stream`` (a NATS
floor) a gap is filled from the ``TABLES`` stream as the ``floor-admin`` user (``TABLECTL_STREAM_PASSWORD``
or ``--stream-password-file``). Exit 0 when stopped, 2 for bad input (one line), 1 when the database fails
otherwise.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

from controller.cli import one_line_errors
from controller.errors import UsageError
from controller.private_files import open_to_others

#: where the password comes from when no --password-file is given
PASSWORD_ENV = "TABLECTL_RECORDER_PASSWORD"
#: the floor-admin's password for --stream, when no --stream-password-file is given
STREAM_PASSWORD_ENV = "TABLECTL_STREAM_PASSWORD"


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "recorder",
        help="the central record: every table's events into one database (SQLite or PostgreSQL)",
        description="Read every table's events, state and ratings from a persistent MQTT session into a "
                    "database, acknowledging each message only once stored; publish each table's position "
                    "and the gap alarms under <prefix>/recorder/. Ctrl-C or SIGTERM stops it.",
    )
    one_line_errors(p, "recorder")
    p.add_argument("--broker", required=True, metavar="URL[,URL...]",
                   help="the broker, or the floor's nodes in the order to try them (mqtt://, mqtts://, ws://, wss://)")
    p.add_argument("--db", default="recorder.db", metavar="URL",
                   help="an SQLite file (default recorder.db here) or postgresql://user@host/db")
    p.add_argument("--prefix", default="tables", help="the pit's topic prefix (default tables)")
    p.add_argument("--username", default="recorder", help="the recorder's MQTT user and client id (default recorder)")
    p.add_argument("--password-file", type=Path, metavar="FILE",
                   help=f"a file holding the password (else ${PASSWORD_ENV})")
    p.add_argument("--tls-ca", type=Path, metavar="FILE", help="the CA that signed the brokers' certificates")
    p.add_argument("--stream", metavar="URL[,URL...]",
                   help="the floor's nodes' NATS client ports (nats://HOST:4222,...): gaps are filled from the "
                        "TABLES stream")
    p.add_argument("--stream-user", default="floor-admin", help="the stream's user (default floor-admin)")
    p.add_argument("--stream-password-file", type=Path, metavar="FILE",
                   help=f"a file holding the stream user's password (else ${STREAM_PASSWORD_ENV})")
    p.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    p.set_defaults(func=run)


def _password(path: Path | None, env: str, option: str) -> str | None:
    """The password: the first line of ``path`` when given, else the environment's ``env``."""
    if path is None:
        return os.environ.get(env) or None
    try:
        refusal = open_to_others(path, option)  # a file holding a password: mode 0600, as the journal key
        if refusal is not None:
            raise UsageError(refusal)
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{option} {path}: {getattr(e, 'strerror', None) or e}") from None
    line = text.splitlines()[0].strip() if text.strip() else ""
    if not line:
        raise UsageError(f"{option} {path}: empty")
    return line


def _stream(args: argparse.Namespace) -> Any:
    """The ``TABLES`` stream to fill gaps from (``--stream``), or None."""
    if args.stream is None:
        return None
    from controller.recorder.backfill import StreamSource, parse_nats_url

    urls = [u.strip() for u in args.stream.split(",") if u.strip()]
    if not urls:
        raise UsageError("--stream: name at least one node, e.g. nats://127.0.0.1:4222")
    for u in urls:
        try:
            parse_nats_url(u)
        except ValueError as e:
            raise UsageError(f"--stream: {e}") from None
    password = _password(args.stream_password_file, STREAM_PASSWORD_ENV, "--stream-password-file")
    if password is None:
        raise UsageError(f"--stream: the {args.stream_user} password is needed (${STREAM_PASSWORD_ENV} or "
                         "--stream-password-file)")
    return StreamSource(urls, args.stream_user, password, prefix=args.prefix, tls_ca=args.tls_ca)


def _options(args: argparse.Namespace) -> Any:
    from controller.contract.roles import check_user
    from controller.mqtt.addresses import parse_broker_url
    from controller.mqtt.broker_config import BrokerConfigError, check_prefix
    from controller.mqtt.options import BrokerOptions
    from controller.recorder.service import RecorderOptions

    brokers = [u.strip() for u in args.broker.split(",") if u.strip()]
    if not brokers:
        raise UsageError("--broker: name at least one broker, e.g. mqtt://127.0.0.1:1883")
    try:
        addresses = [parse_broker_url(u) for u in brokers]
    except ValueError as e:
        raise UsageError(f"--broker: {e}") from None
    if len({a.tls for a in addresses}) > 1:
        raise UsageError("--broker: all plain or all TLS (mqtts://, wss://), not a mix")
    try:
        check_prefix(args.prefix)
    except BrokerConfigError as e:
        raise UsageError(str(e)) from None
    why = check_user(args.username)
    if why is not None:
        raise UsageError(f"--username: {why}")
    if args.tls_ca is not None and not args.tls_ca.is_file():
        raise UsageError(f"--tls-ca {args.tls_ca}: no such file")
    if not args.db.strip():
        raise UsageError("--db: empty")
    broker = BrokerOptions(brokers=brokers, username=args.username,
                           password=_password(args.password_file, PASSWORD_ENV, "--password-file"), tls_ca=args.tls_ca)
    return RecorderOptions(broker=broker, db=args.db, prefix=args.prefix, stream=_stream(args))


def run(args: argparse.Namespace) -> int:
    import asyncio

    from controller.recorder.service import Recorder
    from controller.recorder.store import StoreError, StoreRefused
    from controller.stop_signals import on_stop_signals

    options = _options(args)
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s recorder %(levelname)s %(message)s")

    async def main() -> None:
        recorder = Recorder(options)
        loop = asyncio.get_running_loop()
        restore_signals = on_stop_signals(loop, recorder.stop)
        try:
            await recorder.run()
        finally:
            restore_signals()
        t = recorder.tally
        print(f"recorder stopped: {t.stored} event(s) stored, {t.repeats} repeat(s) dropped, {t.held} held, "
              f"{t.conflicts} conflict(s), {t.dropped} unreadable", file=sys.stderr, flush=True)

    try:
        asyncio.run(main())
    except StoreRefused as e:
        raise UsageError(f"--db: {e}") from None
    except StoreError as e:
        print(f"tablectl recorder: database failed: {str(e).splitlines()[0]}", file=sys.stderr)
        return 1
    return 0
