# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: iso_serve
short_description: Serve the node ISO to the BMCs from the controller for the duration of the boot
version_added: 0.1.0
author:
  - openshift_agent.day2 developers (@openshift-agent-day2)
description:
  - "An action plugin: it runs on the controller. With O(state=started) it starts a small HTTP (or HTTPS) server
    for the ISO of O(artifacts) and returns its URL; with O(state=stopped) it stops the server of O(workdir)."
  - "The URL has a secret path segment, new for every start (24 random bytes, URL-safe base64): only who is told
    the URL (the BMCs, through virtual-media insert) can fetch the ISO. The server answers C(GET) and C(HEAD) of
    that one path, with single byte ranges (C(206 Partial Content)), which BMCs use to read virtual media; every
    other method is C(405), every other path C(404), and nothing is listed."
  - "The ISO holds the cluster's pull secret and the node-joiner's agent tokens: whoever fetches it can pull the
    release images with the cluster's credentials and talk to the new hosts' agents. Serve it only on the
    network the BMCs use (O(address)), with HTTPS (O(tls_cert), O(tls_key)) where the BMCs support it."
  - "The server never outlives the run: it runs in its own session and watches ansible-playbook's process; it
    exits within a second of the run ending, whatever ended it (success, failure, Ctrl-C, SIGKILL). It stops
    too when a later task calls this module with O(state=stopped) (the role's join step does, once every host
    joined), and after O(timeout) seconds in any case."
  - "Check mode starts nothing; with O(state=stopped) it says whether a server is running."
options:
  state:
    description: Start a server for the ISO of O(artifacts), or stop the server of O(workdir).
    type: str
    choices: [started, stopped]
    default: started
  artifacts:
    description:
      - What M(openshift_agent.day2.day2_iso) built (its C(artifacts)); with O(state=started) it must be exactly one
        ISO, which is served (the URL ends with its file name). Several ISOs (hosts of several architectures) are
        refused, naming them.
    type: list
    elements: dict
    default: []
  workdir:
    description:
      - Directory for the server's pidfile (C(iso-serve.pid)), secret (C(iso-serve.token), mode 0600) and access
        log (C(iso-serve.log), without the secret path). A server this directory's pidfile names is stopped
        before another starts.
    type: path
    required: true
  address:
    description:
      - Where the server listens, C(host:port), C([v6]:port), C(host) or C(:port). Port 0 (or none) takes a free
        port. The server listens on this one address, which the URL names; with no host (or C(0.0.0.0), C(::)) it
        listens on the controller's address that routes to the first BMC of O(hosts), never on every address (the
        ISO holds the pull secret).
    type: str
    default: ""
  hosts:
    description:
      - The hosts booted from it, as M(openshift_agent.day2.workers_check) returns them; their BMCs' C(bmc_base_url)
        choose the URL's host when O(address) names none.
    type: list
    elements: dict
    default: []
  tls_cert:
    description: Certificate (PEM, with its chain) for HTTPS; with O(tls_key). Without both, plain HTTP.
    type: path
  tls_key:
    description: Private key (PEM) of O(tls_cert).
    type: path
  timeout:
    description: Seconds after which the server stops in any case (at least 60).
    type: int
    default: 7200
notes:
  - The BMCs must reach the controller at O(address). A firewall on the controller must let them in on that port.
attributes:
  check_mode:
    support: full
    description: Starts and stops nothing; O(state=stopped) returns whether a server runs (RV(pid)).
  diff_mode:
    support: none
    description: Not supported.
"""

EXAMPLES = r"""
- name: Serve the ISO to the BMCs
  openshift_agent.day2.iso_serve:
    artifacts: [{architecture: x86_64, path: /var/tmp/day2/node.x86_64.iso}]
    workdir: /var/tmp/day2
    address: 192.168.111.1:8080
  register: served
  no_log: true  # the URL holds the secret path

- name: Stop serving once every disk is written
  openshift_agent.day2.iso_serve:
    state: stopped
    workdir: /var/tmp/day2
"""

RETURN = r"""
url:
  description: The URL to give the BMCs, secret path included (register it with C(no_log)).
  returned: state=started
  type: str
display_url:
  description: The URL with its secret path replaced by C((secret)), for messages.
  returned: state=started
  type: str
  sample: http://192.168.111.1:8080/(secret)/node.x86_64.iso
address:
  description: The address and port the server listens on.
  returned: state=started
  type: str
pid:
  description: The server's process id.
  returned: success
  type: int
pidfile:
  description: The server's pidfile.
  returned: state=started
  type: str
log:
  description: The server's access log.
  returned: state=started
  type: str
msg:
  description: Where the ISO is served (the URL without its secret path, the listening address) and that it holds
    the pull secret.
  returned: state=started
  type: str
stopped:
  description: Whether a running server was stopped.
  returned: state=stopped
  type: bool
"""
