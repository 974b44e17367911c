"""How to reach the broker: one typed set of options for every MQTT client of the product.

The table's settings (``[mqtt]``, :class:`controller.service.settings.MqttSettings`) produce one
(:meth:`~controller.service.settings.MqttSettings.broker_options`), ``tablectl recorder``'s flags another, and
the publisher (:class:`controller.mqtt.publisher.MqttPublisher`) and the recorder
(:class:`controller.recorder.service.Recorder`) take it. The brokers are checked here once (each URL, all plain
or all TLS, a client key only with its certificate), so a bad set is refused before any connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from controller.mqtt.addresses import BrokerAddress, parse_broker_url, redact_url

__all__ = ["DEFAULT_BROKER", "BrokerOptions"]

#: seconds NATS's MQTT gives each JetStream request a client's packet waits on (its ``js_api_timeout``, written
#: in the floor's node configuration): past it NATS refuses (SUBACK 0x80) or closes the connection itself
NATS_JS_API_TIMEOUT_S = 5.0

#: the broker of a table configured with none: a Mosquitto on the table PC
DEFAULT_BROKER = "mqtt://127.0.0.1:1883"


@dataclass(frozen=True, slots=True)
class BrokerOptions:
    """The brokers (a pit's one, or every node of the floor's cluster in the order to try them), who connects
    (credentials, client id, TLS files) and the connection's timings (keepalive, PUBACK timeout, the failover's
    backoff: :mod:`controller.mqtt.failover`). A user name or password in a broker's URL wins over these."""

    brokers: Sequence[str] = (DEFAULT_BROKER,)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    tls_ca: str | Path | None = None
    tls_cert: str | Path | None = None
    tls_key: str | Path | None = None
    #: None: the table's own, from its prefix and id (the recorder's is always its user name: one session, its own)
    client_id: str | None = None
    keepalive: int = 15
    #: seconds: a connection or a PUBACK that takes longer drops the connection (and the table tries the next
    #: broker at once). Just past NATS's own bound on those answers: a node still silent then is stuck (electing
    #: JetStream leaders after a node loss) and a fresh connection elsewhere is served sooner (docs/floor.md)
    timeout: float = NATS_JS_API_TIMEOUT_S + 1.0
    #: seconds: the first and the longest wait after every broker failed in turn
    backoff_min: float = 0.05
    backoff_max: float = 5.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "brokers", tuple(self.brokers))  # a list given is kept as the tuple it is
        if not self.brokers:
            raise ValueError("no broker given")
        addresses = self.addresses  # raises ValueError naming what is wrong with a URL
        if len({a.tls for a in addresses}) > 1:
            raise ValueError("brokers: all plain or all TLS (mqtts://, wss://), not a mix")
        if self.tls_key is not None and self.tls_cert is None:
            raise ValueError("tls_key given without tls_cert")

    @property
    def addresses(self) -> tuple[BrokerAddress, ...]:
        """Every broker parsed, in the order they are tried."""
        return tuple(parse_broker_url(u) for u in self.brokers)

    @property
    def shown(self) -> tuple[str, ...]:
        """Every broker's URL as logged: a password replaced by ``***``."""
        return tuple(redact_url(u) for u in self.brokers)
