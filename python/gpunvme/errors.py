"""The exception raised for bad configuration input, from C++ or Python."""


class ConfigError(ValueError):
    """A configuration mistake: which file, which field, the bad value, what is allowed.

    The same error the command line prints (and exits 2 for); ``str(error)`` is the
    CLI's message without its ``error:`` prefix.

    Attributes:
        file: the file (or origin, such as ``--set scenario.bs=3`` or ``<python>``)
            the bad value came from.
        path: the field as a JSON path (``$.nodes[2].channels``), or ``""``.
        value: the bad value as written in the message, or ``""``.
        problem: what is wrong and what is allowed.
    """

    def __init__(self, file, path, value, problem, message=None):
        super().__init__(file, path, value, problem, message)
        self.file = file
        self.path = path
        self.value = value
        self.problem = problem
        self.message = message if message is not None else _format(file, path, value, problem)

    def __str__(self):
        return self.message


def _format(file, path, value, problem):
    """The C++ ConfigError's message layout (sim/kernel/params/config_error.h)."""
    text = (file or "<config>") + ": " + (path or "$")
    if value:
        text += " = " + value
    return text + ": " + problem
