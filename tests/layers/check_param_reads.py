#!/usr/bin/env python3
"""The typed-parameter rule: no parameter is read by a string literal.

Every component reads its parameters through the typed struct its table
(`*_params.def`, sim/kernel/params/param_table.h) generates, so a misspelt name
is a compile error and units are converted once. A call of a ParamValues
accessor (`.integer("bs")`, `.real(`, `.boolean(`, `.string(`, `.string_list(`,
`.real_list(`, `.integer_list(`, `.number(`) whose first argument is a string
literal reads a parameter by name and bypasses that; it is refused everywhere
except in the parameter machinery itself (sim/kernel/params) and the tables
(`*.def`, which are not C++ sources and are not scanned).

  check_param_reads.py [ROOT]       check the tree at ROOT (default: this checkout)
  check_param_reads.py --self-test  check synthetic trees with known violations
Exit code 0 when no such read is found, 1 with one line per read.
"""

import os
import re
import sys

import tree_check
from tree_check import SelfTest

SOURCE_SUFFIXES = (".h", ".cpp", ".cu", ".cuh")
CHECKED_ROOTS = ("sim", "models", "python/src")
# Where reading by name is the job: the declarations' resolution and the
# generated `from` functions' look-up.
EXEMPT = ("sim/kernel/params/",)
ACCESSORS = ("integer_list", "real_list", "string_list", "integer", "real", "boolean", "string",
             "number")
READ = re.compile(r'\.(' + "|".join(ACCESSORS) + r')\(\s*"([^"\\]*)"')


def reads_by_string(root):
    out = []
    for top in CHECKED_ROOTS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                if rel.startswith(EXEMPT):
                    continue
                with open(full, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for m in READ.finditer(text):
                    line = text.count("\n", 0, m.start()) + 1
                    out.append(f'{rel}:{line}: reads parameter "{m.group(2)}" by name '
                               f"(.{m.group(1)}); use its component's typed struct "
                               f"(the *_params.def table that declares it)")
    return out


def self_test():
    """Synthetic trees: one clean, and one per kind of violation."""

    test = SelfTest(reads_by_string)
    expect = test.expect

    clean = {
        # Typed reads, a path's .string(), a name built from a prefix.
        "sim/system/workload/w.cpp": (
            "const ScenarioParams s = ScenarioParams::from(config.scenario.params);\n"
            "const auto threads = s.threads;\n"
            "const std::string name = fs::path(file).stem().string();\n"),
        "models/pcie/dma.cpp": 'auto bytes = params.integer(prefix + "chunk_bytes");\n',
        # The machinery reads by name; so do the tables.
        "sim/kernel/params/resolve.cpp": 'const auto v = values.integer("bs");\n',
        "models/nvme/ssd_params.def": 'GPUNVME_PARAM(mqes, integer("entries", 16384, 2, 65536, "", ""))\n',
        "python/src/module.cpp": "#include <pybind11/pybind11.h>\n",
    }
    expect("clean tree", clean, [])
    expect(
        "scenario field read by name",
        dict(clean, **{"sim/system/workload/w.cpp": 'auto t = s.integer("threads");\n'}),
        ['sim/system/workload/w.cpp:1: reads parameter "threads" by name (.integer)'],
    )
    # The literal on the next line, as clang-format breaks long calls.
    expect(
        "read split over lines",
        dict(clean, **{"models/nvme/c.cpp": 'int x;\nauto d = ns_to_ps(p.real(\n    "batch_gap_ns"));\n'}),
        ['models/nvme/c.cpp:2: reads parameter "batch_gap_ns" by name (.real)'],
    )
    expect(
        "list read in the Python module",
        dict(clean, **{"python/src/module.cpp": 'auto ids = params.string_list("ssds");\n'}),
        ['python/src/module.cpp:1: reads parameter "ssds" by name (.string_list)'],
    )
    expect(
        "every read of a file, in order",
        dict(clean, **{"models/gpu/g.h": 'a = v.boolean("x");\nb = v.integer_list("block_sm_order");\n'}),
        ['models/gpu/g.h:1: reads parameter "x" by name (.boolean)',
         'models/gpu/g.h:2: reads parameter "block_sm_order" by name (.integer_list)'],
    )
    # Only sim/kernel/params is exempt, not the rest of the kernel.
    expect(
        "kernel outside params",
        dict(clean, **{"sim/kernel/k.cpp": 'auto n = values.string("name");\n'}),
        ['sim/kernel/k.cpp:1: reads parameter "name" by name (.string)'],
    )
    return test.report()


def main(argv):
    clean = "param reads: no parameter is read by a string literal outside sim/kernel/params"
    return tree_check.main(argv, reads_by_string, self_test, clean)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
