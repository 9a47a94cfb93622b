# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every module does around its one call into module_utils: hide secrets, pass warnings on, end the run,
clean up when it is stopped.

A module's ``main()`` is::

    module = AnsibleK8SModule(argument_spec=..., supports_check_mode=True)
    run_step(module, "module_name", some_step.run)

(:func:`run_step` is the one ``except Day2Error``: :func:`fail` or :func:`finish`.)

SIGTERM (and SIGHUP) in a module's process become an exception, so that the work in progress cleans up: a stopped
playbook (a CI job cancelled, ``kill`` of the process tree, a closed terminal) sends SIGTERM or SIGHUP to the
module's process; by default that ends it at once and whatever it created stays. Inside :func:`signals_raise`,
the first such signal raises :class:`Terminated` where the process is; ``with`` blocks and ``finally`` clauses
then delete what they created (a namespace, a partial file) on the way out. Terminated is a BaseException, like
KeyboardInterrupt, so ``except Exception`` of a retry loop does not swallow it. Further signals are ignored while
the clean-up runs (a process tree stopped as a whole may deliver the signal twice); its requests are bounded by
the retry policy, and SIGKILL still ends it (the next run then removes what is left).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType
from typing import Any, Callable, NoReturn

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error


def hide(module: Any, *values: Any) -> None:
    """Keep secrets read at run time (a token from the cluster) out of every output of the module.

    kubernetes.core's AnsibleK8SModule wraps the AnsibleModule that owns ``no_log_values``; this is the one place
    that knows it.
    """
    owner = getattr(module, "_module", module)
    owner.no_log_values.update(str(value) for value in values if value)


def _warn_all(module: Any, result: dict[str, Any]) -> dict[str, Any]:
    result = dict(result)
    for warning in result.pop("warnings", None) or []:
        module.warn(warning)
    return result


def finish(module: Any, result: dict[str, Any]) -> NoReturn:
    """Exit with ``result``; its ``warnings`` become module warnings."""
    module.exit_json(**_warn_all(module, result))
    raise SystemExit(0)  # exit_json exits; this only tells type checkers so


def fail(module: Any, name: str, error: Day2Error) -> NoReturn:
    """Fail with the error's message (prefixed with the module's name) and its partial result."""
    module.fail_json(msg="%s: %s" % (name, error.message), **_warn_all(module, error.result))
    raise SystemExit(1)  # fail_json exits; this only tells type checkers so


def run_step(module: Any, name: str, step: Callable[[Any], dict[str, Any]]) -> NoReturn:
    """Finish with ``step(module)``'s result, or fail with its Day2Error."""
    try:
        result = step(module)
    except Day2Error as error:
        fail(module, name, error)
    finish(module, result)


class Login:
    """The login options where there is no module (an action plugin on the controller), in the shape kubernetes.core's
    client and the collection's connection errors read from one: ``params``, ``requires``."""

    server_side_dry_run = False

    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params

    def requires(self, name: str, *args: Any, **kwargs: Any) -> None:
        __import__(name)


class Terminated(BaseException):
    """The process was asked to stop by ``signum``."""

    def __init__(self, signum: int) -> None:
        self.signum, self.name = signum, signal.Signals(signum).name
        super().__init__("stopped by %s" % self.name)


@contextlib.contextmanager
def signals_raise(signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGHUP)) -> Iterator[None]:
    """Within the block, the first of ``signals`` raises Terminated; the previous handlers come back after it."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        for number in signals:
            signal.signal(number, signal.SIG_IGN)  # the clean-up runs to its end
        raise Terminated(signum)

    previous = {number: signal.signal(number, handler) for number in signals}
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)
