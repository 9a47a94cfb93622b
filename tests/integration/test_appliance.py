"""Appliance and registry-less clusters: day1_facts names the kind, its internal registry and the fix; day2_iso
output: config-iso writes agentconfig.noarch.iso there (4.18+), and is refused on 4.17 before any write."""

import os

from conftest import run_module
from test_day2_iso import ISO_SIZE, MARKER, cluster_writes, day2_iso, leftovers, run

FACTS = "openshift_agent.day2.day1_facts"


def facts_of(lab):
    result, output = run_module(FACTS, {"kubeconfig": lab.kubeconfig})
    assert not result.get("failed"), output
    assert MARKER not in output
    return result, output


def test_appliance_is_detected_warned_about_and_gets_a_config_iso(lab_factory, tmp_path):
    lab = lab_factory("--variant", "appliance", "--hosts", "2", "--iso-size", str(ISO_SIZE))
    result, output = facts_of(lab)
    facts = result["ansible_facts"]["day1_cluster"]
    assert facts["cluster_kind"] == "appliance" and facts["supported"] is True
    assert facts["internal_registries"] == ["registry.appliance.openshift.com:22625"]
    (warning,) = [w for w in result["warnings"] if "cluster kind appliance" in w]
    assert warning.startswith("day1_facts: ") and "output: config-iso" in warning
    assert "[WARNING]" in output or result["warnings"]  # shown as a module warning at default verbosity

    built = day2_iso(lab, tmp_path, output="config-iso")
    assert not built.get("failed"), built.get("msg")
    (artifact,) = built["artifacts"]
    path = str(tmp_path / "agentconfig.noarch.iso")
    assert artifact["path"] == path and artifact["reused"] is False and artifact["token_expiry"]
    assert sorted(os.listdir(tmp_path)) == ["agentconfig.noarch.iso", "agentconfig.noarch.iso.json"]
    assert oct(os.stat(path).st_mode)[-3:] == "600"
    volume = run("xorriso", "-indev", path, "-pvd_info").stdout.decode()
    assert "Volume Id    : agent_configimage" in volume
    assert "config.gz" in run("xorriso", "-indev", path, "-ls", "/").stdout.decode()
    assert leftovers(lab) == []
    # the same inputs again: reused, nothing run in the cluster
    lab.reset_log()
    again = day2_iso(lab, tmp_path, output="config-iso")
    assert again["changed"] is False and again["artifacts"][0]["reused"] is True
    assert cluster_writes(lab) == []


def test_registry_less_is_detected_with_its_api_int_endpoint(lab_factory):
    lab = lab_factory("--variant", "registry-less", "--hosts", "1")
    result, _output = facts_of(lab)
    facts = result["ansible_facts"]["day1_cluster"]
    assert facts["cluster_kind"] == "registry-less"
    assert facts["internal_registries"] == ["api-int.lab.day2.example.test:22625"]
    assert any("TCP port 22625 of api-int" in w for w in result["warnings"])


def test_config_iso_is_refused_on_4_17_before_any_write(lab_factory, tmp_path):
    v417 = lab_factory("--variant", "v417", "--hosts", "1")
    facts, _output = facts_of(v417)
    assert facts["ansible_facts"]["day1_cluster"]["cluster_kind"] == "standard"
    v417.reset_log()
    refused = day2_iso(v417, tmp_path, output="config-iso")
    assert refused["failed"]
    assert "output: config-iso needs OpenShift 4.18 or later, but this cluster runs 4.17.20" in refused["msg"]
    assert cluster_writes(v417) == [] and os.listdir(tmp_path) == []
