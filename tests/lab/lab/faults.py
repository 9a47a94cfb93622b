"""The fault switches, all in one table: API faults here, host and node-joiner faults register the same way.

A fault is switched on with ``labctl fault --state DIR NAME=VALUE`` (or ``POST /faults`` on the control
API with ``{"NAME": VALUE}``) and off with ``--clear`` / ``DELETE /faults``. Components read them with
``ctx.faults.get(NAME)`` at the moment they would misbehave, so a switch takes effect at once.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from aiohttp import web

RESET = web.RequestKey("reset", bool)  # set on a request whose connection a fault dropped


@dataclass(frozen=True)
class FaultSpec:
    name: str
    parse: object  # callable(str) -> value; raises ValueError with a readable message
    help: str


@dataclass(frozen=True)
class DenyRule:
    verb: str  # "*" matches every verb
    resource: str  # "plural" or "plural/subresource"; "*" matches every resource
    everyone: bool  # True: admin too (written "all:VERB:RESOURCE")

    def matches(self, verb: str, resource: str, is_admin: bool) -> bool:
        if is_admin and not self.everyone:
            return False
        return self.verb in ("*", verb) and self.resource in ("*", resource)


def parse_rate(value: str) -> float:
    rate = float(value)
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"a rate is between 0 and 1, got {value}")
    return rate


def parse_seconds(value: str) -> float:
    seconds = float(value)
    if seconds < 0:
        raise ValueError(f"seconds cannot be negative, got {value}")
    return seconds


def parse_deny(value: str) -> tuple:
    """``VERB:RESOURCE[,...]``; a rule prefixed ``all:`` also applies to the admin identity."""
    rules = []
    for entry in (part.strip() for part in value.split(",")):
        if not entry:
            continue
        everyone = entry.startswith("all:")
        parts = entry[4:].split(":") if everyone else entry.split(":")
        if len(parts) != 2 or not all(parts):
            raise ValueError(f"deny entries look like VERB:RESOURCE or all:VERB:RESOURCE, got {entry!r}")
        rules.append(DenyRule(parts[0], parts[1], everyone))
    return tuple(rules)


FAULTS: dict = {}


def register_fault(name: str, parse, help_text: str) -> None:
    FAULTS[name] = FaultSpec(name, parse, help_text)


register_fault("api_error_rate", parse_rate, "fraction of API requests answered 500 or 503")
register_fault("api_reset_rate", parse_rate, "fraction of API requests whose connection is reset")
register_fault(
    "api_throttle_rate", parse_rate, "fraction of API requests answered 429 TooManyRequests with Retry-After: 1"
)
register_fault("api_delay", parse_seconds, "seconds every API request waits before it is handled")
register_fault("watch_cut_seconds", parse_seconds, "watch streams are cut (connection reset) after this long")
register_fault(
    "deny", parse_deny, "VERB:RESOURCE[,..] answered 403 for non-admin identities; all:VERB:RESOURCE for admin too"
)


class Faults:
    """The faults switched on right now: name -> parsed value (and the text it was given as)."""

    def __init__(self, rng: random.Random | None = None):
        self._values: dict = {}
        self._raw: dict = {}
        self.random = rng or random.Random()

    def set(self, name: str, value) -> None:
        spec = FAULTS.get(name)
        if spec is None:
            raise ValueError(f"unknown fault {name!r}; known: {', '.join(sorted(FAULTS))}")
        text = "true" if value is None else str(value)
        try:
            self._values[name] = spec.parse(text)
        except ValueError as exc:
            raise ValueError(f"fault {name}={text!r} refused: {exc}; {name} is {spec.help}") from None
        self._raw[name] = text

    def clear(self, name: str | None = None) -> None:
        if name is None:
            self._values.clear()
            self._raw.clear()
        else:
            self._values.pop(name, None)
            self._raw.pop(name, None)

    def get(self, name: str, default=None):
        return self._values.get(name, default)

    def snapshot(self) -> dict:
        return dict(self._raw)

    def roll(self, name: str) -> bool:
        """True with the probability the rate fault ``name`` is set to."""
        rate = self._values.get(name, 0.0)
        return rate > 0 and self.random.random() < rate

    def denies(self, verb: str, resource: str, is_admin: bool) -> bool:
        return any(rule.matches(verb, resource, is_admin) for rule in self._values.get("deny", ()))


def reset_connection(request, response):
    """Drop the TCP connection (a fault); aiohttp then quietly fails to write ``response``."""
    request[RESET] = True
    if request.transport is not None:
        request.transport.abort()
    return response
