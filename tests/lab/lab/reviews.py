"""SelfSubjectAccessReview and SelfSubjectRulesReview (authorization.k8s.io/v1): create-only, never stored.

- An access review asks the authorizer chain (``lab.rbac.authorize``) about ``spec.resourceAttributes`` or
  ``spec.nonResourceAttributes`` for the caller, and answers 201 with the spec and ``status`` {allowed, reason};
  both or neither attributes, or metadata other than empty, is a 422 -- kubernetes
  pkg/registry/authorization/selfsubjectaccessreview/rest.go@48e8ef566e4a0ac4e2990d7b63704ffe12926cec,
  pkg/apis/authorization/validation/validation.go@a0d8ee7954d1fed4d0c70f18356e588e3147f4d6.
- A rules review lists the caller's rules in ``spec.namespace`` (``status`` {resourceRules, nonResourceRules,
  incomplete, evaluationError}; the spec of the answer is empty); no namespace is a 400 "no namespace on request" --
  pkg/registry/authorization/selfsubjectrulesreview/rest.go@eac438fcd83c5e36cb4ad91fd3ad7364fb0a2dff.

Neither writes anything; the request log still records them as POSTs.
"""

from __future__ import annotations

import json

from . import kinds
from .auth import Attributes, Identity
from .errors import ApiError, bad_request
from .rbac import aggregate, authorize, rules_review

GROUP = "authorization.k8s.io"
ACCESS_REVIEW = kinds.by_kind(f"{GROUP}/v1", "SelfSubjectAccessReview")
RULES_REVIEW = kinds.by_kind(f"{GROUP}/v1", "SelfSubjectRulesReview")
KINDS = (ACCESS_REVIEW, RULES_REVIEW)


def _go_value(value) -> str:
    return '"null"' if value is None else json.dumps(value, separators=(",", ":"))


def _validate_access_review(body: dict) -> None:
    spec = body.get("spec") or {}
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    errors = []
    if resource is not None and non_resource is not None:
        errors.append(
            f"spec.nonResourceAttributes: Invalid value: {_go_value(non_resource)}: cannot be specified in "
            "combination with resourceAttributes"
        )
    if resource is None and non_resource is None:
        errors.append(
            f"spec.resourceAttributes: Invalid value: {_go_value(non_resource)}: exactly one of "
            "nonResourceAttributes or resourceAttributes must be specified"
        )
    meta = {k: v for k, v in (body.get("metadata") or {}).items() if v not in (None, {}, [], "")}
    if meta:
        errors.append(f"metadata: Invalid value: {_go_value(meta)}: must be empty")
    if errors:
        details = {"group": GROUP, "kind": ACCESS_REVIEW.kind}
        message = f'{ACCESS_REVIEW.kind}.{GROUP} "" is invalid: {aggregate(errors)}'
        raise ApiError(422, "Invalid", message, details)


def attributes(spec: dict) -> Attributes:
    """The authorizer's question for a review's spec (ResourceAttributesFrom / NonResourceAttributesFrom)."""
    resource = spec.get("resourceAttributes")
    if resource is not None:
        return Attributes(
            resource.get("verb") or "",
            resource.get("group") or "",
            resource.get("resource") or "",
            resource.get("subresource") or "",
            resource.get("namespace") or "",
            resource.get("name") or "",
        )
    non_resource = spec.get("nonResourceAttributes") or {}
    return Attributes(non_resource.get("verb") or "", path=non_resource.get("path") or "", resource_request=False)


def _answer(kind, spec: dict, status: dict) -> dict:
    return {
        "kind": kind.kind,
        "apiVersion": kind.api_version,
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": status,
    }


def review(store, identity: Identity, kind, body: dict) -> dict:
    """The answer (HTTP 201) to creating a review of ``kind`` with ``body``."""
    if kind is ACCESS_REVIEW:
        _validate_access_review(body)
        allowed, reason = authorize(store, identity, attributes(body["spec"]))
        status: dict = {"allowed": allowed}
        if reason:
            status["reason"] = reason
        return _answer(kind, body["spec"], status)
    namespace = (body.get("spec") or {}).get("namespace")
    if not namespace:
        raise bad_request("no namespace on request")
    return _answer(kind, {}, rules_review(store, identity, namespace))
