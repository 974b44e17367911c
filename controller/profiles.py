"""House-rule profiles: TOML files validated with pydantic into a :class:`Rules`.

A profile is named (``ny-4620`` -> ``config/profiles/ny-4620.toml``) or given as a
path. Key names are the contract of DESIGN.md; every added key has a default so a
profile naming only the documented keys loads. Errors name the file, the key and
the reason (:class:`ProfileError`), because operators and test labs write these.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from controller.citations import Citation, bound_refusal, option_citations, parse_citations, plain_number, show_value
from controller.game.money import MoneyError, parse_money
from controller.game.rules import NATURAL_PAYS, Rules
from controller.nesting import TomlError, load_toml

__all__ = ["PROFILE_DIR", "Citation", "ProfileError", "ProfileModel", "available_profiles", "bound_refusal",
           "load_profile_model", "load_rules", "option_citations", "parse_citations", "resolve_profile_path",
           "show_value"]


def _shipped_profiles() -> Path:
    """``config/profiles/`` of a checkout (DESIGN's place for them), else the installed package's copy
    (``controller.shipped_profiles``: setup.py installs that folder under this name)."""
    checkout = Path(__file__).resolve().parent.parent / "config" / "profiles"
    if checkout.is_dir():
        return checkout
    installed = Path(__file__).resolve().parent / "shipped_profiles"
    return installed if installed.is_dir() else checkout


PROFILE_DIR = _shipped_profiles()

Money = int  # cents after validation
NaturalPays = Literal["3:2", "6:5", "2:1", "1:1"]
TieOption = Literal["push", "push_naturals_only", "house_wins"]

#: option -> the profile key that sets it per table size. A per-table override of the option wins over
#: the profile's figure for the table's size (DESIGN: "Any option can be overridden per table"), else
#: an override of ``max_hands`` on house-shoe-surrender (7 spots: 3 hands) would change nothing.
DERIVED_FROM_TABLE_SIZE: dict[str, str] = {"max_hands": "max_hands_by_spots"}


class ProfileError(ValueError):
    """A profile that cannot be used: names the file, the key and why."""


def _money(value: Any) -> int:
    try:
        return parse_money(value)
    except MoneyError as e:
        raise ValueError(str(e)) from None


class ProfileModel(BaseModel):
    """The validated form of a profile file (keys of DESIGN.md, plus defaulted extras)."""

    #: strict: a boolean is a TOML/JSON boolean ("no", "on", 1 are refused) and a count a whole number (not true)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    #: option -> the clause the profile file's comment cites (:func:`option_citations`); not a key of the file
    _citations: dict[str, str] = PrivateAttr(default_factory=dict)
    #: option -> its citation with the clause and the bound (:func:`parse_citations`); not a key of the file
    _cited: dict[str, Citation] = PrivateAttr(default_factory=dict)

    name: str = "custom"
    description: str = ""
    #: how the rule text's clauses are named in full: prepended to the clause each comment cites, e.g.
    #: "NY 4620.5" + "(f)(2)"; refusals and the conformance report name clauses this way
    clause_prefix: str = Field("", max_length=100)
    decks: int = Field(6, ge=1, le=8)
    spots: int = Field(7, ge=1, le=7)
    min_bet: Money = 500
    max_bet: Money = 50000
    multi_spot_max_players: int = Field(0, ge=0, le=7)
    dealer_hits_soft_17: bool = False
    hole_card: Literal["peek", "no_peek", "none"] = "peek"
    peek_on: list[Literal["A", "T"]] = ["A", "T"]
    dealer_blackjack_takes: Literal["original", "all"] = "original"
    natural_pays: NaturalPays = "3:2"
    ties: TieOption = "push"
    #: the natural payout a rule text ties to each tie option (e.g. NY 4620.5(h)(2)), and that clause; a
    #: profile or override pairing ``ties`` with another ``natural_pays`` is refused naming the clause
    natural_pays_by_ties: dict[TieOption, NaturalPays] = {}
    natural_pays_by_ties_rule: str = Field("the profile's natural_pays_by_ties", min_length=1, max_length=200)
    double_on: Literal["any", "9-11", "hard-9-11", "10-11"] = "any"
    double_for_less: bool = False
    double_min_table_min: bool = False
    double_after_split: bool = True
    split_by: Literal["rank", "value"] = "rank"
    max_hands: int = Field(4, ge=0, le=16)
    max_hands_by_spots: dict[str, int] = {}
    resplit_aces: bool = False
    split_aces_one_card: bool = True
    insurance: Literal["none", "half", "up_to_half"] = "half"
    insurance_min_half_table_min: bool = False
    even_money: bool = True
    surrender: Literal["none", "late", "european"] = "none"
    surrender_lost_to_blackjack: bool = False
    naturals_paid_at_once: bool = True
    burn: int = Field(1, ge=0, le=10)
    penetration: float = Field(0.75, gt=0.0, lt=1.0)
    second_cut_card: bool = False
    dealt_from_hand: bool = False
    deck_change_hours: float = Field(24.0, gt=0.0, le=168.0)
    deck_change_warning_minutes: float = Field(30.0, ge=0.0)
    deck_sets: int = Field(1, ge=1, le=2)

    _money_keys = field_validator("min_bet", "max_bet", mode="before")(classmethod(lambda cls, v: _money(v)))

    @model_validator(mode="before")
    @classmethod
    def _retired_keys(cls, data: Any) -> Any:
        """The bounds of ``set_limits`` were keys of their own; they are now the bound written beside the
        clause of ``min_bet``/``max_bet`` (one source for every path), so say how to write them."""
        if isinstance(data, dict):
            for key in _RETIRED_BOUND_KEYS:
                if key in data:
                    raise _KeyProblem(key, "no longer a key: write the bound at the end of the option's citation, "
                                           'e.g. max_bet = "5"  # (f)(2): maximum bet $5 [at most 5]')
        return data

    @field_validator("max_hands_by_spots")
    @classmethod
    def _spot_keys(cls, v: dict[str, int]) -> dict[str, int]:
        for spots, hands in v.items():
            if not (spots.isascii() and spots.isdigit()) or not 1 <= int(spots) <= 7:
                raise ValueError(f"table size {spots!r} must be a number of spots from 1 to 7")
            if hands < 0:
                raise ValueError(f"hands for {spots} spots must be 0 (unlimited) or more")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> ProfileModel:
        """Contradictions between keys, each reported against the key that breaks it."""
        if self.min_bet <= 0:
            raise _KeyProblem("min_bet", "must be more than zero")
        if self.max_bet < self.min_bet:
            raise _KeyProblem("max_bet", f"is below min_bet ({self.max_bet} < {self.min_bet} cents)")
        if self.hole_card == "none" and self.peek_on and "peek_on" in self.model_fields_set:
            raise _KeyProblem("peek_on", "must be empty when hole_card is 'none' (no hole card to peek at)")
        if self.hole_card == "peek" and not self.peek_on:
            raise _KeyProblem("peek_on", "must name at least one up card when hole_card is 'peek'")
        if self.even_money and self.insurance == "none" and "even_money" in self.model_fields_set:
            raise _KeyProblem("even_money", "is offered in place of insurance and needs insurance other than 'none'")
        if self.resplit_aces and self.max_hands == 2:
            raise _KeyProblem("resplit_aces", "needs max_hands above 2 (or 0, unlimited)")
        if self.double_min_table_min and not self.double_for_less:
            raise _KeyProblem("double_min_table_min", "only applies when double_for_less is true")
        if self.second_cut_card and self.penetration > 2 / 3:
            raise _KeyProblem(
                "penetration", "must leave the second cutting card at least a third from the back (NJ 19:47-2.5(i))"
            )
        paired = self.natural_pays_by_ties.get(self.ties)
        if paired is not None and self.natural_pays != paired:
            raise _KeyProblem("natural_pays", f"{self.natural_pays!r} does not go with ties = {self.ties!r}, which "
                                              f"pays naturals {paired} ({self.natural_pays_by_ties_rule})")
        if self.surrender == "european" and self.hole_card == "peek":
            raise _KeyProblem("surrender", "'european' surrender is for games without a peek (hole_card no_peek/none)")
        return self

    def to_rules(self) -> Rules:
        """The frozen engine value."""
        return Rules(
            name=self.name,
            decks=self.decks,
            spots=self.spots,
            min_bet=self.min_bet,
            max_bet=self.max_bet,
            multi_spot_max_players=self.multi_spot_max_players,
            dealer_hits_soft_17=self.dealer_hits_soft_17,
            hole_card=self.hole_card,
            peek_on=frozenset(1 if r == "A" else 10 for r in self.peek_on) if self.hole_card != "none" else frozenset(),
            dealer_blackjack_takes=self.dealer_blackjack_takes,
            natural_pays=NATURAL_PAYS[self.natural_pays],
            ties=self.ties,
            double_on=self.double_on,
            double_for_less=self.double_for_less,
            double_min_table_min=self.double_min_table_min,
            double_after_split=self.double_after_split,
            split_by=self.split_by,
            max_hands=self.max_hands,
            max_hands_by_spots=tuple(sorted((int(k), v) for k, v in self.max_hands_by_spots.items())),
            resplit_aces=self.resplit_aces,
            split_aces_one_card=self.split_aces_one_card,
            insurance=self.insurance,
            insurance_min_half_table_min=self.insurance_min_half_table_min,
            even_money=self.even_money and self.insurance != "none",
            surrender=self.surrender,
            surrender_lost_to_blackjack=self.surrender_lost_to_blackjack,
            naturals_paid_at_once=self.naturals_paid_at_once,
            burn=self.burn,
            penetration=self.penetration,
            second_cut_card=self.second_cut_card,
            dealt_from_hand=self.dealt_from_hand,
            deck_change_hours=self.deck_change_hours,
            deck_change_warning_minutes=self.deck_change_warning_minutes,
            deck_sets=self.deck_sets,
            **self._limit_bounds(),
            citations=tuple(sorted(self._citations.items())),
        )

    def cited(self) -> dict[str, Citation]:
        """Each option of the profile file -> its citation (clause and bound), in the file's order."""
        return dict(self._cited)

    def _limit_bounds(self) -> dict[str, Any]:
        """The bounds of ``min_bet``/``max_bet`` the engine holds its limits event to (``limits_refusal``),
        taken from the citations' bounds: the one source every path checks."""
        out: dict[str, Any] = {}
        for option, low_field, high_field, rule_field in (
                ("min_bet", "min_bet_floor", "min_bet_ceiling", "min_bet_floor_rule"),
                ("max_bet", "max_bet_floor", "max_bet_ceiling", "max_bet_ceiling_rule")):
            cited = self._cited.get(option)
            if cited is None or cited.bound is None:
                continue
            low, high = cited.bound.range(getattr(self, option))
            out[low_field] = int(low) if low is not None else 0
            out[high_field] = int(high) if high is not None else 0
            out[rule_field] = cited.name()
        return out


class _KeyProblem(ValueError):
    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


_RETIRED_BOUND_KEYS = ("table_min_bet_floor", "table_min_bet_floor_rule", "table_max_bet_ceiling",
                       "table_max_bet_ceiling_rule")


def available_profiles() -> list[str]:
    """Names of the shipped profiles."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def resolve_profile_path(name_or_path: str | Path) -> Path:
    """The file a profile name or path refers to, or :class:`ProfileError`."""
    text = str(name_or_path)
    candidate = Path(text)
    if text.endswith(".toml") or "/" in text or candidate.exists():
        if not candidate.is_file():
            raise ProfileError(f"{text}: no such profile file")
        return candidate
    path = PROFILE_DIR / f"{text}.toml"
    if not path.is_file():
        raise ProfileError(f"unknown profile {text!r} (shipped: {', '.join(available_profiles())}; or give a path)")
    return path


_STRICT_TYPES = {"bool_type": "a boolean (write true or false)", "int_type": "a whole number",
                 "float_type": "a number", "string_type": "a string", "list_type": "a list", "dict_type": "a table"}


def _format_errors(source: str, err: ValidationError) -> str:
    problems = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"])
        ctx = e.get("ctx") or {}
        inner = ctx.get("error")
        if isinstance(inner, _KeyProblem):
            problems.append(f"{inner.key}: {inner.reason}")
        elif e["type"] == "extra_forbidden":
            problems.append(f"{loc}: unknown key")
        elif e["type"] in _STRICT_TYPES:  # strict: "no", "on", 1 are not booleans, true is not a count
            given = e["input"]
            shown = ("true" if given else "false") if isinstance(given, bool) else repr(given)
            problems.append(f"{loc}: {shown} is not {_STRICT_TYPES[e['type']]}")
        else:
            msg = e["msg"].removeprefix("Value error, ")
            problems.append(f"{loc}: {msg}" if loc else msg)
    return f"{source}: " + "; ".join(problems)


def profile_from_mapping(data: Mapping[str, Any], *, source: str = "profile") -> ProfileModel:
    """Validate an already-parsed profile (``source`` names it in errors)."""
    try:
        return ProfileModel.model_validate(dict(data))
    except ValidationError as e:
        raise ProfileError(_format_errors(source, e)) from None


def _numbers_outside(profile: str, cited: Mapping[str, Citation], overrides: Mapping[str, Any]) -> str | None:
    """The refusal of the first override that is a number outside its clause's range, checked on the raw value."""
    for key in sorted(overrides):
        bounded = cited.get(str(key))
        number = plain_number(str(key), overrides[key])
        if bounded is not None and bounded.bound is not None and not bounded.bound.fixed and number is not None:
            why = bound_refusal(profile, bounded, number, None)
            if why is not None:
                return why
    return None


def _fixed_overridden(profile: str, cited: Mapping[str, Citation], overrides: Mapping[str, Any],
                      data: Mapping[str, Any]) -> str | None:
    """The refusal of the first override of an option its clause fixes, compared as written."""
    for key in sorted(overrides):
        bounded = cited.get(str(key))
        fixed = bounded is not None and bounded.bound is not None and bounded.bound.fixed
        if bounded is not None and fixed and overrides[key] != data.get(key):
            return bound_refusal(profile, bounded, overrides[key], data.get(key))
    return None


def load_profile_model(name_or_path: str | Path, overrides: Mapping[str, Any] | None = None) -> ProfileModel:
    """Read, merge per-table ``overrides`` over the file, and validate; the file's own values and every
    override are held to the bounds its citations write (:func:`bound_refusal`), naming the clause."""
    path = resolve_profile_path(name_or_path)
    try:
        text = path.read_text(encoding="utf-8")
        data = load_toml(text)
    except TomlError as e:  # not TOML, or nested too deeply
        raise ProfileError(f"{path}: {e}") from None
    except OSError as e:
        raise ProfileError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:  # TOML is UTF-8
        raise ProfileError(f"{path}: not UTF-8 (byte {e.start}: {e.object[e.start:e.start + 1]!r})") from None
    data.setdefault("name", path.stem)
    prefix = data.get("clause_prefix", "")
    try:
        cited = parse_citations(text, prefix if isinstance(prefix, str) else "")
    except ValueError as e:
        raise ProfileError(f"{path}: {e}") from None
    citations = {key: c.comment for key, c in cited.items()}
    shipped = profile_from_mapping(data, source=str(path))
    for key, c in cited.items():
        own = getattr(shipped, key, None)
        if c.bound is not None and not c.bound.fixed and (why := bound_refusal(shipped.name, c, own, own,
                                                                                shipped.spots)):
            raise ProfileError(f"{path}: {why}")
    model = shipped
    if overrides:
        for key in overrides:  # the profile's clause no longer sets it: the table's configuration does
            citations[str(key)] = "per-table override"
        merged = dict(data)
        merged.update(overrides)
        for key, by_size in DERIVED_FROM_TABLE_SIZE.items():
            if key in overrides and by_size not in overrides:
                merged.pop(by_size, None)  # the table's own figure, not the profile's one for its size
        source = f"{path} (with overrides {', '.join(sorted(overrides))})"
        number_refused = _numbers_outside(shipped.name, cited, overrides)
        if number_refused is not None:  # a number outside its clause: the clause, not the type's own range
            raise ProfileError(f"{source}: {number_refused}")
        try:
            model = profile_from_mapping(merged, source=source)
        except ProfileError:
            # a clause that fixes the option comes first: the contradiction it would make is beside the point
            fixed = _fixed_overridden(shipped.name, cited, overrides, data)
            if fixed is not None:
                raise ProfileError(f"{source}: {fixed}") from None
            raise
        sized = [k for k, c in cited.items() if c.bound is not None and c.bound.by_spots and k not in overrides]
        for key in [*sorted(overrides), *sized]:  # a by-size bound reads the table's size, which may be overridden
            bounded = cited.get(str(key))
            if bounded is not None:
                why = bound_refusal(shipped.name, bounded, getattr(model, bounded.option),
                                    getattr(shipped, bounded.option), model.spots)
                if why is not None:
                    raise ProfileError(f"{source}: {why}")
    model._citations = citations
    model._cited = cited
    return model


def load_rules(name_or_path: str | Path, overrides: Mapping[str, Any] | None = None) -> Rules:
    """The engine's :class:`Rules` for a profile name or path, with per-table overrides."""
    return load_profile_model(name_or_path, overrides).to_rules()
