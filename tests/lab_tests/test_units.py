"""In-process tests of the lab's pure parts: selectors, patches, store, and the seeds."""

from __future__ import annotations

import asyncio
import base64
import json

import pytest
import yaml
from lab import kinds, seeds
from lab.errors import ApiError
from lab.matching import labels_match, parse_label_selector
from lab.patch import json_patch, merge_patch, strategic_merge_patch
from lab.store import Store

MARKER = "LAB-PULL-SECRET-MARKER-7f3a9c"
CM = kinds.by_kind("v1", "ConfigMap")


@pytest.mark.parametrize(
    "selector, labels, expected",
    [
        ("a=1", {"a": "1"}, True),
        ("a=1", {"a": "2"}, False),
        ("a!=1", {}, True),
        ("a in (1, 2),b", {"a": "2", "b": ""}, True),
        ("a notin (1)", {"a": "1"}, False),
        ("!a", {"a": "x"}, False),
        ("a", {}, False),
        ("", {"x": "y"}, True),
    ],
)
def test_label_selectors(selector, labels, expected):
    assert labels_match(parse_label_selector(selector), labels) is expected


def test_bad_selector_is_a_400():
    with pytest.raises(ApiError) as caught:
        parse_label_selector("a in (1")
    assert caught.value.code == 400


def test_patches():
    assert merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}) == {"a": {"c": 2, "d": 3}}
    assert json_patch(
        {"l": [1, 3]}, [{"op": "add", "path": "/l/1", "value": 2}, {"op": "move", "from": "/l/0", "path": "/first"}]
    ) == {"l": [2, 3], "first": 1}
    merged = strategic_merge_patch(
        {"conditions": [{"type": "A", "status": "x"}, {"type": "B"}], "list": [1, 2]},
        {"conditions": [{"type": "A", "status": "y"}, {"type": "C"}], "list": [3]},
    )
    assert merged == {"conditions": [{"type": "A", "status": "y"}, {"type": "B"}, {"type": "C"}], "list": [3]}


def test_store_window_and_watch_replay():
    async def scenario():
        store = Store(event_window=3)
        store.create(kinds.NAMESPACE, {"metadata": {"name": "ns"}})
        first = store.create(CM, {"metadata": {"name": "a", "namespace": "ns"}})
        rv = first["metadata"]["resourceVersion"]
        watch = store.watch(CM, "ns", resource_version=rv)
        store.update(CM, dict(first, data={"x": "1"}, metadata={"name": "a", "namespace": "ns"}))
        event = await watch.next(1)
        assert event["type"] == "MODIFIED" and event["object"]["data"] == {"x": "1"}
        for index in range(4):
            store.create(CM, {"metadata": {"name": f"b{index}", "namespace": "ns"}})
        with pytest.raises(ApiError) as caught:
            store.watch(CM, "ns", resource_version=rv)
        assert caught.value.code == 410
        with pytest.raises(ApiError) as caught:
            store.update(CM, first)
        assert caught.value.code == 409

    asyncio.run(scenario())


def test_every_variant_only_replaces_default_files_or_adds_its_own():
    defaults = set(seeds.seed_files("default"))
    for variant in seeds.variants():
        objects = seeds.load_seed(variant)
        keys = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects]
        assert len(keys) == len(set(keys)), f"{variant}: an object is seeded twice"
        if not seeds.is_standalone(variant):
            assert defaults <= set(seeds.seed_files(variant))
        store = Store()
        seeded_namespaces = {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
        system = set(seeds.APISERVER_NAMESPACES) - seeded_namespaces
        assert seeds.load_into(store, variant) == len(objects) + len(system)
        assert {ns["metadata"]["name"] for ns in store.list(kinds.NAMESPACE)[0]} == seeded_namespaces | system


# The five version variants: (variant, version, installer-images exists, history length).
VERSION_VARIANTS = [
    ("v417", "4.17.20", False, 2),
    ("v418", "4.18.12", False, 2),
    ("v419", "4.19.9", True, 3),
    ("v420", "4.20.4", True, 3),
    ("v421", "4.21.1", True, 3),
]


@pytest.mark.parametrize("variant, version, installer_images, history", VERSION_VARIANTS)
def test_version_variants(variant, version, installer_images, history):
    from lab import versions

    objects = seeds.load_seed(variant)
    cv = seeds.find(objects, "ClusterVersion", "version")
    assert cv["status"]["desired"]["version"] == version == cv["status"]["history"][0]["version"]
    assert cv["spec"]["channel"] == "stable-" + version.rsplit(".", 1)[0]
    assert len(cv["status"]["history"]) == history
    assert [h["state"] for h in cv["status"]["history"]] == ["Completed"] * history
    profile = versions.for_version(versions.cluster_version(cv))
    assert profile.name == version.rsplit(".", 1)[0]
    assert profile.ships_installer_images is installer_images
    names = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert (("ConfigMap", "installer-images") in names) is installer_images
    kubelet = {n["status"]["nodeInfo"]["kubeletVersion"].rsplit(".", 1)[0] for n in objects if n["kind"] == "Node"}
    assert kubelet == {"v1.%d" % (profile.minor[1] + 13)}  # 4.17 ships Kubernetes 1.30 ... 4.21 1.34
    operators = {o["status"]["versions"][0]["version"] for o in objects if o["kind"] == "ClusterOperator"}
    assert operators == {version}
    assert {("Ingress", "cluster"), ("DNS", "cluster")} <= names


def test_an_empty_variant_file_removes_the_default_one(tmp_path, monkeypatch):
    for name in ("default", "gone"):
        (tmp_path / name).mkdir()
    (tmp_path / "default" / "a.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n")
    (tmp_path / "default" / "b.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n")
    (tmp_path / "gone" / "a.yaml").write_text("# comments only: no document\n")
    monkeypatch.setattr(seeds, "SEEDS_DIR", str(tmp_path))
    assert [o["metadata"]["name"] for o in seeds.load_seed("gone")] == ["b"]
    assert [o["metadata"]["name"] for o in seeds.load_seed("default")] == ["a", "b"]


def test_nodejoiner_testdata_variant_is_exactly_upstreams_cluster():
    objects = seeds.load_seed("nodejoiner-testdata")
    assert seeds.is_standalone("nodejoiner-testdata") and not seeds.is_standalone("default")
    assert sorted((o["kind"], o["metadata"].get("namespace") or "", o["metadata"]["name"]) for o in objects) == [
        ("ClusterVersion", "", "version"),
        ("ConfigMap", "kube-system", "cluster-config-v1"),
        ("ConfigMap", "openshift-machine-config-operator", "coreos-bootimages"),
        ("ImageDigestMirrorSet", "", "image-digest-mirror"),
        ("Infrastructure", "", "cluster"),
        ("Ingress", "", "cluster"),
        ("MachineConfig", "", "99-worker-fips"),
        ("MachineConfig", "", "99-worker-ssh"),
        ("Namespace", "", "openshift-config"),
        ("Namespace", "", "openshift-machine-config-operator"),
        ("Node", "", "master-0"),
        ("Proxy", "", "cluster"),
        ("Secret", "openshift-config", "pull-secret"),
    ]
    cv = seeds.find(objects, "ClusterVersion", "version")
    assert cv["spec"] == {"clusterID": "c37c9544-4320-4380-9d8b-0753a4d9ea57"}
    assert cv["status"]["desired"]["version"] == "4.25.0" and len(cv["status"]["history"]) == 1
    assert "@sha256:" in cv["status"]["history"][0]["image"] and "$" not in cv["status"]["history"][0]["image"]
    infra = seeds.find(objects, "Infrastructure", "cluster")
    assert infra["spec"] == {"platformSpec": {"type": "BareMetal"}}
    assert infra["status"] == {"apiServerURL": "https://api.ostest.test.metalkube.org:6443"}
    install = _install_config(objects)
    assert install == {
        "apiVersion": "v1",
        "metadata": {"name": "ostest"},
        "baseDomain": "test.nodejoiner.org",
        "sshKey": "my-sshKey",
    }
    stream = json.loads(
        seeds.find(objects, "ConfigMap", "coreos-bootimages", "openshift-machine-config-operator")["data"]["stream"]
    )
    assert list(stream["architectures"]) == ["x86_64"]
    node = seeds.find(objects, "Node", "master-0")
    assert node["metadata"]["labels"] == {"node-role.kubernetes.io/master": ""}
    assert node["status"] == {"nodeInfo": {"architecture": "amd64"}}
    pull = seeds.find(objects, "Secret", "pull-secret", "openshift-config")
    assert list(pull["stringData"]) == [".dockerconfigjson"] and "data" not in pull
    ssh = seeds.find(objects, "MachineConfig", "99-worker-ssh")["spec"]["config"]["passwd"]["users"]
    assert ssh == [{"name": "core", "sshAuthorizedKeys": ["my-sshKey"]}]
    assert seeds.find(objects, "MachineConfig", "99-worker-fips")["spec"] == {"fips": True}
    served = seeds.served_resources("nodejoiner-testdata")
    assert ("config.openshift.io", "networks") not in served and ("config.openshift.io", "ingresses") in served
    assert seeds.served_resources("default") is None
    store = Store()
    seeds.load_into(store, "nodejoiner-testdata")
    secret = store.get(kinds.SECRET, "openshift-config", "pull-secret")
    assert "stringData" not in secret and json.loads(base64.b64decode(secret["data"][".dockerconfigjson"]))
    assert {ns["metadata"]["name"] for ns in store.list(kinds.NAMESPACE)[0]} == {
        "default",
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "openshift-config",
        "openshift-machine-config-operator",
    }


def _install_config(objects) -> dict:
    return yaml.safe_load(
        seeds.find(objects, "ConfigMap", "cluster-config-v1", "kube-system")["data"]["install-config"]
    )


def test_default_seed_matches_facts():
    objects = seeds.load_seed("default")
    version = seeds.find(objects, "ClusterVersion", "version")
    assert version["status"]["desired"]["version"].startswith("4.21.")
    assert version["status"]["history"][0]["version"] == version["status"]["desired"]["version"]
    assert len(version["spec"]["clusterID"]) == 36
    infra = seeds.find(objects, "Infrastructure", "cluster")
    assert infra["status"]["apiServerURL"] == "https://api.lab.day2.example.test:6443"
    assert infra["status"]["apiServerInternalURI"] == "https://api-int.lab.day2.example.test:6443"
    assert infra["spec"]["platformSpec"]["type"] == "BareMetal"
    assert infra["status"]["platformStatus"]["baremetal"]["apiServerInternalIPs"] == ["127.0.111.5"]
    assert infra["status"]["platformStatus"]["baremetal"]["ingressIPs"] == ["127.0.111.4"]
    install = _install_config(objects)
    assert install["metadata"]["name"] == "lab" and install["baseDomain"] == "day2.example.test"
    assert install["networking"]["machineNetwork"] == [{"cidr": "127.0.111.0/24"}]
    assert "pullSecret" not in install and install["fips"] is False
    pull = seeds.find(objects, "Secret", "pull-secret", "openshift-config")
    assert pull["type"] == "kubernetes.io/dockerconfigjson"
    auths = json.loads(pull["stringData"][".dockerconfigjson"])["auths"]
    assert set(auths) == {"quay.io", "registry.redhat.io", "cloud.openshift.com"}
    assert all(MARKER in entry["auth"] for entry in auths.values())
    user_data = seeds.find(objects, "Secret", "worker-user-data-managed", "openshift-machine-api")
    pointer = json.loads(user_data["stringData"]["userData"])
    assert pointer["ignition"]["version"] == "3.2.0"
    assert (
        pointer["ignition"]["config"]["merge"][0]["source"]
        == "https://api-int.lab.day2.example.test:22623/config/worker"
    )
    ca_source = pointer["ignition"]["security"]["tls"]["certificateAuthorities"][0]["source"]
    assert base64.b64decode(ca_source.split(",", 1)[1]).startswith(b"-----BEGIN CERTIFICATE-----")
    stream = json.loads(
        seeds.find(objects, "ConfigMap", "coreos-bootimages", "openshift-machine-config-operator")["data"]["stream"]
    )
    assert set(stream["architectures"]) == {"x86_64", "aarch64", "ppc64le", "s390x"}
    metal = stream["architectures"]["x86_64"]["artifacts"]["metal"]
    assert metal["release"] and len(metal["formats"]["iso"]["disk"]["sha256"]) == 64
    assert set(metal["formats"]["pxe"]) == {"kernel", "initramfs", "rootfs"}
    installer = json.loads(
        seeds.find(objects, "ConfigMap", "installer-images", "openshift-config")["data"]["images.json"]
    )
    assert "@sha256:" in installer["installer"]
    assert seeds.find(objects, "MachineConfig", "99-worker-fips")["spec"]["fips"] is False
    ssh = seeds.find(objects, "MachineConfig", "99-worker-ssh")["spec"]["config"]["passwd"]["users"][0]
    assert ssh["name"] == "core" and ssh["sshAuthorizedKeys"][0] == install["sshKey"]
    chrony = seeds.find(objects, "MachineConfig", "50-workers-chrony-configuration")
    assert chrony["spec"]["config"]["storage"]["files"][0]["path"] == "/etc/chrony.conf"
    nodes = [o for o in objects if o["kind"] == "Node"]
    assert [n["metadata"]["name"] for n in nodes] == ["master-0", "master-1", "master-2"]
    assert [n["status"]["addresses"][0]["address"] for n in nodes] == ["127.0.111.10", "127.0.111.11", "127.0.111.12"]
    assert all(n["status"]["nodeInfo"]["architecture"] == "amd64" for n in nodes)
    for operator in (o for o in objects if o["kind"] == "ClusterOperator"):
        conditions = {c["type"]: c["status"] for c in operator["status"]["conditions"]}
        assert (conditions["Available"], conditions["Degraded"], conditions["Progressing"]) == (
            "True",
            "False",
            "False",
        )
    assert seeds.find(objects, "Proxy", "cluster")["status"] == {}


def test_variants_match_their_purpose():
    old = seeds.find(seeds.load_seed("old"), "ClusterVersion", "version")
    assert old["status"]["desired"]["version"].startswith("4.16.")
    assert not [o for o in seeds.load_seed("old") if o["metadata"]["name"] == "installer-images"]
    multi = seeds.find(seeds.load_seed("multiarch"), "ClusterVersion", "version")
    assert multi["status"]["desired"]["architecture"] == "Multi"
    arm_payload = seeds.find(seeds.load_seed("arm64"), "ClusterVersion", "version")["status"]["desired"]
    assert "architecture" not in arm_payload and arm_payload["version"].startswith("4.21.")
    proxy = seeds.load_seed("proxy")
    assert seeds.find(proxy, "Proxy", "cluster")["status"]["httpsProxy"] == "http://127.0.0.1:3128"
    assert "proxy" in _install_config(proxy)
    disconnected = seeds.load_seed("disconnected")
    mirrors = seeds.find(disconnected, "ImageDigestMirrorSet", "image-digest-mirror")["spec"]["imageDigestMirrors"]
    assert _install_config(disconnected)["imageDigestSources"] == mirrors
    assert seeds.find(disconnected, "ClusterVersion", "version")["status"]["desired"]["image"].startswith(
        "mirror.lab.day2.example.test:5000/"
    )
    assert ":" in _install_config(seeds.load_seed("ipv6"))["networking"]["machineNetwork"][0]["cidr"]
    assert len(_install_config(seeds.load_seed("dualstack"))["networking"]["machineNetwork"]) == 2
    arm = [o for o in seeds.load_seed("arm64") if o["kind"] == "Node"]
    assert {n["status"]["nodeInfo"]["architecture"] for n in arm} == {"arm64"}
    none = seeds.find(seeds.load_seed("none"), "Infrastructure", "cluster")
    assert none["spec"]["platformSpec"]["type"] == "None" and "baremetal" not in none["status"]["platformStatus"]
    external = seeds.load_seed("external")
    infrastructure = seeds.find(external, "Infrastructure", "cluster")
    assert infrastructure["spec"]["platformSpec"] == {"type": "External", "external": {"platformName": "oci"}}
    assert infrastructure["status"]["platformStatus"]["type"] == "External"
    assert _install_config(external)["platform"] == {"external": {"platformName": "oci"}}
    v417_external = seeds.load_seed("v417-external")
    assert seeds.find(v417_external, "Infrastructure", "cluster") == infrastructure
    assert seeds.find(v417_external, "ClusterVersion", "version") == seeds.find(
        seeds.load_seed("v417"), "ClusterVersion", "version"
    )
    degraded = seeds.load_seed("degraded")
    pool = seeds.find(degraded, "MachineConfigPool", "worker")
    assert {c["type"]: c["status"] for c in pool["status"]["conditions"]}["Degraded"] == "True"
    assert any(
        {c["type"]: c["status"] for c in o["status"]["conditions"]}["Degraded"] == "True"
        for o in degraded
        if o["kind"] == "ClusterOperator"
    )


def test_pod_hooks_are_called_for_created_and_cascade_deleted_pods():
    from aiohttp.test_utils import TestClient, TestServer
    from lab import auth
    from lab.apiserver import build_app
    from lab.context import LabContext
    from lab.faults import Faults

    class RecordingPods:
        def __init__(self):
            self.events = []

        async def on_created(self, pod):
            self.events.append(("created", pod["metadata"]["name"]))

        async def on_deleted(self, pod):
            self.events.append(("deleted", pod["metadata"]["name"]))

    class Options:
        variant = "default"

    async def scenario():
        store = Store()
        seeds.load_into(store)
        ctx = LabContext("/nonexistent", Options(), store, None, Faults(), auth.Authenticator())
        ctx.pods = RecordingPods()
        headers = {"Authorization": f"Bearer {ctx.auth.add_token(auth.ADMIN)}"}
        async with TestClient(TestServer(build_app(ctx))) as client:
            namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "joiner"}}
            assert (await client.post("/api/v1/namespaces", json=namespace, headers=headers)).status == 201
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            }
            assert (await client.post("/api/v1/namespaces/joiner/pods", json=pod, headers=headers)).status == 201
            assert (await client.delete("/api/v1/namespaces/joiner", headers=headers)).status == 200
            await asyncio.sleep(0.05)
        return ctx.pods.events

    assert asyncio.run(scenario()) == [("created", "p"), ("deleted", "p")]


def test_table_age_and_rows():
    from datetime import datetime, timedelta, timezone

    from lab import tables

    def ago(**delta) -> str:
        return (datetime.now(timezone.utc) - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")

    assert tables.age(ago(seconds=5)) in ("5s", "6s")
    assert tables.age(ago(minutes=3)) == "3m"
    assert tables.age(ago(hours=5)) == "5h"
    assert tables.age(ago(days=2)) == "2d"
    node = seeds.find(seeds.load_seed("default"), "Node", "master-0")
    node["metadata"]["creationTimestamp"] = ago(minutes=1)
    rendered = tables.table(kinds.NODE, [node], "7", None)
    assert rendered["kind"] == "Table" and [c["name"] for c in rendered["columnDefinitions"]][:5] == [
        "Name",
        "Status",
        "Roles",
        "Age",
        "Version",
    ]
    assert rendered["rows"][0]["cells"][:3] == ["master-0", "Ready", "control-plane,master"]
    assert rendered["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
