# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""openshift_agent.day2 module_utils, what every step uses: errors, the Kubernetes API client and its retry policy,
times, addresses, the release table.

This package is PRIVATE to the collection: it has no stable API and can change in any release. Do not import it
from other collections or from your own plugins and modules; use the collection's modules and roles instead.
"""
