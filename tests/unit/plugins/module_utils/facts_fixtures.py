# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The objects of a healthy bare-metal cluster as day1_facts reads them, for the _facts unit tests."""

import base64
import json

import yaml

MARKER = "SECRET-MARKER-UNIT"


def b64(value):
    return base64.b64encode(value.encode()).decode()


def condition(ctype, status, message=""):
    return {"type": ctype, "status": status, "message": message}


def node(name, role, ip, arch="amd64", ready="True"):
    return {
        "metadata": {"name": name, "labels": {"node-role.kubernetes.io/%s" % role: "", "kubernetes.io/arch": arch}},
        "status": {
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
            "nodeInfo": {"architecture": arch},
            "conditions": [condition("Ready", ready)],
        },
    }


INSTALL_CONFIG = {
    "apiVersion": "v1",
    "metadata": {"name": "unit"},
    "baseDomain": "example.test",
    "networking": {
        "machineNetwork": [{"cidr": "192.0.2.0/24"}],
        "clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
        "serviceNetwork": ["172.30.0.0/16"],
        "networkType": "OVNKubernetes",
    },
    "sshKey": "ssh-ed25519 AAAAinstallconfig",
    "imageDigestSources": [{"source": "quay.io/openshift-release-dev/ocp-release", "mirrors": ["mirror.test/ocp"]}],
}

POINTER = {
    "ignition": {
        "version": "3.2.0",
        "config": {"merge": [{"source": "https://api-int.unit.example.test:22623/config/worker"}]},
        "security": {"tls": {"certificateAuthorities": [{"source": "data:text/plain;base64,LS0t"}]}},
    }
}

STREAM = {
    "stream": "rhcos-4.18",
    "architectures": {
        "x86_64": {
            "artifacts": {
                "metal": {
                    "release": "418.94.1",
                    "formats": {
                        "iso": {"disk": {"location": "https://example.test/live.x86_64.iso", "sha256": "aa"}},
                        "pxe": {
                            "kernel": {"location": "https://example.test/k", "sha256": "k1"},
                            "initramfs": {"location": "https://example.test/i", "sha256": "i1"},
                            "rootfs": {"location": "https://example.test/r", "sha256": "r1"},
                        },
                    },
                }
            }
        }
    },
}


def objects(**overrides):
    base = {
        "clusterversion": {
            "spec": {"clusterID": "cid-1"},
            "status": {
                "desired": {"version": "4.18.3", "image": "quay.io/release@sha256:1"},
                "history": [{"version": "4.18.3", "state": "Completed", "image": "quay.io/release@sha256:1"}],
            },
        },
        "infrastructure": {
            "spec": {"platformSpec": {"type": "BareMetal"}},
            "status": {
                "apiServerURL": "https://api.unit.example.test:6443",
                "apiServerInternalURI": "https://api-int.unit.example.test:6443",
                "infrastructureName": "unit-abcde",
                "platformStatus": {
                    "type": "BareMetal",
                    "baremetal": {"apiServerInternalIPs": ["192.0.2.5"], "ingressIPs": ["192.0.2.4"]},
                },
            },
        },
        "network": {
            "status": {
                "clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
                "serviceNetwork": ["172.30.0.0/16"],
                "networkType": "OVNKubernetes",
            }
        },
        "proxy": {"spec": {}, "status": {}},
        "ingress": {"spec": {"domain": "apps.unit.example.test"}},
        "install_config": {"data": {"install-config": yaml.safe_dump(INSTALL_CONFIG)}},
        "pull_secret": {
            "data": {
                ".dockerconfigjson": b64(
                    json.dumps({"auths": {"quay.io": {"auth": MARKER}, "registry.test": {"auth": MARKER}}})
                )
            }
        },
        "user_ca_bundle": None,
        "nodes": {"items": [node("master-1", "master", "192.0.2.11"), node("master-0", "master", "192.0.2.10")]},
        "idms": {"items": []},
        "icsp": {"items": []},
        "bootimages": {"data": {"stream": json.dumps(STREAM)}},
        "worker_user_data": {"data": {"userData": b64(json.dumps(POINTER))}},
        "mc_ssh": {
            "spec": {"config": {"passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAAmc"]}]}}}
        },
        "mc_fips": {"spec": {"fips": False}},
        "mc_chrony": {"spec": {"config": {"storage": {"files": [{"path": "/etc/chrony.conf"}]}}}},
        "clusteroperators": {
            "items": [
                {
                    "metadata": {"name": "dns"},
                    "status": {"conditions": [condition("Available", "True"), condition("Degraded", "False")]},
                }
            ]
        },
        "worker_pool": {"status": {"conditions": [condition("Updated", "True"), condition("Degraded", "False")]}},
    }
    base.update(overrides)
    return base
