"""The C++ extension `_gpunvme`, with configuration errors mapped to ConfigError."""

try:
    from _gpunvme import *  # noqa: F401,F403  (the extension's functions)
    from _gpunvme import __version__, _register_config_error  # noqa: F401
except ImportError as error:  # pragma: no cover - depends on the build
    raise ImportError(
        "gpunvme: the C++ extension _gpunvme is not importable (%s). Build the project "
        "(scripts/build.sh release) and put its python folder on the path: "
        "PYTHONPATH=build/python" % error
    ) from error

from .errors import ConfigError

_register_config_error(ConfigError)
