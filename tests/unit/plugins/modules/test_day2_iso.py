# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The day2_iso module without a cluster: what its argument spec refuses, what fails before the cluster is read,
and that its documentation is its argument spec (the lab runs the rest: tests/integration/test_day2_iso.py)."""

import json

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC

from ansible_collections.openshift_agent.day2.plugins.doc_fragments.hosts import ModuleDocFragment
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import HOST_OPTIONS
from ansible_collections.openshift_agent.day2.plugins.modules import day2_iso

HOST = {"name": "extra-worker-0", "mac_address": "52:54:00:6f:00:14", "ip": "192.168.111.20", "prefix_length": 24}


def run_main(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        day2_iso.main()
    return capsys.readouterr().out


@pytest.mark.parametrize(
    "host, needle",
    [
        (dict(HOST, bmc_password="BMC-SECRET-4c1f"), "hosts.bmc_password"),
        (dict(HOST, mac_adress="52:54:00:6f:00:15"), "hosts.mac_adress"),
        (dict(HOST, vlan_id="ten"), "vlan_id"),
        ({"mac_address": "52:54:00:6f:00:14"}, "name"),
    ],
)
def test_the_argument_spec_refuses_unknown_keys_and_wrong_types(tmp_path, capsys, host, needle):
    output = run_main({"hosts": [host], "dest": str(tmp_path)}, capsys)
    result = json.loads(output)
    assert result["failed"] is True and needle in result["msg"]
    assert "BMC-SECRET-4c1f" not in output


def test_allow_loopback_is_no_option_any_more(tmp_path, capsys):
    result = json.loads(run_main({"hosts": [HOST], "dest": str(tmp_path), "allow_loopback": True}, capsys))
    assert result["failed"] is True and "Unsupported parameters" in result["msg"] and "allow_loopback" in result["msg"]


def test_parameters_fail_before_the_cluster_is_read(tmp_path, capsys):
    args = {"hosts": [HOST], "dest": str(tmp_path / "missing"), "kubeconfig": "/nonexistent/kubeconfig"}
    result = json.loads(run_main(args, capsys))
    assert result["msg"] == "day2_iso: dest %s is not an existing directory: create it first" % (tmp_path / "missing")


def test_documentation_is_the_argument_spec():
    doc = yaml.safe_load(day2_iso.DOCUMENTATION)
    spec = day2_iso.argument_spec()
    assert "openshift_agent.day2.hosts" in doc["extends_documentation_fragment"]
    assert set(doc["options"]) == set(spec) - set(AUTH_ARG_SPEC)
    assert "suboptions" not in doc["options"]["hosts"]  # the fragment adds them
    assert set(yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]["hosts"]["suboptions"]) == set(
        spec["hosts"]["options"]
    )
    assert spec["hosts"]["options"] == HOST_OPTIONS  # day2_iso's hosts are records
    for name, option in doc["options"].items():
        assert option["type"] == spec[name]["type"] and option.get("default") == spec[name].get("default"), name
    yaml.safe_load(day2_iso.EXAMPLES)
    yaml.safe_load(day2_iso.RETURN)
