# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Raw-path access to the Kubernetes API through kubernetes.core's client: known paths, no discovery, one HTTP
request per call. Every failure, from the kubeconfig to an HTTP error, becomes :class:`ApiAccessError`, naming what
was used (kubeconfig, context, host, resource, verb) and what to do about it."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Any, Callable
from urllib.parse import quote

from ansible_collections.openshift_agent.day2.plugins.module_utils._common import retry as _retry
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

    def __init__(
        self,
        message: str,
        status: int | None = None,
        target: Target | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.target = target
        self.retry_after = retry_after


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
    retry_after = _retry.retry_after_seconds(getattr(error, "headers", None))
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
    return ApiAccessError(message, status=status, target=target, retry_after=retry_after)


def _attempt(error: BaseException) -> _retry.Attempt | None:
    """What the retry policy sees of an ApiAccessError (anything else is not retried)."""
    if isinstance(error, ApiAccessError):
        return _retry.Attempt(error.status, error.retry_after)
    return None


def _not_handled(attempt: _retry.Attempt) -> bool:
    """A write is repeated only after an answer that says it was not handled (429)."""
    return attempt.status in _retry.NOT_HANDLED_STATUSES


class ApiClient:
    """Reads and writes objects by path, one HTTP request per try; ``calls`` counts the tries, ``retries`` the
    tries that repeated one after a transient failure (retry.py): reads and deletes after any, writes after a 429
    only; :meth:`create` and :meth:`update_fresh` make the other writes safe to repeat."""

    # Repeated after any transient failure: reads (get, list, watch), delete (404 when done: delete() takes it).
    IDEMPOTENT = ("GET", "HEAD", "DELETE")

    def __init__(
        self,
        dynamic_client: Any,
        policy: _retry.RetryPolicy = _retry.DEFAULT_POLICY,
        sleep: Callable[[float], Any] = time.sleep,
    ) -> None:
        self._client, self.policy, self._sleep = dynamic_client, policy, sleep
        self.api_url: str = getattr(getattr(dynamic_client, "configuration", None), "host", "?")
        self.calls = self.retries = 0

    def _once(self, method: str, target: Target, body: Any, raw: bool, params: dict[str, Any]) -> Any:
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

    def _counted(self, _retry_number: int, _attempt: _retry.Attempt, _wait: float) -> None:
        self.retries += 1

    def request(self, method: str, target: Target, body: Any = None, raw: bool = False, **params: Any) -> Any:
        """One API request, repeated under the policy; a JSON answer is decoded, ``raw`` returns the text.
        Failures are ApiAccessError (the last one when the tries are used up)."""
        method = method.upper()
        return _retry.call(
            lambda: self._once(method, target, body, raw, params),
            self.policy,
            _attempt,
            None if method in self.IDEMPOTENT or _retry.is_question(method, target.path) else _not_handled,
            sleep=self._sleep,
            on_retry=self._counted,
        )

    def get(self, target: Target, **params: Any) -> Any:
        """The object (or list) at ``target``, None when it does not exist."""
        try:
            return self.request("GET", target, **params)
        except ApiAccessError as error:
            if error.status == 404:
                return None
            raise

    def create(self, target: Target, body: dict[str, Any]) -> Any:
        """Create ``body`` at ``target``; after a failure that leaves it in doubt (no answer, a 5xx), look for it
        first (by name; a generateName object by its labels, so it is never created twice; none without labels)
        and create it again only when it is not there; a 409 then is ours when it carries our labels."""
        try:
            return self.request("POST", target, body=body)
        except ApiAccessError as error:
            if not self.policy.transient(error.status):
                raise
            doubt = error
        meta = body.get("metadata") or {}
        if not meta.get("name") and not meta.get("labels"):
            raise doubt
        for retry in range(1, self.policy.attempts):
            self.retries += 1
            self._sleep(self.policy.backoff(retry, doubt.retry_after))
            found = self._readable(target, meta)
            if found is not None:
                return found
            try:
                return self.request("POST", target, body=body)
            except ApiAccessError as error:
                if error.status == 409 and meta.get("name"):
                    found = self._readable(target, meta, forbidden=body)
                    if found is not None:
                        return found
                if not self.policy.transient(error.status):
                    raise
                doubt = error
        raise doubt

    def _readable(self, target: Target, meta: dict[str, Any], forbidden: Any = None) -> Any:
        """_find_created; ``forbidden`` when the identity may create but not read it (docs/rbac.md: no get on
        node-joiner's service account and config map, where a 409 can only be the lost try)."""
        try:
            return self._find_created(target, meta)
        except ApiAccessError as error:
            if error.status != 403:
                raise
        return forbidden

    def _find_created(self, target: Target, meta: dict[str, Any]) -> Any:
        """The object a create of ``meta`` (name or generateName, labels) made, None when there is none."""
        wanted = meta.get("labels") or {}
        if meta.get("name"):
            found = self.get(dataclasses.replace(target, path="%s/%s" % (target.path, meta["name"]), verb="get"))
            if found is None:
                return None
            labels = (found.get("metadata") or {}).get("labels") or {}
            if any(labels.get(key) != value for key, value in wanted.items()):
                raise ApiAccessError(
                    "%s %s already exists and is not the one this run created (its labels differ from %s): "
                    "delete it or let the run use another name" % (target.resource, meta["name"], wanted),
                    status=409,
                    target=target,
                )
            return found
        listed = self.get(with_query(dataclasses.replace(target, verb="list"), labelSelector=label_selector(wanted)))
        prefix = meta.get("generateName") or ""
        items = [
            item
            for item in (listed or {}).get("items") or []
            if ((item.get("metadata") or {}).get("name") or "").startswith(prefix)
        ]
        return items[0] if items else None

    def update_fresh(
        self,
        get_target: Target,
        put_target: Target,
        change: Callable[[dict[str, Any]], dict[str, Any] | None],
    ) -> dict[str, Any] | None:
        """Change an object safely: GET it, ``change(fresh)`` returns the body to PUT (None: nothing to do, for
        example an approval already made), PUT it; after a conflict (409: someone changed it) or a transient
        failure, GET it again and ask ``change`` again. Returns the object as the API server last answered it,
        None when it does not exist. Other failures are ApiAccessError."""
        for retry in range(self.policy.attempts):
            fresh = self.get(get_target)
            if fresh is None:
                return None
            body = change(fresh)
            if body is None:
                return fresh
            try:
                return self.request("PUT", put_target, body=body)
            except ApiAccessError as error:
                if error.status != 409 and not self.policy.transient(error.status):
                    raise
                if retry + 1 >= self.policy.attempts:
                    raise
                self.retries += 1
                self._sleep(self.policy.backoff(retry + 1, error.retry_after))
        return None  # pragma: no cover - the loop returns or raises

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


def label_selector(labels: dict[str, str]) -> str:
    """``key=value,...`` of ``labels``, quoted for a query string."""
    return quote(",".join("%s=%s" % (key, value) for key, value in sorted(labels.items())), safe="")


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
    path = _path(["/api/v1"], resource, name, namespace)
    return Target(path, verb or ("get" if name else "list"), resource, "", name, namespace)


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


def connect(
    module: Any, policy: _retry.RetryPolicy = _retry.DEFAULT_POLICY, sleep: Callable[[float], Any] = time.sleep
) -> tuple[Any, ApiClient]:
    """(kubernetes.core K8SClient, ApiClient) for a module; every problem getting there becomes ApiAccessError.

    Creating the client loads the kubeconfig (a missing file, a bad context: kubernetes.core's CoreException)
    and already talks to the server (version and discovery), so an unreachable API or bad credentials surface
    here first.
    """
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client

    def attempt() -> Any:
        try:
            return get_api_client(module=module)
        except _CONFIG_ERRORS + API_ERRORS as error:
            described = connection_error(error, module)
            if isinstance(error, _CONFIG_ERRORS) or (isinstance(error, OSError) and error.filename):
                raise _Final(described)  # a kubeconfig or a file to fix: trying again changes nothing
            raise described

    # Discovery is reads only: a transient failure there is tried again like any read.
    try:
        client = _retry.call(attempt, policy, _attempt, sleep=sleep)
    except _Final as final:
        raise final.error from None
    return client, ApiClient(client.client, policy, sleep)


class _Final(Exception):
    """Carries an ApiAccessError that is not tried again out of connect's retry loop."""

    def __init__(self, error: ApiAccessError) -> None:
        super().__init__(error.message)
        self.error = error
