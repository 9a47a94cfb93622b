# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: access_check
short_description: Check that the identity may do everything the run will do, before anything is written
version_added: 0.1.0
author:
  - openshift_agent.day2 developers (@openshift-agent-day2)
description:
  - Asks the API server, with one C(SelfSubjectAccessReview) per verb, resource and object name, whether the identity
    of the run holds every permission the planned parts of the run need (O(plan)), and fails with the list of the
    missing ones, each with the module that needs it and why, before any other module writes to the cluster.
  - The permissions are the rules of the roles in docs/rbac.md (ClusterRole C(openshift-agent-day2), Roles
    C(openshift-agent-day2) in C(openshift-config), C(kube-system), C(openshift-machine-config-operator) and
    C(openshift-machine-api), ClusterRole C(openshift-agent-day2-replace) for replace_worker.yml); they are defined
    once, in the collection's C(_check/access.py).
  - Creating node-joiner's ClusterRole and its binding is subject to the API server's escalation rule. The check
    accepts either way the API server does, C(escalate) and C(bind) on ClusterRoles (what docs/rbac.md grants), or
    holding every permission node-joiner's ClusterRole grants on the cluster's release (O(release)), cluster-wide.
notes:
  - A C(SelfSubjectAccessReview) is a question to the API server, not a change to the cluster's state; nothing is
    stored. It is sent as an HTTP POST (C(create) on C(selfsubjectaccessreviews.authorization.k8s.io), which every
    authenticated user may do through the C(system:basic-user) role), so request logs and audit logs list it as a
    create. The module reports C(changed=false).
  - The answers are the API server's authorizers' (RBAC and others); an admission plugin can still refuse a request
    the authorizer allows.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - openshift_agent.day2.attributes
  - openshift_agent.day2.attributes.READ_ONLY
options:
  plan:
    description:
      - The parts of the run to check. C(gather) is M(openshift_agent.day2.day1_facts) (and the check step, which
        needs nothing more), C(image) M(openshift_agent.day2.day2_iso), C(install) and C(join)
        M(openshift_agent.day2.agent_wait) and M(openshift_agent.day2.csr_approve) (following the installs, approving
        the CSRs), C(follow) the monitor pod they run to follow hosts from inside the cluster (their O(follow_from)),
        C(replace) the drain and delete of playbooks/replace_worker.yml.
    type: list
    elements: str
    choices: [gather, image, install, join, follow, replace]
    default: [gather, image, install, join, follow]
  run_tags:
    description:
      - The run's tags (C(ansible_run_tags)). When given, O(plan) is C(gather) and those of C(image), C(install) and
        C(join) that the tags select (C(all) selects every one) and O(skip_tags) does not skip, and C(follow) with
        C(install) or C(join) unless O(follow_from) is C(controller).
    type: list
    elements: str
  skip_tags:
    description: The run's skipped tags (C(ansible_skip_tags)), with O(run_tags).
    type: list
    elements: str
    default: []
  follow_from:
    description: Where the installs are followed from (the role's C(day2_follow_from)), with O(run_tags).
    type: str
    choices: [auto, controller, cluster]
    default: auto
  release:
    description:
      - The cluster's version (C(ansible_facts.day1_cluster.version)), which decides the rules of node-joiner's
        ClusterRole when the identity has no C(escalate) and C(bind). Unset, the rules of every release count.
    type: str
requirements:
  - python >= 3.9
  - kubernetes >= 24.2.0
seealso:
  - module: openshift_agent.day2.day1_facts
"""

EXAMPLES = r"""
- name: Check every permission of an add_workers run before anything is written
  openshift_agent.day2.access_check:
    release: "{{ ansible_facts.day1_cluster.version }}"

- name: Check what replace_worker.yml needs as well
  openshift_agent.day2.access_check:
    plan: [gather, image, install, join, replace]
"""

RETURN = r"""
plan:
  description: The parts of the run checked.
  returned: success, and when permissions are missing
  type: list
  elements: str
  sample: [gather, image, install, join]
reviews:
  description: Number of SelfSubjectAccessReviews asked.
  returned: success
  type: int
  sample: 52
missing:
  description: The permissions the identity lacks; empty on success.
  returned: success, and when permissions are missing
  type: list
  elements: dict
  contains:
    verb:
      description: The verb.
      type: str
      sample: create
    resource:
      description: The resource, C(resource/subresource) for a subresource.
      type: str
      sample: pods/exec
    group:
      description: The API group (empty for the core group).
      type: str
      sample: ""
    namespace:
      description: The namespace of a namespaced permission, null for a cluster-wide one.
      type: str
      sample: openshift-config
    name:
      description: The object's name when the permission is for named objects only.
      type: str
      sample: pull-secret
    needed_by:
      description: The modules (or playbook) that need it.
      type: list
      elements: str
      sample: [day2_iso]
    why:
      description: What it is needed for.
      type: str
    role:
      description: The role of docs/rbac.md that grants it.
      type: str
      sample: openshift-agent-day2
"""

import copy

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule

from ansible_collections.openshift_agent.day2.plugins.module_utils._check import access
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.module import run_step

ARGUMENT_SPEC = {
    "plan": {
        "type": "list",
        "elements": "str",
        "choices": list(access.STEP_MODULES),
        "default": list(access.DEFAULT_PLAN),
    },
    "release": {"type": "str"},
    "run_tags": {"type": "list", "elements": "str"},
    "skip_tags": {"type": "list", "elements": "str", "default": []},
    "follow_from": {"type": "str", "choices": ["auto", "controller", "cluster"], "default": "auto"},
}


def main():
    module = AnsibleK8SModule(argument_spec={**copy.deepcopy(AUTH_ARG_SPEC), **ARGUMENT_SPEC}, supports_check_mode=True)
    run_step(module, "access_check", access.run)


if __name__ == "__main__":
    main()
