# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)


import datetime

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import (
    Deadline,
    format_rfc3339,
    parse_duration,
    parse_rfc3339,
)

UTC = datetime.timezone.utc


@pytest.mark.parametrize(
    "value, expected",
    [
        ("2030-01-02T03:04:05Z", datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2030-01-02T03:04:05.5+02:00", datetime.datetime(2030, 1, 2, 1, 4, 5, 500000, tzinfo=UTC)),
        ("2030-01-02t03:04:05-01:30", datetime.datetime(2030, 1, 2, 4, 34, 5, tzinfo=UTC)),
        ("2030-01-02T03:04:05.123456789Z", datetime.datetime(2030, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)),
        # Kubernetes and Go always write an offset; a bare time is read as UTC rather than refused.
        ("2030-01-02T03:04:05", datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ],
)
def test_parse_rfc3339(value, expected):
    assert parse_rfc3339(value) == expected


@pytest.mark.parametrize("value", ["2030-01-02", "2030-13-02T03:04:05Z", "yesterday"])
def test_parse_rfc3339_rejects(value):
    with pytest.raises(ValueError):
        parse_rfc3339(value)


@pytest.mark.parametrize("value", ["", None])
def test_parse_rfc3339_empty_is_unknown(value):
    assert parse_rfc3339(value) is None


def test_format_rfc3339_round_trips():
    moment = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert parse_rfc3339(format_rfc3339(moment)) == moment


@pytest.mark.parametrize(
    "value, seconds", [(90, 90), ("90", 90), ("90s", 90), ("15m", 900), ("24h", 86400), ("1d12h", 129600)]
)
def test_parse_duration(value, seconds):
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value", ["", "soon", "-5", -5, "1x"])
def test_parse_duration_rejects(value):
    with pytest.raises(ValueError):
        parse_duration(value)


def test_deadline_never_sleeps_past_its_end():
    now = [100.0]
    slept = []
    deadline = Deadline(10, clock=lambda: now[0], sleeper=slept.append)
    now[0] = 107.0
    deadline.sleep(5)
    assert slept == [3.0] and not deadline.expired()
    now[0] = 110.0
    assert deadline.expired() and deadline.remaining() == 0.0 and deadline.elapsed() == 10.0
