"""The floor's auth callout: the service every node asks before it lets an MQTT client in.

The nodes' configs (:mod:`controller.floor.nats_config`) define only the cluster's own tools' users and hand
every other connection to NATS's auth callout: the server publishes the client's CONNECT (user, password,
MQTT client id) as a signed JWT on ``$SYS.REQ.USER.AUTH`` in the ``AUTH`` account, and lets the client in
only when a JWT signed by the floor's issuer key comes back naming it (:mod:`controller.floor.nats_jwt`).
This service answers: it asks :class:`controller.floor.auth_policy.FloorAuth` (password, client id bound
to its owner) and signs the user's account and permissions, or a refusal naming the rule.

One runs beside each node (``tablectl floor-auth --dir DIR --node n1``; ``tablectl cluster`` starts them),
connected to its own node first and to the others when that one is down, all in one queue group: a request
from any node reaches one of them. With none running, no client can connect (the floor fails closed); the
clients already connected stay. Everything it reads is in ``DIR/auth/`` (mode 0700): ``service.toml`` (its
own login and the nodes' addresses), ``issuer.nk`` (the issuer's seed) and ``users.json`` (the users'
bcrypt hashes, roles and reserved client ids).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.floor.auth_policy import AuthPolicyError, FloorAuth
from controller.floor.nats_jwt import JwtError, decode_claims, encode_claims, signer
from controller.private_files import open_to_others
from controller.stop_signals import on_stop_signals


def _nothing() -> None:
    """No signal handlers to put back (the caller gave its own stop)."""


__all__ = ["AUTH_ACCOUNT", "AUTH_SUBJECT", "AUTH_USER", "AuthServiceError", "ServiceConfig", "answer", "serve"]

log = logging.getLogger("tablectl.floor.auth")

#: the subject NATS publishes each authorization request on (in the callout's account)
AUTH_SUBJECT = "$SYS.REQ.USER.AUTH"
#: the account the callout service lives in, alone
AUTH_ACCOUNT = "AUTH"
#: the service's own NATS user (``auth_users`` in the node configs: it is not asked about itself)
AUTH_USER = "floor-auth"
_QUEUE = "tablectl-floor-auth"


class AuthServiceError(ValueError):
    """``DIR/auth`` is missing or unusable: names the file and why."""


@dataclass(frozen=True)
class ServiceConfig:
    """What ``DIR/auth/`` holds for the service: its login, the nodes, the issuer key, the users."""

    user: str
    password: str
    servers: dict[str, str]  # node name -> nats:// URL of its client port
    ca: Path | None
    issuer_seed: bytes
    policy: FloorAuth

    @classmethod
    def load(cls, directory: Path | str) -> ServiceConfig:
        d = Path(directory) / "auth"
        try:
            for secret in (d / "service.toml", d / "issuer.nk"):  # a password, a signing seed: mode 0600
                if (refusal := open_to_others(secret, "auth secret")) is not None:
                    raise AuthServiceError(refusal)
            raw = tomllib.loads((d / "service.toml").read_text(encoding="utf-8"))
            seed = (d / "issuer.nk").read_bytes().strip()
        except FileNotFoundError as exc:
            raise AuthServiceError(f"{exc.filename}: missing (this cluster was written by an older tablectl, "
                                   "without the auth callout: write it again with `tablectl broker-config "
                                   "--engine nats`)") from None
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise AuthServiceError(f"{d / 'service.toml'}: unreadable: {exc}") from None
        try:
            servers = {str(k): str(v) for k, v in raw["servers"].items()}
            config = cls(str(raw["user"]), str(raw["password"]), servers,
                         Path(str(raw["ca"])) if "ca" in raw else None, seed, FloorAuth.load(d / "users.json"))
        except (KeyError, TypeError, AttributeError):
            raise AuthServiceError(f"{d / 'service.toml'}: not what `tablectl broker-config` writes") from None
        except AuthPolicyError as exc:
            raise AuthServiceError(str(exc)) from None
        try:
            signer(seed)
        except JwtError as exc:
            raise AuthServiceError(f"{d / 'issuer.nk'}: {exc}") from None
        return config


def answer(request_token: str, policy: FloorAuth, issuer: Any) -> tuple[str, str | None]:
    """The signed response to one authorization request, and for a refusal the line to log (``None``:
    allowed): who, from where, under which client id, and the rule (the response carries the rule alone).

    Pure but for bcrypt's check (run it off the event loop). A request that is not a JWT gets no answer
    (:class:`JwtError`): the server then refuses the client when its wait runs out.
    """
    claims = decode_claims(request_token)
    nats = claims.get("nats")
    if not isinstance(nats, dict):
        raise JwtError("authorization request without its 'nats' claims")
    opts = nats.get("connect_opts") or {}
    info = nats.get("client_info") or {}
    user_nkey = str(nats.get("user_nkey", ""))
    server_id = str((nats.get("server_id") or {}).get("id", ""))
    if not user_nkey or not server_id:
        raise JwtError("authorization request without user_nkey or server_id")
    decision = policy.decide(user=opts.get("user"), password=opts.get("pass"), client_id=info.get("mqtt_id"),
                             client_type=info.get("type"))
    response: dict[str, Any] = {"sub": user_nkey, "aud": server_id,
                                "nats": {"type": "authorization_response", "version": 2}}
    if decision.allowed:
        user_claims = {"sub": user_nkey, **decision.user_claims(policy.account)}
        response["nats"]["jwt"] = encode_claims(user_claims, issuer)
        return encode_claims(response, issuer), None
    response["nats"]["error"] = decision.reason
    who = (f"user {opts.get('user')!r} from {info.get('host', '?')} with client id {info.get('mqtt_id')!r} "
           f"({info.get('type', '?')})")
    return encode_claims(response, issuer), f"{who}: {decision.reason}"


def _tls(ca: Path | None) -> ssl.SSLContext | None:
    return ssl.create_default_context(cafile=str(ca)) if ca is not None else None


async def serve(directory: Path | str, node: str | None = None, *, stop: asyncio.Event | None = None) -> None:
    """Answer the nodes' authorization requests until ``stop`` is set (or SIGTERM/SIGINT when not given)."""
    import nats
    from nats.aio.msg import Msg

    config = ServiceConfig.load(directory)
    issuer = signer(config.issuer_seed)
    order = list(config.servers)
    if node is not None:
        if node not in config.servers:
            raise AuthServiceError(f"--node {node}: not a node of {directory} ({', '.join(order)})")
        order.remove(node)
        order.insert(0, node)
    urls = [config.servers[n] for n in order]
    restore_signals: Callable[[], None] = _nothing
    if stop is None:
        stop = asyncio.Event()
        restore_signals = on_stop_signals(asyncio.get_running_loop(), stop.set)

    async def on_request(msg: Msg) -> None:
        try:
            token, refused = await asyncio.to_thread(answer, msg.data.decode(errors="replace"), config.policy, issuer)
        except JwtError as exc:
            log.warning("floor-auth: a request that is not an authorization request (%s): no answer", exc)
            return
        if refused is not None:
            log.warning("floor-auth: refused: %s", refused)
        await msg.respond(token.encode())

    async def errored(exc: Exception) -> None:
        log.info("floor-auth: connection: %s", exc or type(exc).__name__)

    nc = None
    while not stop.is_set():
        try:
            nc = await nats.connect(urls, user=config.user, password=config.password, tls=_tls(config.ca),
                                    dont_randomize=True, allow_reconnect=True, max_reconnect_attempts=-1,
                                    reconnect_time_wait=0.5, connect_timeout=2, name=f"floor-auth-{node or 'any'}",
                                    error_cb=errored)
            break
        except (nats.errors.Error, OSError, TimeoutError) as exc:  # the nodes may not be up yet
            log.info("floor-auth: no node answers yet (%s); trying again", exc or type(exc).__name__)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)
    if nc is None:
        restore_signals()
        return
    try:
        await nc.subscribe(AUTH_SUBJECT, queue=_QUEUE, cb=on_request)
        await nc.flush()
        log.info("floor-auth: answering %s on %s", AUTH_SUBJECT, ", ".join(order))
        await stop.wait()
    finally:
        restore_signals()
        with contextlib.suppress(Exception):
            await nc.drain()
