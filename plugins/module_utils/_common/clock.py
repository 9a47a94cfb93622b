# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Time helpers shared by the waiting modules: durations, deadlines, RFC 3339."""

from __future__ import annotations

import datetime
import re
import time
from typing import Any, Callable

_DURATION = re.compile(r"^\s*(?:(\d+)d)?\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s?)?\s*$")


def parse_duration(value: Any) -> int:
    """Seconds in ``value``: an int, or text like ``90``, ``90s``, ``15m``, ``24h``, ``1d12h``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"a duration cannot be negative: {value!r}")
        return int(value)
    match = _DURATION.match(str(value or ""))
    if not match or not any(match.groups()):
        raise ValueError(f"{value!r} is not a duration; use seconds or a form like 90s, 15m, 24h, 1d12h")
    days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def utcnow() -> datetime.datetime:
    """The current time, aware, in UTC."""
    return datetime.datetime.now(datetime.timezone.utc)


def parse_rfc3339(text: str | None) -> datetime.datetime | None:
    """Parse an RFC 3339 timestamp (``Z`` or an offset, optional fraction) into an aware datetime."""
    if not text:
        return None
    match = re.match(r"^(\d{4}-\d\d-\d\d)[Tt ](\d\d:\d\d:\d\d)(?:\.(\d+))?([Zz]|[+-]\d\d:?\d\d)?$", text.strip())
    if not match:
        raise ValueError(f"{text!r} is not an RFC 3339 timestamp")
    day, clock, fraction, offset = match.groups()
    # %f takes 1 to 6 digits; %z takes Z and +hh:mm (Python 3.7+).
    stamp = f"{day}T{clock}.{(fraction or '0')[:6]}{(offset or 'Z').upper()}"
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f%z")


def as_utc(value: Any) -> datetime.datetime | None:
    """An aware UTC datetime from a datetime (naive means UTC) or an RFC 3339 text; None for None or ""."""
    moment = value if isinstance(value, datetime.datetime) else parse_rfc3339(None if value is None else str(value))
    if moment is not None and moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.astimezone(datetime.timezone.utc) if moment is not None else None


def format_rfc3339(moment: datetime.datetime) -> str:
    """``moment`` as RFC 3339 text in UTC, to the second (``2024-05-01T12:00:00Z``)."""
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Deadline:
    """A monotonic deadline; ``sleep`` never sleeps past it."""

    def __init__(
        self, seconds: float, clock: Callable[[], float] = time.monotonic, sleeper: Callable[[float], Any] = time.sleep
    ) -> None:
        self._clock, self._sleep, self.started = clock, sleeper, clock()
        self.expires = self.started + seconds

    def remaining(self) -> float:
        return max(0.0, self.expires - self._clock())

    def expired(self) -> bool:
        return self._clock() >= self.expires

    def elapsed(self) -> float:
        return self._clock() - self.started

    def sleep(self, seconds: float) -> None:
        self._sleep(max(0.0, min(seconds, self.remaining())))
