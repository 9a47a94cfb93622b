"""The error of a simulated node-joiner run, worded as node-joiner wraps its errors."""


class NodeJoinerError(Exception):
    """A failed run: ``detailed`` is the whole wrapped chain, ``str()`` the innermost cause."""

    def __init__(self, message, *context):
        Exception.__init__(self, message)
        self.context = context
        self.detailed = ": ".join((*context, message))

    def wrapped(self, *outer):
        """The same error seen from a caller that adds its own context."""
        return NodeJoinerError(str(self), *(outer + self.context))
