"""Reads measurement files, stored plain or gzip-compressed.

The largest raw files of configs/measurements are stored as NAME.json.gz and
cited as NAME.json (configs/measurements/README.md); these helpers accept the
cited name, as gpunvme's own readers do (sim/system/config/input_file.h).
"""

import glob
import gzip
import json
import os

GZIP_MAGIC = b"\x1f\x8b"


def stored_file(path):
    """The file holding `path`: itself, else `path`.gz when only that exists."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        return path + ".gz"
    return path


def exists(path):
    return os.path.exists(stored_file(path))


def read_bytes(path):
    """The bytes of `path` (or `path`.gz), decompressed when gzip-compressed."""
    stored = stored_file(path)
    if not os.path.exists(stored):
        raise FileNotFoundError(f"neither {path} nor {path}.gz exists")
    with open(stored, "rb") as f:
        data = f.read()
    if data.startswith(GZIP_MAGIC):
        try:
            return gzip.decompress(data)
        except (OSError, EOFError) as error:
            raise ValueError(f"{stored}: not a valid gzip file: {error}") from error
    return data


def load_json(path):
    """The JSON document of `path` (or `path`.gz)."""
    stored = stored_file(path)
    try:
        return json.loads(read_bytes(path))
    except json.JSONDecodeError as error:
        raise ValueError(f"{stored}: {error}") from error


def glob_json(pattern):
    """Files matching `pattern` (ending in .json), each by its cited .json
    name whether stored plain or compressed; sorted, without duplicates."""
    names = set(glob.glob(pattern))
    names.update(name[:-len(".gz")] for name in glob.glob(pattern + ".gz"))
    return sorted(names)


def runs_of(data):
    """The program runs a results file holds: a committed file keeps them under "runs"."""
    return data["runs"] if "runs" in data else [data]


def check_profile_param(profile_path, param, expected):
    """0 if the GPU profile's `param` is `expected` within 0.005, else 1; says which."""
    with open(profile_path) as f:
        value = json.load(f)["params"][param]["value"]
    if abs(value - expected) > 0.005:
        print(f"{profile_path}: {param} {value} is not {expected}")
        return 1
    print(f"{profile_path}: {param} {value} matches")
    return 0
