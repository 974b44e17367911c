"""Just enough of the NATS client protocol to ask JetStream's API: connect, request, reply.

The floor needs a few JetStream API calls (create the ``TABLES`` stream, read its state and messages) and
no NATS client library: the protocol is lines of text (``INFO``, ``CONNECT``, ``PING``/``PONG``, ``SUB``,
``PUB``, ``MSG``/``HMSG``), so :class:`NatsRequester` speaks it over one asyncio connection. A request
publishes to the API subject with a reply subject under the connection's own inbox and waits for the one
answer (a JSON object; JetStream's errors come back as ``{"error": {...}}``); :meth:`NatsRequester.request_many`
collects the several answers of one request (JetStream's batched direct get: the messages, then a status).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import secrets
import ssl
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["NatsError", "NatsRequester", "Reply"]

#: one answer of :meth:`NatsRequester.request_many`: its header fields (``Nats-Sequence``, ...) and its payload
Reply = tuple[dict[str, str], bytes]


class NatsError(RuntimeError):
    """The server refused the connection or a request, or did not answer in time."""


class NatsRequester:
    """One NATS connection for request/reply (``async with NatsRequester(host, port, user, password)``)."""

    def __init__(self, host: str, port: int, *, user: str, password: str, timeout: float = 5.0,
                 tls_ca: Path | None = None) -> None:
        self.host, self.port = host, port
        self._tls_ca = tls_ca
        self._user, self._password = user, password
        self.timeout = timeout
        self._inbox = f"_INBOX.{secrets.token_hex(8)}"
        self._ids = itertools.count(1)
        self._waiting: dict[str, asyncio.Future[bytes]] = {}
        #: the answers of each request_many in progress, by reply subject (None: the connection is over)
        self._batches: dict[str, asyncio.Queue[tuple[bytes, bytes] | None]] = {}
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._task: asyncio.Task[None] | None = None
        self._pong: asyncio.Future[None] | None = None

    async def __aenter__(self) -> NatsRequester:
        try:
            async with asyncio.timeout(self.timeout):
                self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
                info = await self._reader.readline()
                if not info.startswith(b"INFO "):
                    raise NatsError(f"{self.host}:{self.port}: not a NATS server")
                if json.loads(info[5:]).get("tls_required") or self._tls_ca is not None:
                    # NATS upgrades to TLS right after INFO; the server is verified against the pit's CA
                    ctx = ssl.create_default_context(cafile=str(self._tls_ca) if self._tls_ca else None)
                    await self._writer.start_tls(ctx, server_hostname=self.host)
                connect = {"verbose": False, "pedantic": False, "user": self._user, "pass": self._password,
                           "lang": "python-tablectl", "version": "1", "protocol": 1, "headers": True,
                           "no_responders": True}
                self._writer.write(f"CONNECT {json.dumps(connect)}\r\nPING\r\n".encode()
                                   + f"SUB {self._inbox}.* 1\r\n".encode())
                await self._writer.drain()
                line = await self._reader.readline()
                if line.startswith(b"-ERR"):
                    raise NatsError(f"{self.host}:{self.port}: {line.decode(errors='replace').strip()}")
                if not line.startswith(b"PONG"):
                    raise NatsError(f"{self.host}:{self.port}: unexpected {line[:40]!r}")
        except (OSError, TimeoutError, ssl.SSLError) as exc:
            await self._close()
            raise NatsError(f"{self.host}:{self.port}: {exc or type(exc).__name__}") from None
        except NatsError:
            await self._close()
            raise
        self._task = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self._close()

    async def _close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()
        for fut in self._waiting.values():
            if not fut.done():
                fut.set_exception(NatsError("connection closed"))

    async def _read(self) -> None:
        assert self._reader is not None and self._writer is not None
        reader = self._reader
        try:
            while line := await reader.readline():
                if line.startswith(b"PING"):
                    self._writer.write(b"PONG\r\n")
                    continue
                if line.startswith(b"-ERR"):
                    raise NatsError(line.decode(errors="replace").strip())
                if not line.startswith((b"MSG ", b"HMSG ")):
                    continue  # +OK, PONG, INFO
                parts = line.split()
                subject = parts[1].decode()
                size = int(parts[-1])
                header_len = int(parts[-2]) if parts[0] == b"HMSG" else 0
                data = await reader.readexactly(size + 2)
                headers, payload = data[:header_len], data[header_len:size]
                batch = self._batches.get(subject)
                if batch is not None:
                    batch.put_nowait((headers, payload))
                    continue
                fut = self._waiting.pop(subject, None)
                if fut is None or fut.done():
                    continue
                if b"503" in headers.split(b"\r\n", 1)[0]:
                    fut.set_exception(NatsError("no responders (is JetStream up and the stream there?)"))
                else:
                    fut.set_result(payload)
        except (OSError, asyncio.IncompleteReadError, NatsError) as exc:
            for fut in self._waiting.values():
                if not fut.done():
                    fut.set_exception(NatsError(f"connection lost: {exc}"))
        finally:
            for batch in self._batches.values():
                batch.put_nowait(None)

    async def _send(self, subject: str, reply: str, payload: dict[str, Any] | None) -> None:
        assert self._writer is not None, "use: async with NatsRequester(...)"
        body = json.dumps(payload).encode() if payload is not None else b""
        try:
            self._writer.write(f"PUB {subject} {reply} {len(body)}\r\n".encode() + body + b"\r\n")
            # a connection already lost raises here (asyncio's ConnectionResetError), not in the reader
            await self._writer.drain()
        except OSError as exc:
            raise NatsError(f"{subject}: connection lost: {exc or type(exc).__name__}") from None

    async def request(self, subject: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        """Publish ``payload`` (JSON) to ``subject`` and return the JSON answer."""
        reply = f"{self._inbox}.{next(self._ids)}"
        fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._waiting[reply] = fut
        try:
            await self._send(subject, reply, payload)
            async with asyncio.timeout(self.timeout):
                answer = await fut
        except TimeoutError:
            raise NatsError(f"{subject}: no answer within {self.timeout:g} s") from None
        finally:
            self._waiting.pop(reply, None)
        decoded = json.loads(answer) if answer else {}
        if not isinstance(decoded, dict):
            raise NatsError(f"{subject}: answer is not a JSON object")
        return decoded

    async def request_many(self, subject: str, payload: dict[str, Any] | None = None) -> list[Reply]:
        """Publish ``payload`` (JSON) to ``subject`` and collect its answers until one carries a status, as
        JetStream's batched direct get answers (each message with its ``Nats-Sequence`` and ``Nats-Subject``,
        then ``204 EOB``; ``404`` when there is none): the answers before the status. Any other status, a silence
        of ``timeout`` between two answers or a lost connection raises :class:`NatsError`."""
        reply = f"{self._inbox}.{next(self._ids)}"
        answers: asyncio.Queue[tuple[bytes, bytes] | None] = asyncio.Queue()
        self._batches[reply] = answers
        out: list[Reply] = []
        try:
            await self._send(subject, reply, payload)
            while True:
                try:
                    async with asyncio.timeout(self.timeout):
                        answer = await answers.get()
                except TimeoutError:
                    raise NatsError(f"{subject}: no answer within {self.timeout:g} s") from None
                if answer is None:
                    raise NatsError(f"{subject}: connection lost")
                status, description, fields = _headers(answer[0])
                if status is None:
                    out.append((fields, answer[1]))
                elif status in (204, 404):  # end of the batch; nothing (more) there
                    return out
                elif status == 503:
                    raise NatsError(f"{subject}: no responders")
                else:
                    raise NatsError(f"{subject}: {status} {description}".rstrip())
        finally:
            self._batches.pop(reply, None)


def _headers(raw: bytes) -> tuple[int | None, str, dict[str, str]]:
    """A message's NATS headers (``NATS/1.0 [status [description]]`` then ``Name: value`` lines): its status (None
    when it has none: a message), the status's description and the fields."""
    lines = raw.decode("utf-8", errors="replace").split("\r\n")
    first = lines[0].split(" ", 2) if lines and lines[0].startswith("NATS/") else []
    status = int(first[1]) if len(first) > 1 and first[1].isdigit() else None
    fields: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if colon:
            fields[name.strip()] = value.strip()
    return status, first[2] if len(first) > 2 else "", fields
