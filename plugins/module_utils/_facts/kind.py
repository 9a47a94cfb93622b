# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The cluster kind -- ``standard``, ``appliance`` or ``registry-less`` -- and its internal registry endpoints.

Pure functions over the mirrors day1_facts already read (ImageDigestMirrorSets and ImageContentSourcePolicies):
no request of their own. Upstream sources (``repo path@commit``):

* Appliance: every node installed from the appliance disk image runs a registry on port 22625 named
  ``registry.appliance.openshift.com``, and that name points at 127.0.0.1 in the node's /etc/hosts --
  openshift/appliance data/scripts/bin/setup-local-registry.sh.template@16a46b8a10ad178c9194484d5362474ddb54924c.
  The cluster's mirror sets send the release repositories there. Older appliance builds named it
  ``registry.appliance.com`` (ports 5000/5001) --
  openshift/appliance pkg/asset/registry/registriesconf.go@468aae7ac73995be7ba36ef3103c3f7c55c4857f.
* Registry-less (OVE): the control-plane nodes serve the release payload; an ImageDigestMirrorSet through the
  ``api-int`` name makes the cluster pull from them, and a host added later must reach that port from outside the
  cluster (api-int load balancer and firewalls) -- openshift/enhancements
  enhancements/agent-installer/simplified-registry-less-cluster-operations.md@019ed2a8ce2dc4ddf8ef1f473adbeb2a15823b1b;
  the port is 22625 (``api-int.<cluster>.<domain>:22625/<repository>`` mirrors, same appliance registries test).
  Its InternalReleaseImage (openshift/api
  machineconfiguration/v1/types_internalreleaseimage.go@5b7e429c2a57f0dd7c742e2bf5c6eff57db08abb) is not read:
  the mirrors say the same, without a feature-gated API or one more request.
* The configuration-only image for hosts cloned from the appliance disk image: node-joiner ``--config-iso``,
  4.18+ -- openshift/installer pkg/nodejoiner/addnodes.go@de45feddbf0f1fa796f476cb7bb4c15a7b4e04d2.
"""

from __future__ import annotations

from typing import Any

STANDARD = "standard"
APPLIANCE = "appliance"
REGISTRY_LESS = "registry-less"
INTERNAL_REGISTRY_PORT = "22625"
APPLIANCE_REGISTRY_HOSTS = ("registry.appliance.openshift.com", "registry.appliance.com")
CONFIG_ISO_SINCE = (4, 18)


def _host_port(location: Any) -> tuple[str, str]:
    """``(host, port)`` of a mirror location such as ``registry.example.com:5000/ocp/release`` (port '' if none)."""
    head = str(location or "").split("/", 1)[0].strip().lower()
    if head.count(":") == 1:
        host, port = head.split(":")
        return host, port
    return head, ""


def _api_int_host(api_int_url: str | None, name: str | None, base_domain: str | None) -> str | None:
    if api_int_url:
        host = str(api_int_url).split("://", 1)[-1].split("/", 1)[0]
        return _host_port(host)[0] or None
    if name and base_domain:
        return "api-int.%s.%s" % (name, base_domain)
    return None


def cluster_kind(
    mirrors: list[dict[str, Any]],
    api_int_url: str | None = None,
    name: str | None = None,
    base_domain: str | None = None,
) -> dict[str, Any]:
    """``{"kind", "internal_registries"}`` from the ``mirrors`` facts (``[{"source", "mirrors", "origin"}]``).

    A mirror on ``api-int...:22625`` makes the cluster registry-less (such a cluster may list the appliance
    registry too); else a mirror on the appliance registry makes it an appliance; else it is standard.
    """
    api_int = _api_int_host(api_int_url, name, base_domain)
    appliance: list[str] = []
    registry_less: list[str] = []
    for entry in mirrors or []:
        for location in entry.get("mirrors") or []:
            host, port = _host_port(location)
            endpoint = "%s:%s" % (host, port) if port else host
            if host.startswith("api-int.") and port == INTERNAL_REGISTRY_PORT:
                if endpoint not in registry_less:
                    registry_less.append(endpoint)
            elif host in APPLIANCE_REGISTRY_HOSTS and endpoint not in appliance:
                appliance.append(endpoint)
    if registry_less:
        expected = "%s:%s" % (api_int, INTERNAL_REGISTRY_PORT) if api_int else None
        if expected and expected not in registry_less:
            registry_less.insert(0, expected)
        return {"kind": REGISTRY_LESS, "internal_registries": registry_less}
    if appliance:
        return {"kind": APPLIANCE, "internal_registries": appliance}
    return {"kind": STANDARD, "internal_registries": []}


def kind_warnings(kind: dict[str, Any]) -> list[str]:
    """What a new host needs on a cluster of this kind, with the fix (none for a standard cluster)."""
    endpoints = ", ".join(kind.get("internal_registries") or [])
    if kind.get("kind") == APPLIANCE:
        return [
            "cluster kind appliance: its release images are mirrored to %s, a registry that runs on every node "
            "installed from the appliance disk image (the name points at 127.0.0.1 there). A host booted from a "
            "plain node ISO has no such registry and stops at image pull. Fix: clone the new hosts from the "
            "appliance disk image and attach a configuration-only image built with day2_iso output: config-iso "
            "(node_image_output: config-iso; OpenShift %d.%d or later)" % ((endpoints, *CONFIG_ISO_SINCE))
        ]
    if kind.get("kind") == REGISTRY_LESS:
        return [
            "cluster kind registry-less: its release images are served by the control-plane nodes at %s; new "
            "hosts pull from there while they install and join. Fix: make TCP port %s of api-int reachable from "
            "the new hosts (add it to the api-int load balancer when that is external, and open it in the "
            "firewalls between them)" % (endpoints, INTERNAL_REGISTRY_PORT)
        ]
    return []
