"""The recorder's MQTT client: a persistent session whose QoS 1 messages are acknowledged only once stored.

A broker forgets a QoS 1 message for a session once the client's PUBACK comes; paho sends it as soon as
the message is handed over, before anything is stored, so a recorder killed then would lose it. paho 2.x
can leave the PUBACK to the application (``manual_ack_set(True)``, then ``ack(mid, qos)``); aiomqtt 2.x
does not expose it (aiomqtt issue #345, pull request #346 not merged), so :class:`AckingClient` switches it
on in the paho client aiomqtt wraps, *before* connecting (a persistent session's queued messages come right
after the CONNACK), and :meth:`AckingClient.ack` writes the PUBACK in the caller's turn. Messages are
acknowledged in the order they came, as MQTT 3.1.1 (4.6) asks. Built on
:class:`controller.mqtt.session.ImmediateClient` (aiomqtt's internals, kept below aiomqtt 3 in
pyproject.toml), tested on a real Mosquitto and the NATS cluster (``tests/recorder/``, ``tests/floor/``).
"""

from __future__ import annotations

from typing import Any

import aiomqtt
import paho.mqtt.client as mqtt

from controller.mqtt.session import ImmediateClient

__all__ = ["AckingClient"]


class AckingClient(ImmediateClient):
    """An :class:`aiomqtt.Client` whose received QoS 1 messages wait for :meth:`ack`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._client.manual_ack_set(True)

    def ack(self, message: aiomqtt.Message) -> None:
        """Acknowledge ``message`` to the broker now (QoS 0 needs none)."""
        if message.qos == 0:
            return
        rc = self._client.ack(message.mid, message.qos)
        if rc != mqtt.MQTT_ERR_SUCCESS:
            raise aiomqtt.MqttCodeError(rc, "Could not acknowledge a message")
        self.flush()
