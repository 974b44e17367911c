"""The NATS JWTs of an auth callout: read the server's request, sign the answer.

NATS's auth callout (DESIGN.md, "The casino floor"; :mod:`controller.floor.auth_service`) sends each
connecting client's CONNECT as a JWT and takes back a JWT that either names the user, its account and its
permissions or says why not. A NATS JWT is an ordinary JWS compact token (``header.claims.signature``,
base64url without padding) whose algorithm is ``ed25519-nkey``: an Ed25519 signature by an nkey (PyPI
``nkeys``, the NATS project's own). Its ``jti`` is the base32 SHA-256 of the claims without it, as the
server's own library writes it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from typing import Any

__all__ = ["JwtError", "decode_claims", "encode_claims", "new_account_seed", "signer"]

_HEADER = {"typ": "JWT", "alg": "ed25519-nkey"}


class JwtError(ValueError):
    """A token that is not a NATS JWT (malformed, or its signature does not check)."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def signer(seed: bytes) -> Any:
    """The nkey key pair of ``seed`` (an account seed, ``SA...``)."""
    import nkeys

    try:
        return nkeys.from_seed(seed.strip())
    except nkeys.NkeysError as exc:
        raise JwtError(f"not an nkey seed: {type(exc).__name__}") from None


def new_account_seed() -> bytes:
    """A fresh account nkey seed: the auth callout's issuer (``DIR/auth/issuer.nk``)."""
    import os

    import nkeys

    return bytes(nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_ACCOUNT))


def encode_claims(claims: dict[str, Any], key: Any, *, now: float | None = None) -> str:
    """``claims`` signed by ``key`` (an nkey pair): ``iss`` its public key, ``iat`` now, ``jti`` its hash."""
    body = dict(claims)
    body["iss"] = key.public_key.decode()
    body["iat"] = int(time.time() if now is None else now)
    body.pop("jti", None)
    digest = hashlib.sha256(json.dumps(body, separators=(",", ":"), sort_keys=True).encode()).digest()
    body["jti"] = base64.b32encode(digest).decode().rstrip("=")
    signing_input = f"{_b64(json.dumps(_HEADER).encode())}.{_b64(json.dumps(body).encode())}"
    return f"{signing_input}.{_b64(key.sign(signing_input.encode()))}"


def decode_claims(token: str, *, verify_with: Any | None = None) -> dict[str, Any]:
    """The claims of ``token``; with ``verify_with`` (an nkey pair or public key) its signature is checked."""
    parts = token.strip().split(".")
    if len(parts) != 3:
        raise JwtError("not a JWT: expected three parts")
    try:
        header = json.loads(_unb64(parts[0]))
        claims = json.loads(_unb64(parts[1]))
        signature = _unb64(parts[2])
    except (ValueError, UnicodeDecodeError) as exc:
        raise JwtError(f"not a JWT: {exc}") from None
    if not isinstance(header, dict) or header.get("alg") != _HEADER["alg"] or not isinstance(claims, dict):
        raise JwtError("not a NATS JWT: expected alg ed25519-nkey and a claims object")
    if verify_with is not None:
        import nkeys

        try:
            verify_with.verify(f"{parts[0]}.{parts[1]}".encode(), signature)
        except nkeys.NkeysError:
            raise JwtError("signature does not check") from None
    return claims
