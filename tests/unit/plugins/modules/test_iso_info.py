# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The iso_info module: one run of main() on node-joiner-laid-out images, check mode, failures, its docs."""

import importlib.util
import json
import os

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args

from ansible_collections.openshift_agent.day2.plugins.module_utils._image import iso as info_module
from ansible_collections.openshift_agent.day2.plugins.modules import iso_info

_spec = importlib.util.spec_from_file_location(
    "node_iso_layout",
    os.path.join(os.path.dirname(__file__), "..", "module_utils", "fixtures", "iso", "node_iso_layout.py"),
)
layout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layout)

HOSTS = [
    {"hostname": "extra-worker-0", "macs": ["52:54:00:6f:00:14"], "interfaces": ["eth0"]},
    {"hostname": "extra-worker-1", "macs": ["52:54:00:6f:00:15"]},
]
FAR = "2999-01-01T00:00:00Z"


def run_main(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        iso_info.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def node_iso(tmp_path_factory):
    work = tmp_path_factory.mktemp("iso")
    path = str(work / "node.x86_64.iso")
    layout.build_node_iso(str(work), path, layout.add_nodes_ignition(hosts=HOSTS, expiry=FAR))
    return path


def test_reports_cluster_hosts_and_validity(node_iso, capsys):
    result = run_main({"path": node_iso, "min_validity": "24h"}, capsys)
    assert "failed" not in result and result["changed"] is False
    assert result["layout"] == "node-iso" and result["cluster_name"] == "ostest"
    assert [h["hostname"] for h in result["hosts"]] == ["extra-worker-0", "extra-worker-1"]
    assert result["token_expiry"] == FAR and result["valid"] is True and result["min_validity"] == 24.0
    assert result["iso_files"] == {"igninfo": "coreos/igninfo.jso", "kargs": "coreos/kargs.jso"}
    text = json.dumps(result)
    assert layout.PULL_SECRET_MARKER not in text and layout.TOKEN_SIGNATURE not in text


def test_check_mode_gives_the_same_answer(node_iso, capsys):
    normal = run_main({"path": node_iso}, capsys)
    checked = run_main({"path": node_iso, "_ansible_check_mode": True}, capsys)
    for result in (normal, checked):
        result.pop("checked_at")
        result.pop("valid_for")
        result.pop("message")
    assert checked == normal


def test_it_takes_no_cluster_login_options(node_iso, capsys):
    # it reads a local file only: it is no member of the action group, so no module_defaults login reaches it
    result = run_main({"path": node_iso, "kubeconfig": "/nonexistent/kubeconfig"}, capsys)
    assert result["failed"] is True and "Unsupported parameters" in result["msg"] and "kubeconfig" in result["msg"]


@pytest.mark.parametrize(
    "content, message",
    [
        (b"PK\x03\x04 a zip file" * 4000, "is neither an ISO 9660 image"),
        (None, "cannot read it"),
    ],
)
def test_fails_naming_the_file_and_what_was_expected(tmp_path, capsys, content, message):
    path = tmp_path / "thing.iso"
    if content is not None:
        path.write_bytes(content)
    result = run_main({"path": str(path)}, capsys)
    assert result["failed"] is True and result["msg"].startswith("iso_info: %s" % path)
    assert message in result["msg"] and "node.<arch>.iso" in result["msg"]
    assert result["file"] == str(path)


def test_a_read_error_names_the_file(node_iso, capsys, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(info_module, "_describe", refuse)
    result = run_main({"path": node_iso}, capsys)
    assert result["msg"] == "iso_info: %s: cannot read it (Permission denied); expected %s" % (
        node_iso,
        info_module.EXPECTED,
    )
    assert result["failed"] is True and result["file"] == node_iso


def test_bad_min_validity(node_iso, capsys):
    result = run_main({"path": node_iso, "min_validity": "one day"}, capsys)
    assert result["failed"] is True and "min_validity: 'one day' is not a duration" in result["msg"]
    assert result["file"] == node_iso


def test_documentation_is_valid_yaml_and_lists_every_return_value(node_iso, capsys):
    doc = yaml.safe_load(iso_info.DOCUMENTATION)
    assert set(doc["options"]) == {"path", "min_validity"}
    assert doc["extends_documentation_fragment"] == ["openshift_agent.day2.attributes.READ_ONLY"]
    assert doc["version_added"] == "0.1.0" and iso_info.ARGUMENT_SPEC.keys() == doc["options"].keys()
    returned = set(yaml.safe_load(iso_info.RETURN))
    result = run_main({"path": node_iso}, capsys)
    assert set(result) - {"changed", "invocation"} == returned
    yaml.safe_load(iso_info.EXAMPLES)
