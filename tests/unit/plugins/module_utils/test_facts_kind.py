"""_facts.support: the cluster kind (standard, appliance, registry-less) from the mirror sets, and its warning."""

from __future__ import annotations

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.cluster import build_facts
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.support import cluster_kind, kind_warnings
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.facts_fixtures import objects

APPLIANCE_MIRRORS = [
    {
        "source": "quay.io/openshift-release-dev/ocp-release",
        "mirrors": ["registry.appliance.openshift.com:22625/openshift/release-images"],
    },
    {
        "source": "quay.io/openshift-release-dev/ocp-v4.0-art-dev",
        "mirrors": ["registry.appliance.openshift.com:22625/openshift/release"],
    },
]


def _idms(*mirror_lists):
    entries = [{"source": "quay.io/x/%d" % index, "mirrors": list(m)} for index, m in enumerate(mirror_lists)]
    return {"items": [{"metadata": {"name": "idms-release-0"}, "spec": {"imageDigestMirrors": entries}}]}


def test_standard_cluster_has_no_internal_registry_and_no_warning():
    kind = cluster_kind([{"source": "quay.io/a", "mirrors": ["mirror.example.test:5000/a"]}])
    assert kind == {"kind": "standard", "internal_registries": []}
    assert kind_warnings(kind) == []


def test_appliance_mirrors_make_an_appliance():
    kind = cluster_kind(APPLIANCE_MIRRORS, "https://api-int.lab.example.test:6443")
    assert kind == {"kind": "appliance", "internal_registries": ["registry.appliance.openshift.com:22625"]}
    (warning,) = kind_warnings(kind)
    assert "registry.appliance.openshift.com:22625" in warning
    assert "config-iso" in warning and "appliance disk image" in warning and "4.18" in warning


def test_older_appliance_registry_name_is_recognised():
    kind = cluster_kind([{"source": "quay.io/a", "mirrors": ["registry.appliance.com:5000/openshift/release"]}])
    assert kind["kind"] == "appliance"
    assert kind["internal_registries"] == ["registry.appliance.com:5000"]


@pytest.mark.parametrize("api_int", ["https://api-int.ove.example.test:6443", None])
def test_api_int_22625_mirror_makes_it_registry_less_even_with_the_appliance_mirror(api_int):
    mirrors = [
        {
            "source": "quay.io/openshift-release-dev/ocp-release",
            "mirrors": [
                "registry.appliance.openshift.com:22625/openshift/release-images",
                "api-int.ove.example.test:22625/openshift/release-images",
                "localhost:22625/openshift/release-images",
            ],
        }
    ]
    kind = cluster_kind(mirrors, api_int, "ove", "example.test")
    assert kind == {"kind": "registry-less", "internal_registries": ["api-int.ove.example.test:22625"]}
    (warning,) = kind_warnings(kind)
    assert "api-int.ove.example.test:22625" in warning and "load balancer" in warning and "22625" in warning


def test_api_int_on_another_port_is_not_registry_less():
    kind = cluster_kind([{"source": "quay.io/a", "mirrors": ["api-int.x.example.test:5000/a"]}])
    assert kind["kind"] == "standard"


def test_build_facts_reports_kind_and_warns():
    facts = build_facts(objects(idms=_idms(*[entry["mirrors"] for entry in APPLIANCE_MIRRORS])))
    assert facts["cluster_kind"] == "appliance"
    assert facts["internal_registries"] == ["registry.appliance.openshift.com:22625"]
    assert any(w.startswith("cluster kind appliance:") for w in facts["warnings"])
    assert facts["supported"] is True  # a warning, not a refusal


def test_build_facts_registry_less_endpoint_from_api_int_url():
    facts = build_facts(objects(idms=_idms(["api-int.unit.example.test:22625/openshift/release"])))
    assert facts["cluster_kind"] == "registry-less"
    assert facts["internal_registries"] == ["api-int.unit.example.test:22625"]


def test_build_facts_standard_by_default():
    facts = build_facts(objects())
    assert facts["cluster_kind"] == "standard" and facts["internal_registries"] == []
    assert not any("cluster kind" in w for w in facts["warnings"])
