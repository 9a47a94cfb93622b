# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment:
    # Attributes every module of this collection documents.
    DOCUMENTATION = r"""
options: {}
attributes:
  action_group:
    description: Use C(group/openshift_agent.day2.day2) in C(module_defaults) to set defaults for this module.
    support: full
    membership:
      - openshift_agent.day2.day2
"""

    # For modules that only read from the cluster.
    READ_ONLY = r"""
options: {}
attributes:
  check_mode:
    description: Can run in C(check_mode) and return changed status prediction without modifying target.
    support: full
    details:
      - The module only reads, so check mode behaves exactly like a normal run.
  diff_mode:
    description:
      Will return details on what has changed (or possibly needs changing in C(check_mode)), when in diff mode.
    support: none
"""

    # For modules that return facts.
    FACTS = r"""
options: {}
attributes:
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
    support: full
"""
