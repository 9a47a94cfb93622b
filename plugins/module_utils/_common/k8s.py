# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Raw-path access to the Kubernetes API through kubernetes.core's client.

The modules of this collection know the exact paths they need, so they skip resource discovery and call
``DynamicClient.request`` directly: every call is one HTTP request, which keeps the number of API calls small and
predictable. Every failure, from loading the kubeconfig to an HTTP error, becomes :class:`ApiAccessError` with a
message that names what was used (kubeconfig, context, host, resource, verb) and what to do about it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error

# What a request or a connection raises when the API cannot be reached or answers with an error status.
API_ERRORS: tuple[type[BaseException], ...] = (OSError,)
# What loading the client's configuration raises: kubernetes.core wraps the kubernetes client's ConfigException
# in CoreException (kubernetes.core 6.6.0 plugins/module_utils/k8s/client.py, get_api_client); a kubeconfig that
# is not YAML surfaces as the YAML parser's error.
_CONFIG_ERRORS: tuple[type[BaseException], ...] = ()

try:
    from kubernetes.dynamic.exceptions import DynamicApiError
except ImportError:  # pragma: no cover - AnsibleK8SModule reports the missing library
    pass
else:
    API_ERRORS += (DynamicApiError,)

try:
    from urllib3.exceptions import HTTPError as Urllib3HTTPError
except ImportError:  # pragma: no cover
    pass
else:
    API_ERRORS += (Urllib3HTTPError,)

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException
except ImportError:  # pragma: no cover - the collection depends on kubernetes.core
    pass
else:
    _CONFIG_ERRORS += (CoreException,)

try:
    from yaml import YAMLError
except ImportError:  # pragma: no cover - AnsibleK8SModule reports a missing PyYAML
    pass
else:
    _CONFIG_ERRORS += (YAMLError,)


class ApiAccessError(Day2Error):
    """The API cannot be used: ``status`` is the HTTP status, None when nothing answered (or no client exists)."""

    def __init__(self, message: str, status: int | None = None, target: Target | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.target = target


@dataclasses.dataclass(frozen=True)
class Target:
    """What a request reads or writes (its path, RBAC verb and resource), for error messages and RBAC hints."""

    path: str
    verb: str
    resource: str
    group: str = ""
    name: str | None = None
    namespace: str | None = None

    def describe(self) -> str:
        what = self.resource if not self.group else "%s.%s" % (self.resource, self.group)
        where = " in namespace %s" % self.namespace if self.namespace else ""
        named = " %s" % self.name if self.name else ""
        return "%s %s%s%s" % (self.verb, what, named, where)

    def rbac_hint(self) -> str:
        scope = "a Role in namespace %s" % self.namespace if self.namespace else "a ClusterRole"
        return "grant verb %r on resource %r (apiGroup %r) through %s bound to this identity" % (
            self.verb,
            self.resource,
            self.group,
            scope,
        )


def _status_message(body: Any) -> Any:
    try:
        return json.loads(body).get("message") or body
    except (ValueError, TypeError, AttributeError):
        return body


def describe_api_error(error: BaseException, target: Target, api_url: str) -> ApiAccessError:
    """The ApiAccessError for an exception of the kubernetes client (or the network) while doing ``target``."""
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
    """Reads and writes objects by path, one HTTP request per call; ``calls`` counts them."""

    def __init__(self, dynamic_client: Any) -> None:
        self._client = dynamic_client
        self.api_url: str = getattr(getattr(dynamic_client, "configuration", None), "host", "?")
        self.calls = 0

    def request(self, method: str, target: Target, body: Any = None, raw: bool = False, **params: Any) -> Any:
        """One API request; a JSON answer is decoded, ``raw`` returns the text. Failures are ApiAccessError."""
        self.calls += 1
        try:
            response = self._client.request(method, target.path, body=body, serialize=False, **params)
        except API_ERRORS as error:
            raise describe_api_error(error, target, self.api_url)
        data = response.data
        if isinstance(data, bytes):
            data = data.decode("utf-8", "replace")
        if raw:
            return data
        return json.loads(data) if data else None

    def get(self, target: Target, **params: Any) -> Any:
        """The object (or list) at ``target``, None when it does not exist."""
        try:
            return self.request("GET", target, **params)
        except ApiAccessError as error:
            if error.status == 404:
                return None
            raise

    def create(self, target: Target, body: dict[str, Any]) -> Any:
        return self.request("POST", target, body=body)

    def delete(self, target: Target, missing_ok: bool = True) -> bool:
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


def _path(prefix: list[str], resource: str, name: str | None = None, namespace: str | None = None) -> str:
    parts = list(prefix)
    if namespace:
        parts += ["namespaces", namespace]
    parts.append(resource)
    if name:
        parts.append(name)
    return "/".join(parts)


def with_query(target: Target, **query: Any) -> Target:
    """The same target with query parameters (those not None) added to its path."""
    pairs = "&".join("%s=%s" % (key, value) for key, value in sorted(query.items()) if value is not None)
    return dataclasses.replace(target, path=target.path + ("?" + pairs if pairs else ""))


def core_target(
    resource: str, name: str | None = None, namespace: str | None = None, verb: str | None = None
) -> Target:
    """A resource of the core API group (``/api/v1``); the verb is ``get`` for a named object, else ``list``."""
    return Target(
        _path(["/api/v1"], resource, name, namespace),
        verb or ("get" if name else "list"),
        resource,
        "",
        name,
        namespace,
    )


def group_target(
    group: str,
    version: str,
    resource: str,
    name: str | None = None,
    namespace: str | None = None,
    verb: str | None = None,
) -> Target:
    """A resource of an API group (``/apis/<group>/<version>``); the verb as for :func:`core_target`."""
    path = _path(["/apis", group, version], resource, name, namespace)
    return Target(path, verb or ("get" if name else "list"), resource, group, name, namespace)


def _auth_value(module: Any, name: str) -> Any:
    """An authentication option as kubernetes.core reads it: the module's parameter, else ``K8S_AUTH_<NAME>``."""
    value = module.params.get(name)
    return value if value is not None else os.environ.get("K8S_AUTH_%s" % name.upper())


def describe_connection(module: Any) -> str:
    """What the client is made from, as kubernetes.core chooses it: the host with credentials, else a kubeconfig."""
    host = _auth_value(module, "host")
    credentials = (
        _auth_value(module, "api_key")
        or (_auth_value(module, "username") and _auth_value(module, "password"))
        or (_auth_value(module, "client_cert") and _auth_value(module, "client_key"))
    )
    if host and credentials:
        return "host %s" % host
    kubeconfig = _auth_value(module, "kubeconfig")
    if isinstance(kubeconfig, dict):
        used = "the kubeconfig given as a dict"
    elif kubeconfig:
        used = "the kubeconfig %s" % kubeconfig
    else:
        used = "the default kubeconfig (%s)" % (os.environ.get("KUBECONFIG") or "~/.kube/config")
    context = _auth_value(module, "context")
    used += " with context %s" % context if context else " with its current-context"
    return used + (" and host %s" % host if host else "")


def _config_fix(reason: str) -> str:
    if "context" in reason:
        return (
            "Set context to a context the kubeconfig defines (oc config get-contexts lists them), or leave it "
            "unset and give the kubeconfig a current-context (oc config use-context)."
        )
    return (
        "Point kubeconfig (or K8S_AUTH_KUBECONFIG) at a readable kubeconfig of the cluster, such as the "
        "installer's auth/kubeconfig or the one oc login writes, or pass host with api_key."
    )


def connection_error(error: BaseException, module: Any) -> ApiAccessError:
    """The ApiAccessError for a failure to create the API client (one of ``_CONFIG_ERRORS`` or ``API_ERRORS``)."""
    used = describe_connection(module)
    if isinstance(error, _CONFIG_ERRORS):
        reason = " ".join(str(error).split())
        return ApiAccessError("cannot load %s: %s. %s" % (used, reason, _config_fix(reason)))
    if isinstance(error, OSError) and error.filename:
        return ApiAccessError(
            "cannot read %s (%s), named by %s or its ca_cert, client_cert or client_key. Check that the path "
            "exists and is readable by the user that runs the module." % (error.filename, error.strerror, used)
        )
    pool = getattr(error, "pool", None)
    where = "%s://%s:%s" % (getattr(pool, "scheme", "https"), pool.host, pool.port) if pool else "named by " + used
    return describe_api_error(error, Target("/version", "get", "version"), where)


def connect(module: Any) -> tuple[Any, ApiClient]:
    """(kubernetes.core K8SClient, ApiClient) for a module; every problem getting there becomes ApiAccessError.

    Creating the client loads the kubeconfig (a missing file, a bad context: kubernetes.core's CoreException)
    and already talks to the server (version and discovery), so an unreachable API or bad credentials surface
    here first.
    """
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client

    try:
        client = get_api_client(module=module)
    except _CONFIG_ERRORS + API_ERRORS as error:
        raise connection_error(error, module)
    return client, ApiClient(client.client)
