# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Raw-path access to the Kubernetes API through kubernetes.core's client.

The modules of this collection know the exact paths they need, so they skip
resource discovery and call ``DynamicClient.request`` directly: every call is
one HTTP request, which keeps the number of API calls small and predictable.
Errors are turned into :class:`ApiAccessError` with a message that names the
resource, the verb and what to do about it.
"""

import json

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error

try:
    from kubernetes.dynamic.exceptions import DynamicApiError
except ImportError:  # pragma: no cover - the module reports the missing library
    DynamicApiError = None

try:
    from urllib3.exceptions import HTTPError as Urllib3HTTPError
except ImportError:  # pragma: no cover
    Urllib3HTTPError = None


class ApiAccessError(Day2Error):
    """A request failed; ``status`` is the HTTP status or None when unreachable."""

    def __init__(self, message, status=None, target=None):
        super().__init__(message)
        self.status = status
        self.target = target


class Target:
    """What a request reads or writes, for error messages and RBAC hints."""

    def __init__(self, path, verb, resource, group="", name=None, namespace=None):
        self.path = path
        self.verb = verb
        self.resource = resource
        self.group = group
        self.name = name
        self.namespace = namespace

    def describe(self):
        what = self.resource if not self.group else "%s.%s" % (self.resource, self.group)
        where = " in namespace %s" % self.namespace if self.namespace else ""
        named = " %s" % self.name if self.name else ""
        return "%s %s%s%s" % (self.verb, what, named, where)

    def rbac_hint(self):
        scope = "a Role in namespace %s" % self.namespace if self.namespace else "a ClusterRole"
        return "grant verb %r on resource %r (apiGroup %r) through %s bound to this identity" % (
            self.verb,
            self.resource,
            self.group,
            scope,
        )


def _status_message(body):
    try:
        return json.loads(body).get("message") or body
    except (ValueError, TypeError, AttributeError):
        return body


def describe_api_error(error, target, api_url):
    """Return an ApiAccessError for a kubernetes client exception."""
    status = getattr(error, "status", None)
    if status is None:
        reason = getattr(error, "reason", None) or str(error)
        return ApiAccessError(
            "cannot reach the API server %s to %s: %s. Check the kubeconfig/host, "
            "the network path and the proxy settings." % (api_url, target.describe(), reason),
            target=target,
        )
    server_message = _status_message(getattr(error, "body", "")) or getattr(error, "reason", "")
    if status == 401:
        message = (
            "the API server %s rejected the credentials (401 Unauthorized) while trying to %s: "
            "the token or client certificate is invalid or expired. Log in again or fix the "
            "kubeconfig/api_key." % (api_url, target.describe())
        )
    elif status == 403:
        message = "permission denied (403 Forbidden) to %s: %s; %s." % (
            target.describe(),
            server_message,
            target.rbac_hint(),
        )
    elif status == 404:
        message = "%s: not found (404)" % target.describe()
    else:
        message = "the API server answered %s %s to %s: %s" % (
            status,
            getattr(error, "reason", ""),
            target.describe(),
            server_message,
        )
    return ApiAccessError(message, status=status, target=target)


class ApiClient:
    """Read objects by path; ``get`` returns None on 404."""

    def __init__(self, dynamic_client):
        self._client = dynamic_client
        self.api_url = getattr(getattr(dynamic_client, "configuration", None), "host", "?")
        self.calls = 0

    def request(self, method, target, body=None, raw=False, **params):
        """One API request; JSON responses are decoded, ``raw`` returns the text."""
        self.calls += 1
        try:
            response = self._client.request(method, target.path, body=body, serialize=False, **params)
        except Exception as error:  # pylint: disable=broad-except
            if _is_api_error(error):
                raise describe_api_error(error, target, self.api_url)
            raise
        data = response.data
        if isinstance(data, bytes):
            data = data.decode("utf-8", "replace")
        if raw:
            return data
        return json.loads(data) if data else None

    def get(self, target, **params):
        try:
            return self.request("GET", target, **params)
        except ApiAccessError as error:
            if error.status == 404:
                return None
            raise

    def create(self, target, body):
        return self.request("POST", target, body=body)

    def delete(self, target, missing_ok=True):
        """Delete in the background (dependents are garbage-collected); True when something was deleted."""
        try:
            self.request(
                "DELETE", target, body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
            )
            return True
        except ApiAccessError as error:
            if error.status == 404 and missing_ok:
                return False
            raise


def _is_api_error(error):
    if DynamicApiError is not None and isinstance(error, DynamicApiError):
        return True
    if Urllib3HTTPError is not None and isinstance(error, Urllib3HTTPError):
        return True
    return isinstance(error, (OSError, ConnectionError))


def _path(prefix, resource, name=None, namespace=None):
    parts = list(prefix)
    if namespace:
        parts += ["namespaces", namespace]
    parts.append(resource)
    if name:
        parts.append(name)
    return "/".join(parts)


def core_path(resource, name=None, namespace=None):
    return _path(["/api/v1"], resource, name, namespace)


def group_path(group, version, resource, name=None, namespace=None):
    return _path(["/apis", group, version], resource, name, namespace)


def with_query(target, **query):
    """The same target with query parameters added to its path."""
    pairs = "&".join("%s=%s" % (key, value) for key, value in sorted(query.items()) if value is not None)
    return Target(
        target.path + ("?" + pairs if pairs else ""),
        target.verb,
        target.resource,
        target.group,
        target.name,
        target.namespace,
    )


def core_target(resource, name=None, namespace=None, verb=None):
    return Target(
        core_path(resource, name, namespace),
        verb or ("get" if name else "list"),
        resource,
        "",
        name,
        namespace,
    )


def group_target(group, version, resource, name=None, namespace=None, verb=None):
    return Target(
        group_path(group, version, resource, name, namespace),
        verb or ("get" if name else "list"),
        resource,
        group,
        name,
        namespace,
    )


def connect(module):
    """(kubernetes.core K8SClient, ApiClient) for a module; connection problems become ApiAccessError.

    Creating the client already talks to the server (version and discovery), so an unreachable
    API or bad credentials surface here first.
    """
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client

    try:
        client = get_api_client(module=module)
    except Exception as error:  # pylint: disable=broad-except
        if not _is_api_error(error):
            raise
        pool = getattr(error, "pool", None)
        host = module.params.get("host") or (
            "%s://%s:%s" % (getattr(pool, "scheme", "https"), pool.host, pool.port) if pool else "(from the kubeconfig)"
        )
        raise describe_api_error(error, Target("/version", "get", "version"), host)
    return client, ApiClient(client.client)
