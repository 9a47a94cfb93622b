# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""join_workers' options as the action plugin reads them (controller code: ansible-test runs it as such)."""

import datetime

import pytest

from ansible_collections.openshift_agent.day2.plugins.action.join_workers import join_hosts
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import InputError

HOST = {"name": "worker-0", "address": "127.0.111.20"}


def params(**installed_after):
    return {"hosts": [dict(HOST)], "nodes": [], "installed_after": installed_after}


def test_installed_after_is_parsed_per_host_and_checked():
    (host,) = join_hosts(params(**{"Worker-0": "2026-11-30T20:00:00Z"}))
    assert host["installed_after"] == datetime.datetime(2026, 11, 30, 20, 0, tzinfo=datetime.timezone.utc)
    assert join_hosts(params())[0]["installed_after"] is None
    with pytest.raises(InputError, match=r"installed_after\[worker-0\]: 'yesterday' is not an RFC 3339"):
        join_hosts(params(**{"worker-0": "yesterday"}))
    with pytest.raises(InputError, match="installed_after names hosts that are not followed: worker-9"):
        join_hosts(params(**{"worker-9": "2026-11-30T20:00:00Z"}))
