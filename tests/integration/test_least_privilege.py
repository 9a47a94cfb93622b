"""The playbooks with an identity bound to exactly the roles of docs/rbac.md, against the lab (which enforces RBAC,
the escalation rule and the signer approval as kube-apiserver does).

(a) playbooks/add_workers.yml, console boot, passes, every request made by that identity, the access check first.
(b) With any one rule of the roles removed, the run stops at the access check of the preflight role, which names the
    missing permission(s) of that rule, and nothing is written to the cluster (a SelfSubjectAccessReview is a
    question, not a write). One lab for every case; the roles are put back between cases.
"""

import json
import re

import pytest
import requests
import yaml
from conftest import REPO, is_question, lab_env, labctl, run_playbook, state_writes
from test_add_workers import PLAYBOOK, console_boots_when_media_are_ready, playbook_args

DOCS = REPO / "docs" / "rbac.md"
REPLACE_PLAYBOOK = REPO / "playbooks" / "replace_worker.yml"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
# The subject of docs/rbac.md's bindings: the test's identity is that very service account.
IDENTITY = "system:serviceaccount:openshift-config:day2-automation"


def documents(block_index=None):
    """The YAML documents of docs/rbac.md (of one ```yaml block when ``block_index`` is given)."""
    blocks = re.findall(r"```yaml\n(.*?)```", DOCS.read_text(), re.S)
    chosen = blocks if block_index is None else [blocks[block_index]]
    return [document for block in chosen for document in yaml.safe_load_all(block)]


def roles(block_index):
    return [d for d in documents(block_index) if d["kind"] in ("ClusterRole", "Role")]


def path_of(document):
    plural = {"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings"}.get(document["kind"])
    meta = document["metadata"]
    if plural is None:
        plural = "namespaces/%s/%ss" % (meta["namespace"], document["kind"].lower())
    return "%s/%s" % (RBAC, plural)


class Admin:
    """The lab's system:admin, to write the roles and bindings."""

    def __init__(self, lab):
        with open(lab.kubeconfig, encoding="utf-8") as handle:
            token = yaml.safe_load(handle)["users"][0]["user"]["token"]
        self.url = lab.info["api_url"]
        self.session = requests.Session()
        self.session.headers["Authorization"] = "Bearer " + token
        self.ca = str(lab.state / "ca.crt")  # per request: a session's verify loses to REQUESTS_CA_BUNDLE

    def apply(self, document):
        response = self.session.post(self.url + path_of(document), json=document, verify=self.ca, timeout=30)
        assert response.status_code == 201, response.text

    def set_rules(self, role, rules):
        url = "%s%s/%s" % (self.url, path_of(role), role["metadata"]["name"])
        current = self.session.get(url, verify=self.ca, timeout=30).json()
        current["rules"] = rules
        response = self.session.put(url, json=current, verify=self.ca, timeout=30)
        assert response.status_code == 200, response.text


def restricted_lab(lab_factory, *start_args, replace=False):
    """A lab with the identity of docs/rbac.md bound to its roles; (lab, admin, extra vars for the playbook)."""
    lab = lab_factory(*start_args)
    admin = Admin(lab)
    for document in documents(None if replace else 0):
        admin.apply(document)
    made = json.loads(
        labctl(
            "user",
            "--state",
            str(lab.state),
            "--name",
            IDENTITY,
            "--group",
            "system:serviceaccounts",
            "--group",
            "system:serviceaccounts:openshift-config",
        ).stdout
    )
    return lab, admin, ["-e", json.dumps({"kubeconfig": made["kubeconfig"]})]


def test_add_workers_with_exactly_the_documented_roles(lab_factory, tmp_path):
    lab, _admin, as_identity = restricted_lab(
        lab_factory, "--hosts", "2", "--install-seconds", "6", "--agent-port", "0", "--kubelet-port", "0"
    )
    hosts = [h["name"] for h in lab.info["hosts"]]
    workdir = tmp_path / "work"
    lab.reset_log()
    console = console_boots_when_media_are_ready(lab, workdir, hosts)
    rc, output = run_playbook(PLAYBOOK, *playbook_args(lab, workdir), *as_identity, env=lab_env(lab))
    console.join(timeout=5)
    assert rc == 0, output[-6000:]

    state = lab.dump()
    nodes = {o["metadata"]["name"]: o for o in state["objects"] if o["kind"] == "Node"}
    for name in hosts:
        assert [c["status"] for c in nodes[name]["status"]["conditions"] if c["type"] == "Ready"] == ["True"], name
    assert sorted(a["user"] for a in state["approvals"]) == [IDENTITY] * 4
    # Everything the run did, it did as that identity; the access check came before its first write.
    ours = [r for r in lab.requests() if r["user"] in (IDENTITY, "system:admin")]
    assert {r["user"] for r in ours} == {IDENTITY}
    questions = [i for i, r in enumerate(ours) if r["path"].split("?")[0].endswith("selfsubjectaccessreviews")]
    writes = [i for i, r in enumerate(ours) if r in state_writes(ours)]
    assert questions and writes and max(questions) < min(writes)
    assert all(r["status"] in (200, 201) for r in ours if is_question(r))


def described(rule, namespace):
    """The lines access_check writes for a rule's permissions: ``VERB RESOURCE[.GROUP] ["NAME"] WHERE``."""
    lines = []
    group = rule["apiGroups"][0]
    for resource in rule["resources"]:
        what = resource if not group else "%s.%s" % (resource, group)
        for verb in rule["verbs"]:
            for name in rule.get("resourceNames") or [None]:
                named = ' "%s"' % name if name else ""
                where = " in namespace %s" % namespace if namespace else " (cluster-wide)"
                lines.append("- %s %s%s%s: " % (verb, what, named, where))
    return lines


def cases(block_index):
    return [
        pytest.param(
            index, position, id="%s-%s" % (role["metadata"].get("namespace") or role["kind"], rule["resources"][0])
        )
        for index, role in enumerate(roles(block_index))
        for position, rule in enumerate(role["rules"])
    ]


@pytest.fixture(scope="module")
def shared_lab(lab_factory):
    return restricted_lab(lab_factory, "--hosts", "2")


def run_without(lab, admin, as_identity, role, position, playbook, *extra):
    """Run ``playbook`` with rule ``position`` of ``role`` removed; (rc, output, requests); the rule is put back."""
    rules = role["rules"]
    admin.set_rules(role, rules[:position] + rules[position + 1 :])
    lab.reset_log()
    try:
        rc, output = run_playbook(playbook, "-i", lab.inventory, *as_identity, *extra, env=lab_env(lab), timeout=300)
        log = lab.requests()
    finally:
        admin.set_rules(role, rules)
    return rc, output, log


@pytest.mark.parametrize("index,position", cases(0))
def test_each_rule_removed_is_named_before_any_write(shared_lab, tmp_path, index, position):
    lab, admin, as_identity = shared_lab
    role = roles(0)[index]
    rc, output, log = run_without(lab, admin, as_identity, role, position, PLAYBOOK, "-e", "day2_workdir=%s" % tmp_path)
    assert rc != 0, output[-3000:]
    for line in described(role["rules"][position], role["metadata"].get("namespace")):
        assert line in output, (line, output[-3000:])
    assert "nothing was written to the cluster" in output
    assert state_writes(log) == []
    assert any(r["path"].endswith("selfsubjectaccessreviews") for r in log)


@pytest.fixture(scope="module")
def replace_lab(lab_factory):
    return restricted_lab(lab_factory, "--hosts", "2", replace=True)


@pytest.mark.parametrize("position", [case.values[1] for case in cases(1)])
def test_each_replace_rule_removed_is_named_before_the_drain(replace_lab, position):
    lab, admin, as_identity = replace_lab
    role = roles(1)[0]
    host = lab.info["hosts"][0]["name"]
    rc, output, log = run_without(
        lab, admin, as_identity, role, position, REPLACE_PLAYBOOK, "-e", "day2_replace_node=%s" % host
    )
    assert rc != 0, output[-3000:]
    for line in described(role["rules"][position], None):
        assert line in output, (line, output[-3000:])
    assert state_writes(log) == []
