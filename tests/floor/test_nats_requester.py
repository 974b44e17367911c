"""The floor's NATS request/reply client (:mod:`controller.floor.nats_client`) against a node that goes away: every
failure is a :class:`NatsError`, the one error its callers catch (the recorder's gap filler, which tries the next
node and again later, ends on any other)."""

from __future__ import annotations

import asyncio
import json
import socket
import struct

import pytest

from controller.floor.nats_client import NatsError, NatsRequester


async def test_a_connection_reset_by_the_node_fails_this_request_and_every_later_one_with_a_nats_error() -> None:
    """The node answers the handshake, then resets the connection (a node killed with a request unread): the request
    in flight fails, and so does the next one made on the same connection, both as NatsError (the second used to be
    asyncio's ConnectionResetError, which ended the recorder's gap filler for good)."""

    async def node(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b'INFO {"server_id":"fake","max_payload":1048576}\r\n')
        while line := await reader.readline():
            if line.startswith(b"PING"):
                writer.write(b"PONG\r\n")
            elif line.startswith(b"PUB "):  # a request: reset, as a node killed with it unread does
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
                return

    server = await asyncio.start_server(node, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with NatsRequester("127.0.0.1", port, user="floor-admin", password="x", timeout=5.0) as nats:
            with pytest.raises(NatsError, match="connection lost"):
                await nats.request("$JS.API.STREAM.INFO.TABLES")
            with pytest.raises(NatsError):
                await asyncio.wait_for(nats.request("$JS.API.STREAM.INFO.TABLES"), 2.0)  # at once, not a timeout
    finally:
        server.close()
        await server.wait_closed()


async def test_request_many_collects_the_answers_until_a_status() -> None:
    """A batched direct get's answers: the messages with their header fields, up to ``204 EOB``; none with ``404``;
    another status is a NatsError naming it."""
    answers = {
        "batch": [b"NATS/1.0\r\nNats-Sequence: 7\r\nNats-Subject: tables.t01.events\r\n\r\n", b"NATS/1.0\r\n"
                   b"Nats-Sequence: 9\r\nNats-Subject: tables.t01.events\r\n\r\n", b"NATS/1.0 204 EOB\r\n\r\n"],
        "none": [b"NATS/1.0 404 Message Not Found\r\n\r\n"],
        "bad": [b"NATS/1.0 408 Bad Request\r\n\r\n"],
    }

    async def node(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b'INFO {"server_id":"fake"}\r\n')
        while line := await reader.readline():
            if line.startswith(b"PING"):
                writer.write(b"PONG\r\n")
            elif line.startswith(b"PUB "):
                _, _, reply, size = line.split()
                body = (await reader.readexactly(int(size) + 2))[:-2]
                for i, headers in enumerate(answers[json.loads(body)["case"]]):
                    payload = b'{"seq": %d}' % i if b" " not in headers.split(b"\r\n")[0] else b""
                    writer.write(b"HMSG %s 1 %d %d\r\n%s%s\r\n" % (reply, len(headers), len(headers) + len(payload),
                                                                 headers, payload))

    server = await asyncio.start_server(node, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with NatsRequester("127.0.0.1", port, user="floor-admin", password="x", timeout=5.0) as nats:
            got = await nats.request_many("$JS.API.DIRECT.GET.TABLES", {"case": "batch"})
            assert [(f["Nats-Sequence"], f["Nats-Subject"], p) for f, p in got] == [
                ("7", "tables.t01.events", b'{"seq": 0}'), ("9", "tables.t01.events", b'{"seq": 1}')]
            assert await nats.request_many("$JS.API.DIRECT.GET.TABLES", {"case": "none"}) == []
            with pytest.raises(NatsError, match="408 Bad Request"):
                await nats.request_many("$JS.API.DIRECT.GET.TABLES", {"case": "bad"})
    finally:
        server.close()
        await server.wait_closed()
