"""Kubernetes ``Status`` errors raised anywhere in the lab and turned into HTTP responses by the API server."""

from __future__ import annotations


class ApiError(Exception):
    """An error the API server answers with a ``Status`` body (``code`` is the HTTP status)."""

    def __init__(self, code: int, reason: str, message: str, details: dict | None = None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict:
        return status_body(self.code, self.reason, self.message, self.details)


def status_body(code: int, reason: str, message: str, details: dict | None = None) -> dict:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 400 else "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def _details(kind, name: str | None) -> dict:
    details = {"group": kind.group, "kind": kind.plural}
    if name:
        details["name"] = name
    return details


def not_found(kind, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{kind.group_resource} "{name}" not found', _details(kind, name))


def already_exists(kind, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{kind.group_resource} "{name}" already exists', _details(kind, name))


def conflict(kind, name: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {kind.group_resource} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
        _details(kind, name),
    )


def invalid(kind, name: str | None, message: str) -> ApiError:
    shown = name or "<unknown>"
    return ApiError(422, "Invalid", f'{kind.kind} "{shown}" is invalid: {message}', _details(kind, name))


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(kind, name: str | None, user: str, verb: str, resource: str, namespace: str | None) -> ApiError:
    """The exact shape of kube-apiserver's RBAC denial message."""
    subject = f'{kind.group_resource} "{name}"' if name else kind.group_resource
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    message = (
        f'{subject} is forbidden: User "{user}" cannot {verb} resource "{resource}" in API group "{kind.group}" {scope}'
    )
    return ApiError(403, "Forbidden", message, _details(kind, name))


def gone(requested: int, oldest: int) -> ApiError:
    return ApiError(410, "Expired", f"too old resource version: {requested} ({oldest})")


UNAUTHORIZED = ApiError(401, "Unauthorized", "Unauthorized")
