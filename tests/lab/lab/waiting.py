"""Bounded waiting for the tests that drive the lab (lab_tests and integration tests share it)."""

import time


def wait_until(what, condition, timeout=30.0, interval=0.05):
    """Return the first truthy value of ``condition()``; fail after ``timeout`` seconds, naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))
        time.sleep(interval)


def wait_for(condition, timeout=30.0):
    """``wait_until`` for a condition that speaks for itself."""
    return wait_until("the condition", condition, timeout)
