# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""When and how long to wait before an API request is tried again: the one retry policy of the collection.

Pure (no client, no clock of its own): :class:`RetryPolicy` says whether an answer is transient and how long to
wait, :func:`call` runs a function under the policy. ``k8s.ApiClient`` applies it to every request.

What is transient: no answer at all (a refused or reset connection, a timeout: ``status`` None), 429 Too Many
Requests and the 5xx answers an API server gives while it is restarted, loses its etcd leader or sheds load
(500, 502, 503, 504). A 429 of max-in-flight or API Priority and Fairness is sent before the request is handled,
with ``Retry-After: 1`` -- kubernetes/kubernetes
staging/src/k8s.io/apiserver/pkg/server/filters/maxinflight.go@e4b6dc5a70de2c18b80897d104473342bc5452e5
(``tooManyRequests``) -- so any request may be sent again after a 429; reads (GET, LIST, WATCH) and DELETEs may be
sent again after any transient failure; a create only where a second try cannot make a second object (k8s.py).
"""

from __future__ import annotations

import dataclasses
import random
import time
from typing import Any, Callable, TypeVar

T = TypeVar("T")

# Answers worth another try; 501 Not Implemented and 505 are not transient.
TRANSIENT_STATUSES = frozenset((429, 500, 502, 503, 504))
# The answer that says the request was not handled at all (sent before the handler), safe for every verb.
NOT_HANDLED_STATUSES = frozenset((429,))
# Reviews are questions: kube-apiserver answers the POST and stores nothing, so asking again after a lost answer
# or a 5xx changes nothing, like a read (the access check asks them before any write).
QUESTIONS = frozenset(
    (
        "selfsubjectaccessreviews",
        "selfsubjectrulesreviews",
        "subjectaccessreviews",
        "localsubjectaccessreviews",
        "tokenreviews",
    )
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

    def transient(self, status: int | None) -> bool:
        """No answer at all (None), 429 or a transient 5xx."""
        return is_transient(status)


# What most modules use; unit tests pass their own.
DEFAULT_POLICY = RetryPolicy()
# None at all: one try.
NO_RETRY = RetryPolicy(attempts=1)


def retry_after_seconds(headers: Any) -> float | None:
    """The ``Retry-After`` of an answer's headers in seconds (a number; an HTTP date is not used by API servers
    and is ignored), None when there is none or it cannot be read."""
    if not headers:
        return None
    try:
        value = headers.get("Retry-After") or headers.get("retry-after")
    except AttributeError:
        return None
    try:
        seconds = float(str(value).strip())
    except (TypeError, ValueError):
        return None
    return seconds if seconds >= 0 else None


class Attempt:
    """What one failed try tells the policy: its status (None: no answer) and its Retry-After."""

    def __init__(self, status: int | None, retry_after: float | None = None) -> None:
        self.status = status
        self.retry_after = retry_after


def call(
    function: Callable[[], T],
    policy: RetryPolicy,
    classify: Callable[[BaseException], Attempt | None],
    retryable: Callable[[Attempt], bool] | None = None,
    sleep: Callable[[float], Any] = time.sleep,
    rand: Callable[[], float] = random.random,
    on_retry: Callable[[int, Attempt, float], Any] | None = None,
) -> T:
    """``function()`` under ``policy``.

    ``classify(error)`` returns the Attempt of an error the policy may look at, None for an error that is passed
    on at once. ``retryable(attempt)`` (default: ``policy.transient(attempt.status)``) decides whether the error
    is tried again. The last error is raised when the tries or the waiting budget are used up. ``on_retry(retry,
    attempt, wait)`` is told before each wait.
    """
    decide = retryable or (lambda attempt: policy.transient(attempt.status))
    waited = 0.0
    retry = 0
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
            if on_retry:
                on_retry(retry, attempt, wait)
            sleep(wait)
            waited += wait
