"""The appliance and registry-less lab variants: seeded as such clusters look (their mirror sets), and node-joiner's
``--config-iso`` run on them (configuration only: no registries.conf, no node ISO)."""

import pytest
from lab import ignition as ign
from lab import iso, njcli, seeds, versions
from nj_helpers import execute, make_run

APPLIANCE_REGISTRY = "registry.appliance.openshift.com:22625"
API_INT_REGISTRY = "api-int.lab.day2.example.test:22625"


def _mirror_hosts(variant):
    (idms,) = [o for o in seeds.load_seed(variant) if o["kind"] == "ImageDigestMirrorSet"]
    assert idms["metadata"]["name"] == "idms-release-0"
    entries = idms["spec"]["imageDigestMirrors"]
    assert sorted(e["source"] for e in entries) == [
        "quay.io/openshift-release-dev/ocp-release",
        "quay.io/openshift-release-dev/ocp-v4.0-art-dev",
    ]
    return {mirror.split("/", 1)[0] for e in entries for mirror in e["mirrors"]}


def test_appliance_seed_mirrors_the_release_to_the_node_local_registry():
    assert _mirror_hosts("appliance") == {APPLIANCE_REGISTRY}
    cv = seeds.find(seeds.load_seed("appliance"), "ClusterVersion", "version")
    # the release pullspec stays quay.io's: the mirror set does the redirect
    assert cv["status"]["desired"]["image"].startswith("quay.io/openshift-release-dev/ocp-release@sha256:")
    assert versions.for_version(versions.cluster_version(cv)).minor >= (4, 18)


def test_registry_less_seed_reaches_the_control_plane_through_api_int():
    assert _mirror_hosts("registry-less") == {APPLIANCE_REGISTRY, API_INT_REGISTRY, "localhost:22625"}


def test_standard_variants_have_no_internal_registry():
    hosts = {
        mirror.split("/", 1)[0]
        for o in seeds.load_seed("disconnected")
        if o["kind"] == "ImageDigestMirrorSet"
        for e in o["spec"]["imageDigestMirrors"]
        for mirror in e["mirrors"]
    }
    assert hosts and not any(h.endswith(":22625") for h in hosts)


@pytest.mark.parametrize("variant", ["appliance", "registry-less"])
def test_config_iso_run_on_the_variant_writes_only_the_configuration(tmp_path, iso_cache, variant):
    run, assets, _secrets = make_run(tmp_path, iso_cache, variant)
    assert execute(run, config_iso=True) == 0
    assert (assets / "agentconfig.noarch.iso").exists() and not (assets / "node.x86_64.iso").exists()
    files, _modes = iso.read_config_iso(str(assets / "agentconfig.noarch.iso"))
    assert "/etc/assisted/manifests/pull-secret.yaml" in files and "/etc/assisted/rendezvous-host.env" in files
    # The image the host was cloned from already has its registries.conf: not part of GetConfigImageFiles().
    assert ign.REGISTRIES_CONF not in files
    assert "Generated ISO at /assets/agentconfig.noarch.iso." in run.log_text()


def test_node_iso_on_the_appliance_points_the_host_at_the_appliance_registry(tmp_path, iso_cache):
    run, assets, _secrets = make_run(tmp_path, iso_cache, "appliance")
    assert execute(run) == 0
    files = ign.files_by_path(iso.read_embedded_ignition(str(assets / "node.x86_64.iso")))
    conf = files[ign.REGISTRIES_CONF].decode()
    assert 'location = "%s/openshift/release-images"' % APPLIANCE_REGISTRY in conf


def test_config_iso_flag_is_unknown_to_the_417_node_joiner():
    v417, v418 = versions.for_version("4.17.9"), versions.for_version("4.18.1")
    with pytest.raises(njcli.UsageError) as refused:
        njcli.parse_add_nodes(["add-nodes", "--config-iso", "--dir=/assets"], v417, 0)
    assert "Error: unknown flag: --config-iso" in refused.value.stderr
    assert njcli.parse_add_nodes(["add-nodes", "--config-iso", "--dir=/assets"], v418, 0)["config_iso"] is True
