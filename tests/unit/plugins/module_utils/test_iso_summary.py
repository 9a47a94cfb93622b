# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an add-nodes Ignition config says (pure: configs built as node-joiner lays them out)."""

import base64
import gzip
import importlib.util
import json
import os
from urllib.parse import quote

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._image import ignition as summary_mod
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.ignition import IgnitionContentError

_spec = importlib.util.spec_from_file_location(
    "node_iso_layout", os.path.join(os.path.dirname(__file__), "fixtures", "iso", "node_iso_layout.py")
)
layout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layout)

HOSTS = [
    # static network on two NICs, MACs written upper case in nodes-config
    {
        "hostname": "extra-worker-0",
        "macs": ["52:54:00:AA:00:01", "52:54:00:AA:00:02"],
        "interfaces": ["eth0", "eth1"],
        "role": "worker",
    },
    # no hostname: hostconfig/host-1, no hostnames file
    {"hostname": "", "macs": ["52:54:00:aa:00:11"]},
    # static network, one NIC
    {"hostname": "extra-worker-2", "macs": ["52:54:00:aa:00:21"], "interfaces": ["ens3"]},
]


def summarize(**kwargs):
    kwargs.setdefault("hosts", HOSTS)
    return summary_mod.summarize_add_nodes_ignition(layout.add_nodes_ignition(**kwargs))


def test_cluster_identity_and_hosts_joined_by_mac():
    summary = summarize()
    assert summary["add_nodes"] is True
    assert (summary["cluster_id"], summary["cluster_name"], summary["api_dns_name"]) == (
        "5c3d7b2e-0d1e-4f5a-9b8c-1a2b3c4d5e6f",
        "ostest",
        "api.ostest.example.com",
    )
    assert summary["hosts"] == [
        {
            "hostname": "extra-worker-0",
            "mac_addresses": ["52:54:00:aa:00:01", "52:54:00:aa:00:02"],
            "role": "worker",
            "interfaces": [
                {"mac_address": "52:54:00:aa:00:01", "name": "eth0"},
                {"mac_address": "52:54:00:aa:00:02", "name": "eth1"},
            ],
        },
        {
            "hostname": "extra-worker-2",
            "mac_addresses": ["52:54:00:aa:00:21"],
            "role": None,
            "interfaces": [{"mac_address": "52:54:00:aa:00:21", "name": "ens3"}],
        },
        {"hostname": None, "mac_addresses": ["52:54:00:aa:00:11"], "role": None, "interfaces": []},
    ]


def test_network_directories_are_not_numbered_by_host_position():
    files = summary_mod.ignition_files(layout.add_nodes_ignition(hosts=HOSTS))
    # the fixture numbers the sorted configs like node-joiner: extra-worker-2 got host0
    assert "52:54:00:aa:00:21=ens3" in summary_mod.file_text(files, "/etc/assisted/network/host0/mac_interface.ini")


@pytest.mark.parametrize("variable", ["AUTH_TOKEN_EXPIRY", "AGENT_AUTH_TOKEN_EXPIRY"])
def test_expiry_from_either_variable(variable):
    summary = summarize(expiry_variable=variable, expiry="2030-05-06T07:08:09Z")
    assert summary["token_expiry"] == "2030-05-06T07:08:09Z"
    assert summary["token_expiry_source"] == "/etc/assisted/add-nodes.env " + variable


def test_expiry_with_an_offset_is_given_in_utc():
    assert summarize(expiry="2030-05-06T09:08:09+02:00")["token_expiry"] == "2030-05-06T07:08:09Z"


@pytest.mark.parametrize("variable, expiry", [(None, None), ("AUTH_TOKEN_EXPIRY", "not a time")])
def test_expiry_from_the_tokens_when_the_env_does_not_say(variable, expiry):
    summary = summarize(expiry_variable=variable, expiry=expiry, token_exp=1900000000)
    assert summary["token_expiry"] == "2030-03-17T17:46:40Z"  # the earliest exp (agent token)
    assert summary["token_expiry_source"].startswith("exp claim of the tokens in /etc/assisted/rendezvous-host.env")


def test_a_reused_417_token_is_judged_by_its_exp_claim_not_the_later_add_nodes_env():
    # node-joiner 4.17 reused a token 20 h old: add-nodes.env says 48 h from the build, the token 28 h
    summary = summarize(expiry_variable="AGENT_AUTH_TOKEN_EXPIRY", expiry="2030-03-18T21:46:40Z", token_exp=1900000000)
    assert summary["token_expiry"] == "2030-03-17T17:46:40Z"
    assert summary["token_expiry_source"] == (
        "exp claim of the tokens in /etc/assisted/rendezvous-host.env, "
        "/usr/local/share/assisted-service/assisted-service.env "
        "(earlier than /etc/assisted/add-nodes.env AGENT_AUTH_TOKEN_EXPIRY=2030-03-18T21:46:40Z)"
    )


def test_an_add_nodes_env_expiry_earlier_than_the_tokens_wins():
    summary = summarize(expiry="2030-03-17T17:00:00Z", token_exp=1900000000)
    assert summary["token_expiry"] == "2030-03-17T17:00:00Z"
    assert summary["token_expiry_source"] == "/etc/assisted/add-nodes.env AUTH_TOKEN_EXPIRY"


def test_never_returns_a_secret():
    config = layout.add_nodes_ignition(hosts=HOSTS)
    text = json.dumps(summary_mod.summarize_add_nodes_ignition(config))
    assert layout.PULL_SECRET_MARKER not in text and layout.TOKEN_SIGNATURE not in text
    assert "eyJ" not in text  # no JWT part


@pytest.mark.parametrize("architecture, expected", [("x86_64", "x86_64"), ("arm64", "aarch64"), ("s390x", "s390x")])
def test_architecture_from_infraenv(architecture, expected):
    summary = summarize(architecture=architecture)
    assert (summary["architecture"], summary["architecture_source"]) == (
        expected,
        "/etc/assisted/manifests/infraenv.yaml spec.cpuArchitecture",
    )


def _without(config, path):
    config["storage"]["files"] = [f for f in config["storage"]["files"] if f["path"] != path]
    return config


def test_architecture_from_images_env_without_infraenv():
    config = _without(layout.add_nodes_ignition(architecture="aarch64"), summary_mod.INFRAENV_PATH)
    summary = summary_mod.summarize_add_nodes_ignition(config)
    assert summary["architecture"] == "aarch64" and "OS_IMAGES" in summary["architecture_source"]


def test_infraenv_read_without_pyyaml(monkeypatch):
    monkeypatch.setattr(summary_mod, "yaml", None)
    assert summarize(architecture="ppc64le")["architecture"] == "ppc64le"


def test_version_from_images_env_else_cluster_image_set():
    assert summarize(version="4.18.7")["openshift_version"] == "4.18.7"
    config = _without(layout.add_nodes_ignition(version="4.17.9"), summary_mod.IMAGES_ENV_PATH)
    summary = summary_mod.summarize_add_nodes_ignition(config)
    assert summary["openshift_version"] == "4.17.9" and summary["architecture"] == "x86_64"
    assert summary["release_image"].startswith("quay.io/openshift-release-dev/ocp-release@sha256:")


def test_hosts_without_hostconfig_come_from_network_and_hostnames():
    summary = summarize(with_hostconfig=False)
    assert [(h["hostname"], h["mac_addresses"]) for h in summary["hosts"]] == [
        ("extra-worker-0", ["52:54:00:aa:00:01", "52:54:00:aa:00:02"]),
        ("extra-worker-2", ["52:54:00:aa:00:21"]),
    ]


def test_unrelated_ignition_says_nothing():
    assert summary_mod.summarize_add_nodes_ignition({"ignition": {"version": "3.2.0"}}) == {
        "add_nodes": False,
        "cluster_id": None,
        "cluster_name": None,
        "api_dns_name": None,
        "token_expiry": None,
        "token_expiry_source": None,
        "hosts": [],
        "architecture": None,
        "architecture_source": None,
        "openshift_version": None,
        "release_image": None,
    }


def test_later_file_entry_wins():
    config = layout.add_nodes_ignition(hosts=HOSTS)
    config["storage"]["files"].append(layout._file("/etc/assisted/add-nodes.env", "CLUSTER_NAME='other'\n"))
    assert summary_mod.summarize_add_nodes_ignition(config)["cluster_name"] == "other"


def _url_file(path, source, compression=None):
    contents = {"source": source}
    if compression:
        contents["compression"] = compression
    return {"path": path, "contents": contents}


def test_gzip_and_percent_encoded_files_are_read():
    config = {
        "storage": {
            "files": [
                _url_file("/etc/assisted/add-nodes.env", "data:," + quote("CLUSTER_ID=abc\n")),
                _url_file(
                    "/etc/assisted/hostconfig/w/mac_addresses",
                    "data:;base64," + base64.b64encode(gzip.compress(b"52:54:00:00:00:09\n")).decode(),
                    "gzip",
                ),
            ]
        }
    }
    summary = summary_mod.summarize_add_nodes_ignition(config)
    assert summary["cluster_id"] == "abc" and summary["hosts"][0]["hostname"] == "w"


@pytest.mark.parametrize(
    "path, source, message",
    [
        ("/etc/assisted/add-nodes.env", "https://example.invalid/env", "expected a data: URL"),
        ("/etc/assisted/add-nodes.env", "data:;base64,@@@", "undecodable"),
        ("/etc/assisted/network/host0/mac_interface.ini", "data:,eth0%3Deth1", "no MAC address"),
    ],
)
def test_undecodable_files_are_named(path, source, message):
    with pytest.raises(IgnitionContentError, match=message) as info:
        summary_mod.summarize_add_nodes_ignition({"storage": {"files": [_url_file(path, source)]}})
    assert path in str(info.value) or "mac_interface" in str(info.value)


@pytest.mark.parametrize(
    "source, compression, expected",
    [
        ("data:,hello%20world", None, b"hello world"),
        ("data:text/plain;base64,aGk=", None, b"hi"),
        ("data:;base64,aGk%3D", None, b"hi"),
        ("data:;base64," + base64.b64encode(gzip.compress(b"zipped", mtime=0)).decode(), "gzip", b"zipped"),
        ("data:,", "", b""),
    ],
)
def test_decode_data_url(source, compression, expected):
    assert summary_mod.decode_data_url(source, compression) == expected


@pytest.mark.parametrize("compression, message", [("xz", "unsupported compression"), ("gzip", "corrupt gzip")])
def test_decode_data_url_compression_errors(compression, message):
    with pytest.raises(IgnitionContentError, match=message):
        summary_mod.decode_data_url("data:,plain", compression)


def test_parse_env_file():
    text = "A=1\nexport B=two\n# C=3\n\nD=\"quoted value\"\nE='x'\nF=a=b\n"
    assert summary_mod.parse_env_file(text) == {"A": "1", "B": "two", "D": "quoted value", "E": "x", "F": "a=b"}


def test_an_add_nodes_env_without_contents_still_marks_an_add_nodes_config():
    summary = summary_mod.summarize_add_nodes_ignition(
        {"storage": {"files": [{"path": "/etc/assisted/add-nodes.env"}]}}
    )
    assert summary["add_nodes"] is True and summary["cluster_id"] is None
