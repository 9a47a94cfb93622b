# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes API through kubernetes.core's client: known paths, no discovery, one HTTP request per try, under
the one retry policy of the collection; and the fields of the objects it returns, read without KeyErrors.

Every failure, from the kubeconfig to an HTTP error, becomes :class:`ApiAccessError`, naming what was used
(kubeconfig, context, host, resource, verb) and what to do about it.

What is transient: no answer at all (a refused or reset connection, a timeout: ``status`` None), 429 Too Many
Requests and the 5xx answers an API server gives while it is restarted, loses its etcd leader or sheds load
(500, 502, 503, 504). A 429 of max-in-flight or API Priority and Fairness is sent before the request is handled,
with ``Retry-After: 1`` -- kubernetes/kubernetes
staging/src/k8s.io/apiserver/pkg/server/filters/maxinflight.go@e4b6dc5a70de2c18b80897d104473342bc5452e5
(``tooManyRequests``) -- so any request may be sent again after a 429; reads (GET, LIST, WATCH) and DELETEs may be
sent again after any transient failure; a create only where a second try cannot make a second object
(:meth:`ApiClient.create`), an update only on a fresh read (:meth:`ApiClient.update_fresh`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import time
from typing import Any, Callable, NamedTuple, TypeVar
from urllib.parse import quote

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error

T = TypeVar("T")
# What a request or a connection raises when the API cannot be reached or answers with an error status.
API_ERRORS: tuple[type[BaseException], ...] = (OSError,)
# What loading the client's configuration raises: kubernetes.core wraps the kubernetes client's ConfigException
# in CoreException (kubernetes.core 6.6.0 plugins/module_utils/k8s/client.py, get_api_client); a kubeconfig that
# is not YAML surfaces as the YAML parser's error.
_CONFIG_ERRORS: tuple[type[BaseException], ...] = ()
try:
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException
    from kubernetes.dynamic.exceptions import DynamicApiError
    from urllib3.exceptions import HTTPError as Urllib3HTTPError
    from yaml import YAMLError
except ImportError:  # pragma: no cover - AnsibleK8SModule reports the missing libraries
    pass
else:
    API_ERRORS += (DynamicApiError, Urllib3HTTPError)
    _CONFIG_ERRORS += (CoreException, YAMLError)

# --- the retry policy ------------------------------------------------------------------------------------------

# Answers worth another try; 501 Not Implemented and 505 are not transient.
TRANSIENT_STATUSES = frozenset((429, 500, 502, 503, 504))
# Reviews (selfsubjectaccessreviews, selfsubjectrulesreviews, subjectaccessreviews, localsubjectaccessreviews,
# tokenreviews) are questions: kube-apiserver answers the POST and stores nothing, so asking again after a lost
# answer or a 5xx changes nothing, like a read (the access check asks them before any write).
QUESTIONS = frozenset(
    f"{kind}reviews"
    for kind in ("selfsubjectaccess", "selfsubjectrules", "subjectaccess", "localsubjectaccess", "token")
)


def is_question(method: str, path: str) -> bool:
    """Whether the request at ``path`` asks a review (a POST that writes nothing, safe to repeat)."""
    return method.upper() == "POST" and path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] in QUESTIONS


def is_transient(status: int | None) -> bool:
    """Whether a failure with this HTTP status (None: no answer at all) may well pass on the next try."""
    return status is None or status in TRANSIENT_STATUSES


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff: at most ``attempts`` tries, waits of ``base * factor**n`` capped at ``cap``
    (with jitter: between half and all of it), a ``Retry-After`` honoured up to ``retry_after_cap``, and never
    more than ``budget`` seconds of waiting in all."""

    attempts: int = 6
    base: float = 0.5
    factor: float = 2.0
    cap: float = 8.0
    retry_after_cap: float = 30.0
    budget: float = 60.0

    def backoff(self, retry: int, retry_after: float | None = None, rand: Callable[[], float] = random.random) -> float:
        """The wait before retry number ``retry`` (1 for the first retry)."""
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.retry_after_cap)
        full = min(self.cap, self.base * self.factor ** (retry - 1))
        return full / 2 + rand() * full / 2


DEFAULT_POLICY = RetryPolicy()  # what the modules use; unit tests pass their own


def retry_after_seconds(headers: Any) -> float | None:
    """The ``Retry-After`` of an answer's headers in seconds (a number; an HTTP date is not used by API servers
    and is ignored), None when there is none or it cannot be read."""
    try:
        seconds = float(str(headers.get("Retry-After") or headers.get("retry-after")).strip())
    except (AttributeError, TypeError, ValueError):
        return None
    return seconds if seconds >= 0 else None


class Attempt(NamedTuple):
    """What one failed try tells the policy: its status (None: no answer) and its Retry-After."""

    status: int | None
    retry_after: float | None = None


def call(
    function: Callable[[], T],
    policy: RetryPolicy,
    classify: Callable[[BaseException], Attempt | None],
    retryable: Callable[[Attempt], bool] | None = None,
    sleep: Callable[[float], Any] = time.sleep,
    rand: Callable[[], float] = random.random,
) -> T:
    """``function()`` under ``policy``.

    ``classify(error)`` returns the Attempt of an error the policy may look at, None for an error that is passed
    on at once. ``retryable(attempt)`` (default: ``is_transient(attempt.status)``) decides whether the error
    is tried again. The last error is raised when the tries or the waiting budget are used up.
    """
    decide = retryable or (lambda attempt: is_transient(attempt.status))
    waited, retry = 0.0, 0
    while True:
        try:
            return function()
        except Exception as error:  # pylint: disable=broad-except
            attempt = classify(error)
            if attempt is None or not decide(attempt):
                raise
            retry += 1
            wait = policy.backoff(retry, attempt.retry_after, rand)
            if retry >= policy.attempts or waited + wait > policy.budget:
                raise
            sleep(wait)
            waited += wait


# --- requests --------------------------------------------------------------------------------------------------


class ApiAccessError(Day2Error):
    """The API cannot be used: ``status`` is the HTTP status, None when nothing answered (or no client exists)."""

    def __init__(
        self, message: str, status: int | None = None, target: Target | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.target, self.retry_after = status, target, retry_after


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
        what = f"{self.resource}.{self.group}" if self.group else self.resource
        named = f" {self.name}" if self.name else ""
        return f"{self.verb} {what}{named}" + (f" in namespace {self.namespace}" if self.namespace else "")


def describe_api_error(error: BaseException, target: Target, api_url: str) -> ApiAccessError:
    """The ApiAccessError for an exception of the kubernetes client (or the network) while doing ``target``."""
    status, reason, doing = getattr(error, "status", None), getattr(error, "reason", None), target.describe()
    body = getattr(error, "body", "")
    try:
        server_message = json.loads(body).get("message") or body
    except (ValueError, TypeError, AttributeError):
        server_message = body
    server_message = server_message or reason or ""
    scope = f"a Role in namespace {target.namespace}" if target.namespace else "a ClusterRole"
    messages = {
        None: f"cannot reach the API server {api_url} to {doing}: {reason or error}. Check the kubeconfig/host, the "
        "network path and the proxy settings.",
        401: f"the API server {api_url} rejected the credentials (401 Unauthorized) while trying to {doing}: the token "
        "or client certificate is invalid or expired. Log in again or fix the kubeconfig/api_key.",
        403: f"permission denied (403 Forbidden) to {doing}: {server_message}; grant verb {target.verb!r} on resource "
        f"{target.resource!r} (apiGroup {target.group!r}) through {scope} bound to this identity.",
        404: f"{doing}: not found (404)",
    }
    message = messages.get(status) or f"the API server answered {status} {reason or ''} to {doing}: {server_message}"
    return ApiAccessError(message, status, target, retry_after_seconds(getattr(error, "headers", None)))


def _attempt(error: BaseException) -> Attempt | None:
    """What the retry policy sees of an ApiAccessError (anything else is not retried)."""
    return Attempt(error.status, error.retry_after) if isinstance(error, ApiAccessError) else None


class ApiClient:
    """Reads and writes objects by path, one HTTP request per try (``calls`` counts them), repeated after a
    transient failure: reads and deletes after any, writes after a 429 only; :meth:`create` and
    :meth:`update_fresh` make the other writes safe to repeat."""

    # Repeated after any transient failure: reads (get, list, watch), delete (404 when done: delete() takes it).
    IDEMPOTENT = ("GET", "HEAD", "DELETE")

    def __init__(
        self, dynamic_client: Any, policy: RetryPolicy = DEFAULT_POLICY, sleep: Callable[[float], Any] = time.sleep
    ) -> None:
        self._client, self.policy, self._sleep = dynamic_client, policy, sleep
        # The kubernetes client's configuration (host, credentials, TLS), for the exec WebSocket.
        self.configuration: Any = getattr(dynamic_client, "configuration", None)
        self.api_url: str = getattr(self.configuration, "host", "?")
        self.calls = 0

    def _once(self, method: str, target: Target, body: Any, raw: bool, params: dict[str, Any]) -> Any:
        self.calls += 1
        try:
            data = self._client.request(method, target.path, body=body, serialize=False, **params).data
        except API_ERRORS as error:
            raise describe_api_error(error, target, self.api_url)
        if isinstance(data, bytes):
            data = data.decode("utf-8", "replace")
        return data if raw else (json.loads(data) if data else None)

    def _call(self, function: Callable[[], T], retryable: Callable[[Attempt], bool] | None = None) -> T:
        return call(function, self.policy, _attempt, retryable, self._sleep)

    def request(self, method: str, target: Target, body: Any = None, raw: bool = False, **params: Any) -> Any:
        """One API request, repeated under the policy; a JSON answer is decoded, ``raw`` returns the text.
        Failures are ApiAccessError (the last one when the tries are used up)."""
        method = method.upper()
        # A 429 says the request was not handled at all (sent before the handler): safe for every verb.
        only_429 = None if method in self.IDEMPOTENT or is_question(method, target.path) else lambda a: a.status == 429
        return self._call(lambda: self._once(method, target, body, raw, params), only_429)

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
        meta: dict[str, Any] = body.get("metadata") or {}
        tries: list[int] = []

        def attempt() -> Any:
            found = self._made(target, meta) if tries else None
            if found is not None:
                return found
            tries.append(1)
            try:
                return self.request("POST", target, body=body)
            except ApiAccessError as error:
                in_doubt = len(tries) > 1 and error.status == 409 and meta.get("name")
                found = self._made(target, meta, body) if in_doubt else None
                if found is None:
                    raise
                return found

        findable = bool(meta.get("name") or meta.get("labels"))
        return self._call(attempt, lambda failed: findable and is_transient(failed.status))

    def _made(self, target: Target, meta: dict[str, Any], forbidden: Any = None) -> Any:
        """The object a create of ``meta`` (name or generateName, labels) made, None when there is none;
        ``forbidden`` when the identity may create but not read it (docs/rbac.md: no get on node-joiner's service
        account and config map, where a 409 can only be the lost try)."""
        wanted, name = meta.get("labels") or {}, meta.get("name")
        try:
            if not name:
                selector = quote(",".join(f"{key}={value}" for key, value in sorted(wanted.items())), safe="")
                listed = self.get(with_query(dataclasses.replace(target, verb="list"), labelSelector=selector))
                prefix = meta.get("generateName") or ""
                items = dig(listed, "items", default=[])
                return next((i for i in items if dig(i, "metadata", "name", default="").startswith(prefix)), None)
            found = self.get(dataclasses.replace(target, path=f"{target.path}/{name}", verb="get"))
        except ApiAccessError as error:
            if error.status != 403:
                raise
            return forbidden
        labels = dig(found, "metadata", "labels", default={})
        if found is not None and any(labels.get(key) != value for key, value in wanted.items()):
            what = f"{target.resource} {name} already exists and is not the one this run created"
            fix = "delete it or let the run use another name"
            raise ApiAccessError(f"{what} (its labels differ from {wanted}): {fix}", 409, target)
        return found

    def update_fresh(
        self, target: Target, change: Callable[[dict[str, Any]], tuple[str, Target, Any] | None], **params: Any
    ) -> dict[str, Any] | None:
        """Change an object safely: GET ``target``; ``change(fresh)`` returns the write to send, ``(method, target,
        body)`` -- a PUT of the fresh object changed (an approval), a merge-patch that carries the fresh
        ``metadata.resourceVersion`` -- or None when nothing is left to do. After a conflict (409: someone changed it
        since the GET) or a transient failure, GET it again and ask ``change`` again. Returns the object as the API
        server last answered it, None when it does not exist; other failures are ApiAccessError. ``params`` go with
        the write (``content_type``)."""

        def attempt() -> dict[str, Any] | None:
            fresh = self.get(target)
            write = None if fresh is None else change(fresh)
            return fresh if write is None else self.request(write[0], write[1], body=write[2], **params)

        return self._call(attempt, lambda failed: failed.status == 409 or is_transient(failed.status))

    def delete(self, target: Target, missing_ok: bool = True) -> bool:
        """Delete in the background (dependents are garbage-collected); True when something was deleted."""
        background = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        try:
            self.request("DELETE", target, body=background)
            return True
        except ApiAccessError as error:
            if error.status == 404 and missing_ok:
                return False
            raise


def with_query(target: Target, **query: Any) -> Target:
    """The same target with query parameters (those not None) added to its path."""
    pairs = "&".join(f"{key}={value}" for key, value in sorted(query.items()) if value is not None)
    return dataclasses.replace(target, path=target.path + ("?" + pairs if pairs else ""))


def group_target(
    group: str, version: str, resource: str, name: str | None = None, namespace: str | None = None, verb: str = ""
) -> Target:
    """A resource of an API group (``/apis/<group>/<version>``, the core group ``/api/v1`` when ``group`` is "");
    the verb is ``get`` for a named object, else ``list``."""
    parts = ["/apis", group, version] if group else ["/api", "v1"]
    parts += ["namespaces", namespace] if namespace else []
    parts += [resource, name] if name else [resource]
    return Target("/".join(parts), verb or ("get" if name else "list"), resource, group, name, namespace)


def core_target(resource: str, name: str | None = None, namespace: str | None = None, verb: str = "") -> Target:
    """A resource of the core API group (``/api/v1``); the verb as for :func:`group_target`."""
    return group_target("", "v1", resource, name, namespace, verb)


# --- the connection --------------------------------------------------------------------------------------------


def describe_connection(module: Any) -> str:
    """What the client is made from, as kubernetes.core chooses it: the host with credentials, else a kubeconfig.
    An option is the module's parameter, else ``K8S_AUTH_<NAME>``, as kubernetes.core reads it."""

    def auth(name: str) -> Any:
        value = module.params.get(name)
        return value if value is not None else os.environ.get(f"K8S_AUTH_{name.upper()}")

    host, kubeconfig, context = auth("host"), auth("kubeconfig"), auth("context")
    if host and (
        auth("api_key") or (auth("username") and auth("password")) or (auth("client_cert") and auth("client_key"))
    ):
        return f"host {host}"
    if isinstance(kubeconfig, dict):
        used = "the kubeconfig given as a dict"
    elif kubeconfig:
        used = f"the kubeconfig {kubeconfig}"
    else:
        used = f"the default kubeconfig ({os.environ.get('KUBECONFIG') or '~/.kube/config'})"
    used += f" with context {context}" if context else " with its current-context"
    return used + (f" and host {host}" if host else "")


def _final(error: BaseException | None) -> bool:
    """A kubeconfig or a file to fix: trying again changes nothing."""
    return isinstance(error, _CONFIG_ERRORS) or (isinstance(error, OSError) and bool(error.filename))


def connection_error(error: BaseException, module: Any) -> ApiAccessError:
    """The ApiAccessError for a failure to create the API client (one of ``_CONFIG_ERRORS`` or ``API_ERRORS``)."""
    used = describe_connection(module)
    if isinstance(error, _CONFIG_ERRORS):
        reason = " ".join(str(error).split())
        fix = (
            "Set context to a context the kubeconfig defines (oc config get-contexts lists them), or leave it unset "
            "and give the kubeconfig a current-context (oc config use-context)."
            if "context" in reason
            else "Point kubeconfig (or K8S_AUTH_KUBECONFIG) at a readable kubeconfig of the cluster, such as the "
            "installer's auth/kubeconfig or the one oc login writes, or pass host with api_key."
        )
        return ApiAccessError(f"cannot load {used}: {reason}. {fix}")
    if isinstance(error, OSError) and error.filename:
        return ApiAccessError(
            f"cannot read {error.filename} ({error.strerror}), named by {used} or its ca_cert, client_cert or "
            "client_key. Check that the path exists and is readable by the user that runs the module."
        )
    pool = getattr(error, "pool", None)
    where = f"{getattr(pool, 'scheme', 'https')}://{pool.host}:{pool.port}" if pool else "named by " + used
    return describe_api_error(error, Target("/version", "get", "version"), where)


def connect(
    module: Any, policy: RetryPolicy = DEFAULT_POLICY, sleep: Callable[[float], Any] = time.sleep
) -> tuple[Any, ApiClient]:
    """(kubernetes.core K8SClient, ApiClient) for a module; every problem getting there becomes ApiAccessError.

    Creating the client loads the kubeconfig (a missing file, a bad context: kubernetes.core's CoreException)
    and already talks to the server (version and discovery), so an unreachable API or bad credentials surface
    here first; discovery is reads only, so a transient failure there is tried again like any read.
    """
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client

    params = getattr(module, "params", None)
    environment_proxy = os.environ.get("https_proxy") or os.environ.get("HTTPS_PROXY")
    if isinstance(params, dict) and environment_proxy and not params.get("proxy"):
        # The API server follows the environment's proxy as oc does; the kubernetes client reads NO_PROXY as curl and
        # Go do (kubernetes/client/rest.py should_bypass_proxies: CIDRs, host:port, domains).
        no_proxy = params.get("no_proxy") or os.environ.get("no_proxy") or os.environ.get("NO_PROXY")
        params.update(proxy=environment_proxy, no_proxy=no_proxy)

    def attempt() -> Any:
        try:
            return get_api_client(module=module)
        except _CONFIG_ERRORS + API_ERRORS as error:
            raise connection_error(error, module) from error

    client = call(attempt, policy, lambda error: None if _final(error.__cause__) else _attempt(error), sleep=sleep)
    return client, ApiClient(client.client, policy, sleep)


# --- the objects -----------------------------------------------------------------------------------------------


def dig(obj: Any, *path: str | int, default: Any = None) -> Any:
    """The value at ``path`` (dict keys, list indexes) in ``obj``; ``default`` where it is missing or null."""
    for key in path:
        if isinstance(obj, dict):
            obj = obj.get(key)
        elif isinstance(obj, list) and isinstance(key, int) and -len(obj) <= key < len(obj):
            obj = obj[key]
        else:
            return default
        if obj is None:
            return default
    return obj


def condition(obj: Any, kind: str) -> dict[str, Any]:
    """The ``status.conditions`` entry of type ``kind``, {} when there is none."""
    conditions = dig(obj, "status", "conditions", default=[])
    return next((c for c in conditions if isinstance(c, dict) and c.get("type") == kind), {})


def condition_true(obj: Any, kind: str) -> bool:
    """Whether the condition ``kind`` has status True."""
    return condition(obj, kind).get("status") == "True"
