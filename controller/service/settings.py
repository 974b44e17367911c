"""Table service settings: a TOML file, then environment overrides, validated at start.

How it works: :func:`load_settings` reads the TOML file (``tablectl run --config FILE``), then
the environment, where ``TABLECTL_<KEY>`` overrides a top-level key and ``__`` descends into a
table (``TABLECTL_MQTT__URL``, ``TABLECTL_DEVICES__SHOE__PORT``, ``TABLECTL_RULES__TIES``).
The environment wins over the file. Anything wrong raises :class:`ConfigError` with one line
naming the file, the key (and its environment variable) and the reason, so the CLI can print it
and exit 2.

Example (``config/tables/*.toml`` has complete ones)::

    table_id = "t01"
    pit = "pit-1"                  # optional: the pit it stands in (state, analytics, the floor's reports)
    profile = "ny-4620"            # a shipped name, or a path to a profile TOML
    state_dir = "/var/lib/tablectl"

    [rules]                         # per-table overrides of the profile's keys
    min_bet = "10"

    [devices.shoe]
    port = "/dev/serial/by-id/usb-ACME_Shoe-if00"

    [mqtt]
    url = "mqtts://pit-broker.casino.lan:8883"
    tls_ca = "/etc/tablectl/pit-ca.pem"
    retained_refresh_s = 30        # retained topics unpublished this long go again (0: never)
    # or, on a floor's cluster, every node in the order to try them (docs/floor.md):
    # brokers = ["mqtts://node1.casino.lan:8883", "mqtts://node2.casino.lan:8883", "mqtts://node3.casino.lan:8883"]

The device sections are the drivers' own models (:mod:`drivers.config`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from controller.contract.roles import check_user
from controller.game.rules import Rules
from controller.mqtt.addresses import parse_broker_url
from controller.mqtt.options import BrokerOptions
from controller.nesting import TomlError, load_toml
from controller.private_files import open_to_others
from controller.profiles import ProfileError, load_rules
from controller.service.clock import JUMP_S
from drivers.config import ChipsConfig, ConsoleConfig, ShoeConfig, ShufflerConfig

__all__ = ["ENV_PREFIX", "ConfigError", "DevicesSettings", "MqttSettings", "TableSettings", "load_settings"]

ENV_PREFIX = "TABLECTL_"
_NESTED = "__"
#: the bounds of ``mqtt.retained_refresh_s`` when it is not 0 (off)
_REFRESH_MIN_S, _REFRESH_MAX_S = 0.5, 3600.0


class ConfigError(ValueError):
    """A table configuration that cannot be used: one line naming file, key and reason."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DevicesSettings(_Model):
    """The four devices; each section is the driver's own settings model."""

    shoe: ShoeConfig
    shuffler: ShufflerConfig
    chips: ChipsConfig
    console: ConsoleConfig = ConsoleConfig()


class MqttSettings(_Model):
    """The pit broker: URL (``mqtt://``, ``mqtts://``, ``ws://``, ``wss://``), TLS, credentials; or the
    floor's cluster: ``brokers``, every node in the order the table tries them (it moves to the next
    when it loses one)."""

    url: str = "mqtt://127.0.0.1:1883"
    brokers: list[str] = Field(default_factory=list, max_length=16)
    prefix: str = Field(default="tables", pattern=r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")
    username: str | None = None
    password: SecretStr | None = None
    tls_ca: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    keepalive: int = Field(default=15, ge=2, le=3600)
    #: seconds: a retained topic the table did not publish for this long goes again, the same bytes (0: never),
    #: so a retained copy a broker failed to store is replaced (docs/floor.md, "What a node loss and a quorum loss do")
    retained_refresh_s: float = 30.0
    #: a broker other than loopback without TLS: refused at start unless true (or ``run --allow-plaintext``)
    allow_plaintext: bool = False

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        parse_broker_url(v)  # raises ValueError naming what is wrong
        return v

    @field_validator("brokers")
    @classmethod
    def _brokers(cls, v: list[str]) -> list[str]:
        for i, url in enumerate(v):
            try:
                parse_broker_url(url)
            except ValueError as exc:
                raise ValueError(f"broker {i + 1}: {exc}") from None
        if len(set(v)) != len(v):
            raise ValueError("a broker is listed twice")
        if len({parse_broker_url(u).tls for u in v}) > 1:
            raise ValueError("all plain or all TLS (mqtts://, wss://), not a mix")
        return v

    @field_validator("retained_refresh_s", mode="before")
    @classmethod
    def _not_a_flag(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError("a number of seconds, not true/false (0 turns the refresh off)")
        return v

    @field_validator("retained_refresh_s")
    @classmethod
    def _refresh_period(cls, v: float) -> float:
        if not (v == 0 or _REFRESH_MIN_S <= v <= _REFRESH_MAX_S):
            raise ValueError(f"0 (off) or {_REFRESH_MIN_S:g} to {_REFRESH_MAX_S:g} s, not {v:g}")
        return v

    @field_validator("tls_ca", "tls_cert", "tls_key")
    @classmethod
    def _readable(cls, v: Path | None) -> Path | None:
        if v is not None and not v.is_file():
            raise ValueError(f"no such file: {v}")
        return v

    @model_validator(mode="after")
    def _tls_pairs(self) -> MqttSettings:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("tls_cert and tls_key: give both (client certificate and its key) or neither")
        if "url" in self.model_fields_set and "brokers" in self.model_fields_set and self.brokers:
            raise ValueError("url and brokers: give one (brokers lists every node of a cluster)")
        return self

    @property
    def broker_urls(self) -> tuple[str, ...]:
        """The brokers in the order the table tries them: ``brokers``, else the one ``url``."""
        return tuple(self.brokers) if self.brokers else (self.url,)

    @property
    def tls(self) -> bool:
        return parse_broker_url(self.broker_urls[0]).tls or self.tls_ca is not None

    def broker_options(self) -> BrokerOptions:
        """How the table reaches its brokers (the publisher's :class:`BrokerOptions`)."""
        return BrokerOptions(
            brokers=self.broker_urls, username=self.username,
            password=self.password.get_secret_value() if self.password else None,
            tls_ca=self.tls_ca, tls_cert=self.tls_cert, tls_key=self.tls_key, keepalive=self.keepalive)


class TableSettings(BaseSettings):
    """Everything ``tablectl run`` needs. Build it with :func:`load_settings`."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter=_NESTED,
        extra="forbid",
        frozen=True,
        case_sensitive=False,
    )

    table_id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,32}$", description="e.g. t01; part of every topic")
    pit: str | None = Field(default=None, description="the pit the table stands in (e.g. pit-3), a name like a "
                            "user name: 1 to 64 of a-z 0-9 . _ -; published in state and analytics, the floor "
                            "groups tables by it")
    profile: str = Field(default="ny-4620", min_length=1, description="shipped profile name or path to a TOML")
    rules: dict[str, Any] = Field(default_factory=dict, description="per-table overrides of profile keys")
    devices: DevicesSettings
    mqtt: MqttSettings = MqttSettings()
    state_dir: Path = Path("/var/lib/tablectl")
    journal: Path | None = Field(default=None, description="default: <state_dir>/<table_id>.journal")
    journal_sync: Literal["FULL", "NORMAL"] = "FULL"
    journal_key: Path = Field(default=Path("/etc/tablectl/journal.key"),
                              description="the journal's HMAC key, mode 0600, kept apart from the journal")
    anchor_dir: Path = Field(default=Path("/var/lib/tablectl-anchor"),
                             description="where the journal's anchor lives: its own directory, never inside "
                             "state_dir or the service user's home, not restored with them (docs/deploy.md)")
    snapshot_every: int = Field(default=500, ge=1, description="inputs between two engine snapshots")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"
    log_format: Literal["json", "text"] = "json"
    auto_open: bool = Field(default=False, description="open the table at the first start (else: cmd/open)")
    require_dealer: bool = Field(default=False, strict=True, description="betting opens only with a dealer on duty "
                                 "(signed in by badge or assigned by cmd/set_dealer); journaled at start when changed")
    tick_every_s: float = Field(default=30.0, gt=0, le=3600, description="clock ticks for deck-change timing")
    clock_jump_s: float = Field(default=JUMP_S, gt=0, le=86400, description="a wall clock that jumps forward more "
                                "than this against the table's monotonic time raises the clock_jump alarm (one "
                                "that goes back always does: docs/deploy.md)")
    selfcheck_every_s: float = Field(default=3600.0, ge=0, le=86400, description="seconds between the running "
                                     "table's program checks (0: only at start and on request; docs/selfcheck.md)")
    rating_idle_rounds: int = Field(default=5, ge=1, le=1000, description="settled rounds with no wager on its "
                                    "spots that end a player's rating (with devices.chips.card_readers)")

    @field_validator("pit")
    @classmethod
    def _pit_name(cls, v: str | None) -> str | None:
        why = check_user(v) if v is not None else None
        if why is not None:
            raise ValueError(why.replace("user name", "pit name", 1))
        return v

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.upper() if isinstance(v, str) else v

    @model_validator(mode="after")
    def _profile_loads(self) -> TableSettings:
        try:
            load_rules(self.profile, self.rules)
        except ProfileError as exc:
            raise ValueError(f"profile/rules: {exc}") from None
        return self

    @property
    def journal_path(self) -> Path:
        return self.journal if self.journal is not None else self.state_dir / f"{self.table_id}.journal"

    def load_rules(self) -> Rules:
        """The engine's rules: the profile with this table's overrides."""
        return load_rules(self.profile, self.rules)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The file's values arrive as init kwargs; the environment overrides them.
        return (_EnvRulesAsToml(settings_cls, env_settings), init_settings)


class _EnvRulesAsToml(PydanticBaseSettingsSource):
    """The environment, each ``TABLECTL_RULES__<KEY>`` read as the TOML value it would be in ``[rules]``
    (``2`` a number, ``true`` a boolean, ``push`` a string): profile keys are strictly typed, so the
    environment's strings would otherwise be refused (``decks = "2"`` is not a number)."""

    def __init__(self, settings_cls: type[BaseSettings], env: PydanticBaseSettingsSource) -> None:
        super().__init__(settings_cls)
        self._env = env

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:  # pragma: no cover - unused
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        data = self._env()
        rules = data.get("rules")
        if isinstance(rules, dict):
            data["rules"] = {k: _toml_value(k, v) if isinstance(v, str) else v for k, v in rules.items()}
        return data


def _toml_value(key: str, text: str) -> Any:
    try:
        value = load_toml(f"v = {text}")["v"]
    except TomlError:
        return text  # a bare word (TABLECTL_RULES__TIES=push): the string itself
    if isinstance(value, float) and key in ("min_bet", "max_bet"):
        return text  # money is a decimal string, never a float: "7.50" stays "7.50"
    return value


def _holds_password(data: Mapping[str, Any]) -> bool:
    """Whether a table config's ``[mqtt]`` holds a password (``password``, or one in a broker URL)."""
    mqtt = data.get("mqtt")
    if not isinstance(mqtt, Mapping):
        return False
    if mqtt.get("password"):
        return True
    brokers = mqtt.get("brokers")
    urls = [mqtt.get("url"), *(brokers if isinstance(brokers, list) else [])]
    for url in urls:
        if isinstance(url, str):
            try:
                if urlsplit(url).password:
                    return True
            except ValueError:  # a bad URL: the settings' own check says why
                continue
    return False


def _deep_merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _env_name(loc: tuple[int | str, ...]) -> str:
    return ENV_PREFIX + _NESTED.join(str(p).upper() for p in loc)


def _describe(source: str, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors(include_url=False):
        loc = tuple(err.get("loc", ()))
        key = ".".join(str(p) for p in loc)
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        kind = err.get("type")
        if kind == "missing":
            msg = "required key missing"
        elif kind == "extra_forbidden":
            msg = "unknown key"
        if key:
            problems.append(f"{key}: {msg} (env {_env_name(loc)})" if kind != "missing" else f"{key}: {msg}")
        else:
            problems.append(msg)
    return f"{source}: " + "; ".join(problems)


def load_settings(
    path: str | os.PathLike[str] | None = None, *, overrides: Mapping[str, Any] | None = None
) -> TableSettings:
    """Read ``path`` (TOML), merge ``overrides`` over it, let the environment win; validate.

    Raises :class:`ConfigError` (one line: file, key, reason).
    """
    source = str(path) if path is not None else "configuration"
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        try:
            data = load_toml(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{source}: no such config file") from None
        except OSError as exc:
            raise ConfigError(f"{source}: cannot read: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"{source}: not UTF-8 text") from None
        except TomlError as exc:  # not TOML, or nested too deeply
            raise ConfigError(f"{source}: {exc}") from None
        if _holds_password(data):  # a secret at rest: mode 0600, as the journal key (DESIGN, "The casino floor")
            try:
                refusal = open_to_others(p, "config file holding the broker password")
            except OSError as exc:
                raise ConfigError(f"{source}: cannot read: {exc.strerror}") from None
            if refusal is not None:
                raise ConfigError(refusal)
        # Relative paths in the file are relative to the file.
        base = p.resolve().parent
        for key in ("state_dir", "journal", "journal_key", "anchor_dir"):
            if isinstance(data.get(key), str) and not Path(data[key]).is_absolute():
                data[key] = str(base / data[key])
        profile = data.get("profile")
        if isinstance(profile, str) and profile.endswith(".toml") and not Path(profile).is_absolute():
            data["profile"] = str(base / profile)
    if overrides:
        data = _deep_merge(data, overrides)
    try:
        settings = TableSettings(**data)
    except ValidationError as exc:
        raise ConfigError(_describe(source, exc)) from None
    return settings
