"""The size limit of one message on the wire, written into every generated broker configuration.

Without one, a pit login could leave ten retained 20 MB messages on command topics: the broker grew by
200 MB, persisted them, and every new screen subscribing to ``tables/#`` downloaded them (issue 33).

The limit is sized from the largest payload the product sends, measured (docs/mqtt.md, "Message size
limit"): a table with seven rated players, 1,500 rounds of the simulated dealer (``python
benchmarks/message_sizes.py``). The largest were the retained ``history`` (the last 10 rounds, all seven spots:
91 KB); ``ratings/open`` 8 KB (each rating's latest departures; it grew with every departure to 135 KB after
1,500 rounds before issue #40); ``state`` 3.3 KB; an event 0.3 KB; a command is refused by
the table above 4 KB (:data:`controller.service.commands.MAX_PAYLOAD`). One MiB is over ten times the
largest measured, and it is NATS Server's own default ``max_payload``, which the floor already ran with.

Mosquitto takes two settings: ``message_size_limit`` (a publish whose payload is larger is dropped) and
``max_packet_size`` (a packet larger closes the connection). The packet limit leaves room for the longest
topic MQTT allows, so a payload just over the limit is dropped rather than the sender cut off.
"""

from __future__ import annotations

from typing import Final

__all__ = ["MAX_MESSAGE_BYTES", "MAX_PACKET_BYTES"]

#: the largest payload a broker written by ``broker-config`` takes (Mosquitto ``message_size_limit``, NATS
#: ``max_payload``)
MAX_MESSAGE_BYTES: Final = 1024 * 1024
#: the largest MQTT packet: the payload limit, the longest topic (65,535 bytes and its length), the fixed
#: header (at most 5 bytes), the packet id and MQTT 5 properties (Mosquitto ``max_packet_size``)
MAX_PACKET_BYTES: Final = MAX_MESSAGE_BYTES + 65_537 + 5 + 2 + 1024

