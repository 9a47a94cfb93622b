# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The check step: the cluster, the cluster meant, and every new worker against itself, the others and the
cluster, before anything is written; the output is the host records every later step takes.

Input: each host's variables, sorted (``_check.variables``; inventory and agent-config hosts alike), the boot
settings and the day-1 facts of ``day1_facts``. Every problem of every host is reported at once, each naming the
host, the field, the value and the fix; nothing is returned when there is one.

A host's record (``_image.hosts.HOST_OPTIONS``) is its checked keys (never the BMC password) and what is worked out
here: ``address`` (where its install is followed: ``ip``, else ``ipv6``, else the first static address of
``network_config``), ``addresses`` (that one first, then its other static addresses: a serving certificate may
name any), ``state`` (``new``; ``half-joined`` when an earlier run stopped while the host joined, so it is not
booted again; ``replace`` for the host replace_worker.yml rebuilds), ``labels``/``taints`` (the play's with the
host's over them), ``source`` and ``bmc`` (the Redfish endpoint, for a Redfish boot).

The cluster meant: ``day2_cluster_name``, ``day2_base_domain`` and ``day2_openshift_version``, when set, against the
cluster the login reaches: a wrong kubeconfig would add the workers to another cluster. The name and base domain
are the facts' (``api.<name>.<base domain>``, as node-joiner derives them); ``x.y`` matches every ``x.y.z``.

A worker of another architecture than the control plane's (x86_64 and aarch64 may be mixed; s390x and ppc64le
never, which ``_image.hosts`` reports) needs a multi-architecture release payload: a single-architecture one holds
the images of one architecture only, so node-joiner finds no base ISO for the other one and, were the host booted
anyway, none of the cluster's images would run on it. ClusterVersion says which payload runs in
``status.desired.architecture``: ``Multi`` for a multi-architecture payload, empty otherwise (openshift/api
config/v1/types_cluster_version.go@7395174fe74168e53ed58dfda8c170fbedd6d61d, ``ClusterVersionArchitecture``).
node-joiner itself has no such check and fails late, after its namespace and pod exist (openshift/installer
pkg/asset/agent/image/baseiso.go@41ac01a1979cc999b02ef742ae8ead199d34c6f8); refusing here keeps the cluster
untouched.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from typing import Any

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.openshift_agent.day2.plugins.module_utils._boot.redfish import check_bmc, check_boot_settings
from ansible_collections.openshift_agent.day2.plugins.module_utils._check import labels
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.addresses import ClusterAddresses
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.agent_config import in_file_words
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.variables import PLAY, HostVariables
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import normalize_mac, proxy_for
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.health import is_control_plane
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import hosts as definition
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.nodes_config import check_hosts

VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")
Json = dict[str, Any]
MULTI = "Multi"
MIXABLE = ("x86_64", "aarch64")  # the architectures that may join a cluster of the other one (Multi payload)


def refuse_cluster(cluster: dict[str, Any], require_healthy: bool) -> None:
    """A cluster node-joiner cannot add workers to, one being updated (the facts' ``unsafe_reasons``: empty when
    day1_facts had ``allow_upgrading``), or (unless allowed) an unhealthy one: refused first."""
    name, health = cluster.get("name"), cluster.get("health") or {}
    if not cluster.get("supported", True):
        reasons = "; ".join(cluster.get("unsupported_reasons") or [])
        raise Day2Error(f"Cluster {name} cannot take day-2 workers: {reasons}")
    if cluster.get("unsafe_reasons"):
        raise Day2Error(f"Cluster {name} is being updated: {'; '.join(cluster['unsafe_reasons'])}.")
    if require_healthy and not health.get("healthy", True):
        why, fix = "; ".join(health.get("problems") or []), "set day2_require_healthy=false to go on anyway"
        raise Day2Error(f"Cluster {name} is not healthy: {why}. Fix it first, or {fix}.")


def check_identity(cluster: dict[str, Any], play: dict[str, Any], problems: Problems) -> None:
    """Each of day2_cluster_name, day2_base_domain, day2_openshift_version that is set must be the cluster's."""
    where = "the cluster the login reaches" + (f" ({cluster['api_url']})" if cluster.get("api_url") else "")
    fix = "point the login (kubeconfig, context, k8s_host) at the cluster you meant, or correct day2_"
    for key, fact, what in (("cluster_name", "name", "name"), ("base_domain", "base_domain", "base domain")):
        wanted, actual = str(play.get(key) or "").strip(), cluster.get(fact)
        if wanted and wanted.rstrip(".").lower() != str(actual or "").lower():
            shown = f'"{actual}"' if actual else "unknown"
            problems.add(PLAY, "day2_" + key, play[key], f"is not {where}: its {what} is {shown}", fix + key)
    version, running = play.get("openshift_version"), str(cluster.get("version") or "")
    text = str(version).strip()
    if isinstance(version, float):
        what = "is a number, not a version (YAML reads an unquoted 4.20 as 4.2)"
        fix = 'quote it: day2_openshift_version: "4.20"'
    elif version is None or not text:
        return
    elif not VERSION.match(text):
        what, fix = "is not a version x.y or x.y.z", 'write it as "4.21" or "4.21.3"'
    elif not re.match(re.escape(text) + "(?![0-9])", running):  # (x.y matches every x.y.z)
        what = f"is not the version of {where}: it runs {running or 'an unknown version'}"
        fix += "openshift_version"
    else:
        return
    problems.add(PLAY, "day2_openshift_version", version, what, fix)


def check_payload(checked: list[definition.CheckedHost], cluster: dict[str, Any], problems: Problems) -> None:
    """A host whose architecture is not the control plane's, on a single-architecture payload. Facts without
    ``release_architecture`` (an older day1_facts) are not guessed."""
    control_plane = definition.normalize_architecture(cluster.get("rpm_architecture") or cluster.get("architecture"))
    if control_plane not in MIXABLE or cluster.get("release_architecture", MULTI) == MULTI:
        return
    release = cluster.get("release_image") or "(unknown)"
    for host in (host for host in checked if host.architecture in MIXABLE and host.architecture != control_plane):
        what = (
            f"is not the control plane's architecture ({control_plane}), and the cluster's release payload {release} "
            f"is single-architecture (ClusterVersion status.desired.architecture is not {MULTI}): it holds no "
            f"{host.architecture} images, so node-joiner has no {host.architecture} ISO to build and the node could "
            "not run the cluster's pods"
        )
        fix = f"use {control_plane} hardware for this worker, or first move the cluster to the multi-architecture "
        fix += "payload (oc adm upgrade --to-multi-arch) and run again"
        problems.add(host.label, "cpu_architecture", host.architecture, what, fix)


def _settings(host: HostVariables, problems: Problems) -> dict[str, Any] | None:
    """The host's keys checked and converted as the modules' argument specs do (``"24"`` becomes 24); its
    variables' problems (``_check.variables``) reported."""
    problems.items.extend(host.problems)
    settings = {key: value for key, value in host.settings.items() if value is not None and value != ""}
    validated = ArgumentSpecValidator(definition.INPUT_OPTIONS).validate(dict(settings, name=host.name))
    for message in validated.error_messages:  # (the errors object is true even when it holds none)
        # ansible-core's messages name the key in quotes; which one is found from the settings given.
        key = next((k for k in sorted(settings, key=len, reverse=True) if f"'{k}'" in message), "(host)")
        shown = "(not shown)" if definition.INPUT_OPTIONS.get(key, {}).get("no_log") else settings.get(key)
        fix = "give it in the documented type (see the host keys of the user guide)"
        problems.add(host.name, key, shown, f"cannot be used: {message}", fix)
    checked = validated.validated_parameters
    return None if validated.error_messages else {key: value for key, value in checked.items() if value is not None}


def _state(name: str, addresses: list[str], node: dict[str, Any] | None, replace_node: str) -> str:
    """``joined``: a Ready worker Node of that name has the host's address (a re-run). ``half-joined``: a worker
    Node of that name, with the host's address (or none yet), not Ready and never Ready since it registered
    (``joining`` when the facts tell): an earlier run stopped while the host joined; the join step takes it from
    there. ``existing``: any other Node of that name, refused."""
    if name == replace_node or not node:
        return "replace" if name == replace_node else "new"
    ips = set(node.get("internal_ips") or [])
    ours = set(addresses) & ips
    if is_control_plane(node) or (node.get("ready") and not ours):
        return "existing"
    if node.get("ready"):
        return "joined"
    return "half-joined" if node.get("joining") is not False and (ours or not ips) else "existing"


def _no_hosts(group: str, groups: list[str] | None, play: Json, limit: str, left_out: list[str]) -> tuple[str, str]:
    """(what, fix) when no new worker is left: a limit that selects none, a misspelt or empty group, files of none."""
    if limit:
        what = f"selects no new worker of group {group}" + (f" (it holds {', '.join(left_out)})" if left_out else "")
        return what, f"limit the run to hosts of group {group} (or to the group itself), or run it without --limit"
    close = difflib.get_close_matches(group, [name for name in groups or [] if name != group], n=1)
    files = [play[key] for key in ("agent_config", "nodes_config") if play.get(key)]
    if files:
        what = f"has no hosts, and {' nor '.join(files)} names no new worker"
        return what, "list the new workers in the file's hosts or in the group"
    what = "has no hosts" if group in (groups or [group]) else "is not a group of the inventory"
    fix = "put the new workers in the group (see playbooks/inventory.example.yml)"
    return what, f'did you mean "{close[0]}"? Set day2_hosts_group to it, or {fix}' if close else fix


def _serving(serve: Json, records: list[Json]) -> str:
    """The plan's words for an ISO this run serves (iso_serve): where it listens, over which scheme, what it holds."""
    bmcs = {str(record["bmc"]["bmc_base_url"]).rsplit("://", maxsplit=1)[-1] for record in records if record.get("bmc")}
    where = serve.get("address") or f"this controller's address that routes to the BMCs ({', '.join(sorted(bmcs))})"
    scheme = "HTTPS" if serve.get("tls_cert") else "plain HTTP (set day2_serve_tls_cert for HTTPS)"
    return (
        f"ISO: served by this controller over {scheme}, listening on {where} only (day2_serve_address), at a secret "
        "path. It holds the pull secret: only the BMC network should reach that address"
    )


def check_workers(
    hosts: list[HostVariables],
    cluster: dict[str, Any],
    replace_node: str = "",
    group: str = "new_workers",
    boot_method: str = "manual",
    iso_url: str = "",
    serve_iso: bool | None = None,
    require_healthy: bool = False,
    groups: list[str] | None = None,
    agent_hosts: list[HostVariables] | None = None,
    play: dict[str, Any] | None = None,
    problems: Problems | None = None,
    nodes_hosts: list[HostVariables] | None = None,
    limit: str = "",
    left_out: list[str] | None = None,
    serve: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Check the cluster and the hosts; return the host records and the plan. ``serve_iso``: whether the boot step
    serves the ISO (None: with Redfish when there is no ``iso_url``), ``serve``: its ``address`` and ``tls_cert``.
    ``groups``: the inventory's group names (a misspelt group is named). ``agent_hosts``, ``nodes_hosts``: the hosts
    of a day-1 agent-config and of a nodes-config (``_check.agent_config``). ``play``: the play's ``cluster_name``,
    ``base_domain``, ``openshift_version`` (the cluster meant), ``node_labels`` and ``node_taints`` (every host's,
    under its own), ``agent_config`` and ``nodes_config`` (their paths). ``limit``: the run's ``--limit``, which
    selected ``hosts`` of the group and left out ``left_out`` (the files' hosts too: a limit selects inventory hosts).
    ``problems``: those found before (the settings'), reported with these.

    Raises Day2Error for a cluster that cannot take workers, InventoryError with every problem found.
    """
    refuse_cluster(cluster, require_healthy)
    problems, play = problems or Problems(), play or {}
    check_identity(cluster, play, problems)
    play_labels = labels.check_labels(play.get("node_labels"), problems.for_host(PLAY), "day2_node_labels")
    play_taints = labels.check_taints(play.get("node_taints"), problems.for_host(PLAY), "day2_node_taints")
    files = {"agent_config": [] if limit else agent_hosts or [], "nodes_config": [] if limit else nodes_hosts or []}
    left_out = [*(left_out or []), *(host.name for host in [*(agent_hosts or []), *(nodes_hosts or [])] if limit)]
    hosts, clashes = _defined_once(hosts, [*files["agent_config"], *files["nodes_config"]], group, problems)
    from_files = {key: sorted(host.name for host in found if host in hosts) for key, found in files.items()}
    if not hosts:
        what, fix = _no_hosts(group, groups, play, limit, left_out)
        problems.add("(inventory)", "limit" if limit else "group", limit or group, what, fix)
        problems.raise_any()
    if serve_iso is None:  # day2_serve_iso unset: this run serves the ISO when it boots through Redfish with no URL
        serve_iso = boot_method == "redfish" and not iso_url
    redfish = check_boot_settings(boot_method, iso_url, problems, serve_iso)
    ordered = sorted(hosts, key=lambda host: host.name)
    settings_of = {host.name: settings for host in ordered if (settings := _settings(host, problems)) is not None}
    architecture = cluster.get("rpm_architecture") or cluster.get("architecture") or "x86_64"
    loopback, platform = definition.loopback_allowed(), cluster.get("platform")
    checked = check_hosts(list(settings_of.values()), architecture, loopback, platform, problems)
    # A MAC of a file's host that another host has is named once, as the same host defined twice (_defined_once).
    named = [(p["field"] == "interfaces" or (p["host"], str(p["value"])) not in clashes, p) for p in problems.items]
    problems.items = [problem for keep, problem in named if keep]
    check_payload(checked, cluster, problems)
    checked_of = {host.hostname: host for host in checked}
    cluster_addresses = ClusterAddresses(cluster, replace_node)
    nodes = {node.get("name"): node for node in cluster.get("nodes") or []}
    sources = {host.name: host.source for host in hosts if host.source}
    records = []
    for name, settings in settings_of.items():
        record = _record(name, settings, checked_of.get(name), nodes, replace_node, sources.get(name), problems)
        records.append(record)
        marks = (settings.get("node_labels"), settings.get("node_taints"), play_labels, play_taints)
        record["labels"], record["taints"] = labels.merged_marks(*marks, problems.for_host(name))
        if name in checked_of and record["state"] != "joined":
            cluster_addresses.check(checked_of[name], problems)
        if redfish and record["state"] not in ("joined", "half-joined"):  # (half-joined: installed, not booted again)
            record["bmc"] = check_bmc(name, settings_of[name], problems) or None
    if problems.items:
        if not loopback and any(network.is_loopback() for network in cluster_addresses.networks):
            problems.items = [definition.lab_hint(problem) for problem in problems.items]
        problems.items = [in_file_words(p, sources[p["host"]]) if p["host"] in sources else p for p in problems.items]
        problems.raise_any()
    ignored = {host.name: host.foreign for host in hosts if host.foreign}
    plan = _plan(records, ignored, cluster, boot_method, dict(play, from_files=from_files))
    plan["summary"] += [f"Limit {limit}: left out {', '.join(left_out) or 'none'}"] if limit else []
    plan["summary"] += [_serving(serve or {}, records)] if redfish and serve_iso else []
    plan["boot"] = {"method": boot_method, "iso_url": iso_url, "serve_iso": bool(redfish and serve_iso)}
    return plan


def _record(
    name: str, settings: Json, checked: Any, nodes: Json, replace_node: str, source: str | None, problems: Problems
) -> Json:
    """A host's record: its checked keys (never the BMC password), its addresses and its state, or its problems."""
    report = problems.for_host(name)
    addresses = [settings[key] for key in ("ip", "ipv6") if settings.get(key)]
    statics = [str(owned.address) for owned in (checked.addresses if checked else [])]
    addresses += [address for address in statics if address not in addresses]
    state, node = _state(name, addresses, nodes.get(name), replace_node), nodes.get(name) or {}
    if not addresses and source:  # a host of a file: the file has no ip key
        fix = "give the host a static address in networkConfig, or define it in the inventory instead (a DHCP "
        fix += "host: mac_address and ip, the address its DHCP reservation gives)"
        report("networkConfig", None, "has no static address, so there is no address to follow the install at", fix)
    elif not addresses:
        raw = " and network_config has no static address" if "network_config" in settings else ""
        fix = "set ip to the address the host gets: the one its DHCP reservation gives (mac_address and ip are all "
        fix += "a DHCP host needs), or its static address with prefix_length"
        report("ip", None, f"is not set{raw}: there is no address the install is followed at", fix)
    if state == "existing" and is_control_plane(node):
        what = f"is a control-plane node of the cluster (roles {', '.join(node.get('roles') or [])})"
        report("name", name, what, "node-joiner adds workers only: take it out of the new workers' group")
    elif state == "existing":
        fix = "to replace a failed worker run playbooks/replace_worker.yml; otherwise rename the host"
        report("name", name, "is already a Node of the cluster (not Ready, or with another address)", fix)
    record = {key: value for key, value in settings.items() if key != "bmc_password"}
    record.update(bmc=None, state=state, address=(addresses or [None])[0], addresses=addresses)
    return dict(record, source=source or "inventory")


def _plan(records: list[Json], ignored: Json, cluster: Json, boot_method: str, play: Json) -> Json:
    """workers_check's result: the records of the hosts to add (``hosts``) and of those that joined already
    (``joined``), the variables left alone, and the plan's summary (the lines the preflight step prints)."""
    hosts = [record for record in records if record["state"] != "joined"]
    joined = [record for record in records if record["state"] == "joined"]
    marked = [(record["name"], {key: record[key] for key in ("labels", "taints") if record[key]}) for record in records]
    marks = [dict(name=name, **found) for name, found in marked if found]
    new = ", ".join(r["name"] + ("" if r["state"] == "new" else f" ({r['state']})") for r in hosts)
    facts = [cluster.get(key) for key in ("name", "base_domain", "version", "platform", "architecture")]
    apps = f", apps {cluster['ingress_domain']}" if cluster.get("ingress_domain") else ""
    summary = [
        "Cluster %s.%s %s (%s, %s)%s" % (*facts, apps),
        f"New workers: {new} (boot: {boot_method})",
        *(
            f"Of them from the {what} {play.get(key) or '(none given)'}: {', '.join(play['from_files'][key]) or 'none'}"
            for what, key in (("day-1 agent-config", "agent_config"), ("nodes-config", "nodes_config"))
        ),
        f"Labels and taints: {json.dumps(marks) if marks else 'none'}",
        f"Already joined: {', '.join(record['name'] for record in joined) or 'none'}",
        f"Variables left alone (not host keys of this collection): {json.dumps(ignored) if ignored else 'none'}",
        f"Cluster warnings: {'; '.join(cluster.get('warnings') or []) or 'none'}",
    ]
    files = {key + "_hosts": names for key, names in play["from_files"].items()}
    return dict({"hosts": hosts, "joined": joined, "ignored": ignored, "summary": summary}, **files)


FOLLOWED = {
    "auto": "from this controller where it reaches a host (its agent and kubelet), else from inside the cluster",
    "controller": "from this controller only (each host's agent on port 8090 and kubelet on 10250)",
    "cluster": "from inside the cluster (node-joiner monitor-add-nodes): only the API server is reached from here",
}
PROXY_VARIABLES = ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY")


def connection_lines(cluster: Json, hosts: list[Json], follow_from: str) -> list[str]:
    """The plan's lines on where each connection of the run goes: where the installs are followed from, and with an
    environment proxy set, which connections go through it (``net.proxy_for``, the one policy every connection
    follows) and which go around it."""
    lines = [f"Installs followed {FOLLOWED[follow_from]} (day2_follow_from {follow_from})"]
    if not any(os.environ.get(name) for name in PROXY_VARIABLES):
        return lines
    urls = {"the API server": str(cluster.get("server_url") or cluster.get("api_url") or "")}
    urls.update((f"the BMC of {h['name']}", h["bmc"]["bmc_base_url"]) for h in hosts if h.get("bmc"))
    if follow_from != "cluster":
        urls.update((f"the agent of {h['name']}", f"http://{h['address']}:8090/") for h in hosts if h.get("address"))
    ways: dict[str, list[str]] = {}
    for what, url in urls.items():
        ways.setdefault(f"through {proxy_for(url)}" if proxy_for(url) else "directly", []).append(what)
    said = "; ".join(f"{way}: {', '.join(whats)}" for way, whats in ways.items())
    return [*lines, f"Proxies (HTTPS_PROXY, HTTP_PROXY, NO_PROXY): {said}. NO_PROXY decides (CIDRs, domains allowed)"]


def _macs(settings: dict[str, Any]) -> list[str]:
    """The MACs a host's variables give (mac_address and interfaces), those that are MACs."""
    nics = [nic for nic in settings.get("interfaces") or [] if isinstance(nic, dict)]
    listed = [settings.get("mac_address"), *(nic.get("mac_address") or nic.get("macAddress") for nic in nics)]
    return [mac for mac in map(normalize_mac, listed) if mac]


def _defined_once(hosts: list[HostVariables], files: list[HostVariables], group: str, problems: Problems) -> tuple:
    """The inventory's hosts and the files', each name once: a file's host of a name defined already (in the
    inventory or the other file) is refused and left out; one with a MAC of another host is refused and still
    checked, so its other problems are named in the same run. Also the (host, MAC) of those MAC clashes,
    which the hosts' own uniqueness check would name again. (The inventory's own duplicates are the host checks'.)"""
    owners: dict[tuple[str, str], tuple[str, str]] = {}
    kept, clashes = [], set()
    for host in [*hosts, *files]:
        where = host.source or f"inventory group {group}"
        if host.source and ("name", host.name.lower()) in owners:
            place = owners["name", host.name.lower()][1]
            what = f"is defined twice: in {place} and in {where}"
            problems.add(host.name, "hostname", host.name, what, "keep the host in one of the two")
            continue
        kept.append(host)
        owners.setdefault(("name", host.name.lower()), (host.name, where))
        for mac in _macs(host.settings):
            owner, place = owners.setdefault(("MAC", mac), (host.name, where))
            if owner != host.name and host.source:
                what = f"is the MAC of {owner}: in {place} and in {where} (the same host defined twice)"
                problems.add(host.name, "interfaces", mac, what, "keep the host in one of the two")
                clashes |= {(host.name, mac), (owner, mac)}
    return kept, clashes
