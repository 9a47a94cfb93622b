# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""One run of the agent_wait module: check the options, choose the token, follow the hosts.

``run(module)`` returns the module result, or raises a ``Day2Error`` whose ``result`` is the partial result
(every host's state so far and the token's description, never its value).
"""

from __future__ import annotations

from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import parse_duration
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error, InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import connect
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.module import hide
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.client import (
    AgentWatch,
    agent_url,
    bracketed,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.progress import HostProgress
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.token import HEADERS, AgentToken, choose

# The choices of the option first_header; ``auto`` lets the token and the cluster's release decide.
FIRST_HEADER_CHOICES = ("auto", *HEADERS)


def check_inputs(params: dict[str, Any]) -> int:
    """The validation grace in seconds; raise InputError for what the argument spec cannot check."""
    if not params["hosts"]:
        raise InputError("hosts is empty: give at least one {name, address}")
    names = [h["name"] for h in params["hosts"]]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputError("hosts names must be unique; repeated: %s" % ", ".join(duplicates))
    for option in ("wait_sleep", "request_timeout"):
        if params[option] < 1:
            raise InputError("%s must be at least 1 second, got %s" % (option, params[option]))
    if params["wait_timeout"] < 0:
        raise InputError("wait_timeout cannot be negative, got %s" % params["wait_timeout"])
    try:
        return parse_duration(params["validation_grace"])
    except ValueError as error:
        raise InputError("validation_grace: %s" % error)


def choose_token(module: Any, params: dict[str, Any]) -> tuple[AgentToken, str, dict[str, Any], list[str]]:
    """``(AgentToken, first header, token_info, warnings)``: the given token, else the cluster's (two GETs).

    Reading the cluster needs the kubernetes library; ``connect`` turns an unreachable API server or rejected
    credentials into an ApiAccessError, and ``choose`` names what the Secret lacks in an AgentTokenError.
    """
    if params["token"]:
        return choose(params["token"])
    module.requires("kubernetes")
    return choose(reader=connect(module)[1])


def predict(params: dict[str, Any]) -> dict[str, Any]:
    """Check mode: which hosts would be followed, at which address, until when. Nothing is asked of anyone.

    Neither the agents (every request to them carries the token) nor the cluster are asked: the token is read
    when the run happens, from the Secret the image step creates or refreshes, which may not exist yet.
    """
    until, port = params["until"], params["agent_port"]
    progress = [HostProgress(h["name"], h["address"], port, h.get("mac_address")) for h in params["hosts"]]
    header = None if params["first_header"] == "auto" else params["first_header"]
    return {
        "changed": False,
        "hosts": {p.name: p.result(until) for p in progress},
        "would_follow": [
            {
                "name": p.name,
                "address": p.address,
                "agent_url": agent_url(p.address, port),
                "kubelet": "%s:%d" % (bracketed(p.address), params["kubelet_port"]),
                "until": until,
            }
            for p in progress
        ],
        "duration": 0.0,
        "polls": 0,
        "requests": 0,
        "auth_header": None,
        "token_info": dict(
            dict.fromkeys(("key", "persona", "expires", "cluster_version")),
            source="option" if params["token"] else "secret",
            first_header=header,
        ),
    }


def run(module: Any) -> dict[str, Any]:
    """Follow ``module.params["hosts"]`` until ``until`` (or one snapshot); the module result."""
    params = module.params
    grace = check_inputs(params)
    if module.check_mode:
        return predict(params)
    token, first_header, token_info, warnings = choose_token(module, params)
    # A token read from the cluster is as secret as a given one: keep it out of every output.
    hide(module, token.value)
    if params["first_header"] != "auto":
        first_header = token_info["first_header"] = params["first_header"]
    watch = AgentWatch(
        params["hosts"],
        token,
        agent_port=params["agent_port"],
        kubelet_port=params["kubelet_port"],
        request_timeout=params["request_timeout"],
        first_header=first_header,
    )
    failure, result = watch.run(
        params["until"],
        wait=params["wait"],
        wait_timeout=params["wait_timeout"],
        wait_sleep=params["wait_sleep"],
        grace_seconds=grace,
    )
    result.update(changed=False, token_info=token_info, warnings=warnings)
    if failure:
        raise Day2Error(failure, result)
    return result
