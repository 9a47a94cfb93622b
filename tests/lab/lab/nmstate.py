"""NetworkManager keyfiles from a host's nmstate, in a simple way (the real tool runs ``nmstatectl gc``).

Written per host under ``/etc/assisted/network/host<N>/`` with ``autoconnect=true`` and
``autoconnect-priority=1`` in ``[connection]``, as node-joiner does -- openshift/installer
pkg/asset/agent/manifests/staticnetworkconfig/generator.go@d70541cb937b733e75320fa6f8b4eb4062e036fe.
"""


def _default_gateways(network):
    """{interface name: {4: gateway, 6: gateway}} from the nmstate default routes."""
    gateways = {}
    for route in (network.get("routes") or {}).get("config") or []:
        dest = route.get("destination", "")
        family = 6 if ":" in dest else 4
        if dest in ("0.0.0.0/0", "::/0") and route.get("next-hop-interface"):
            gateways.setdefault(route["next-hop-interface"], {})[family] = route.get("next-hop-address")
    return gateways


def _ip_section(family, settings, gateway, dns):
    section = "ipv%d" % family
    if not settings or not settings.get("enabled", False):
        return "[%s]\nmethod=%s\n" % (section, "disabled")
    if settings.get("dhcp") or settings.get("autoconf"):
        return "[%s]\nmethod=auto\n" % section
    lines = ["[%s]" % section, "method=manual"]
    for n, addr in enumerate(settings.get("address") or [], start=1):
        value = "%s/%s" % (addr["ip"], addr["prefix-length"])
        if n == 1 and gateway:
            value += "," + gateway
        lines.append("address%d=%s" % (n, value))
    servers = [s for s in dns if (":" in s) == (family == 6)]
    if servers:
        lines.append("dns=%s;" % ";".join(servers))
    return "\n".join(lines) + "\n"


def nmstate_keyfiles(network):
    """{interface name: keyfile text} for the ethernet, vlan and bond interfaces of an nmstate."""
    gateways = _default_gateways(network)
    dns = ((network.get("dns-resolver") or {}).get("config") or {}).get("server") or []
    keyfiles = {}
    for iface in network.get("interfaces") or []:
        name = iface["name"]
        kind = iface.get("type", "ethernet")
        nm_type = {"ethernet": "ethernet", "vlan": "vlan", "bond": "bond"}.get(kind, kind)
        # node-joiner adds autoconnect=true and autoconnect-priority=1 to every [connection] it writes.
        parts = [
            "[connection]\nid=%s\ntype=%s\ninterface-name=%s\nautoconnect=%s\nautoconnect-priority=1\n"
            % (name, nm_type, name, "false" if iface.get("state") == "down" else "true")
        ]
        if kind == "ethernet" and iface.get("mac-address"):
            parts.append("[ethernet]\nmac-address=%s\n" % iface["mac-address"].upper())
        if kind == "vlan":
            vlan = iface.get("vlan") or {}
            parts.append("[vlan]\nid=%s\nparent=%s\n" % (vlan.get("id"), vlan.get("base-iface")))
        if kind == "bond":
            bond = iface.get("link-aggregation") or {}
            parts.append("[bond]\nmode=%s\n" % bond.get("mode", "balance-rr"))
        own_gw = gateways.get(name, {})
        parts.append(_ip_section(4, iface.get("ipv4"), own_gw.get(4), dns))
        parts.append(_ip_section(6, iface.get("ipv6"), own_gw.get(6), dns))
        keyfiles[name] = "\n".join(parts)
    return keyfiles
