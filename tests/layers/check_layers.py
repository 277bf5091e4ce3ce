#!/usr/bin/env python3
"""The layering rule: a source file includes only its own layer and those below.

LAYERS is the one table of the layer order, bottom up. Each row is a rank; a file
under a row's folders may include files of its own rank or lower, never higher.
A layer may span several rows where its folders have an order of their own.
The longest folder prefix decides a file's row. An include that names a path
under sim/ or models/ but no row's folder is refused too, so a new folder must be
placed in the table before it can be used.

The Python package (python/gpunvme) is held to the same rule in its own terms:
its modules' imports of each other, those inside functions included, form no
cycle.

  check_layers.py [ROOT]       check the tree at ROOT (default: this checkout)
  check_layers.py --self-test  check synthetic trees with known violations
Exit code 0 when the tree keeps the rule, 1 with one line per violation.
"""

import os
import re
import sys

import tree_check
from tree_check import SelfTest

# (layer, folders), bottom up; each row a rank.
LAYERS = [
    ("core", ["sim/core/protocol"]),
    ("core", ["sim/core/algo"]),
    ("core", ["sim/core/platform"]),
    ("kernel", ["sim/kernel"]),
    # The PCIe fabric's parameter declarations (and the link byte accounting
    # one of them names) sit below the topology graph, which reads link and
    # socket parameters through them; the rest of models/pcie sits above it.
    ("models", ["models/pcie/pcie_specs.h", "models/pcie/pcie_specs.cpp",
                "models/pcie/link_accounting.h", "models/pcie/link_accounting.cpp",
                "models/pcie/link_params.def", "models/pcie/switch_params.def",
                "models/pcie/root_complex_params.def", "models/pcie/host_memory_params.def",
                "models/pcie/bar_target_params.def", "models/pcie/topology_params.def"]),
    ("models", ["models/topology"]),
    ("models", ["models"]),
    ("system", ["sim/system/config"]),
    ("system", ["sim/system/machine"]),
    ("system", ["sim/system/trace"]),
    ("system", ["sim/system/workload"]),
    ("system", ["sim/system/run"]),
    ("frontend", ["sim/frontend", "python/src"]),
]

SOURCE_SUFFIXES = (".h", ".cpp", ".cu", ".cuh")
CHECKED_ROOTS = ("sim", "models", "python/src")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
RELATIVE_IMPORT = re.compile(r"^\s*from\s+\.(\w*)\s+import\s+([\w, ]+)", re.M)


def row_of(path):
    """(rank, layer, folder) of the longest matching folder, or None."""
    best = None
    for rank, (layer, folders) in enumerate(LAYERS):
        for folder in folders:
            if path == folder or path.startswith(folder + "/"):
                if best is None or len(folder) > len(best[2]):
                    best = (rank, layer, folder)
    return best


def include_violations(root):
    out = []
    for top in CHECKED_ROOTS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                here = row_of(rel)
                if here is None:
                    out.append(f"{rel}: its folder is in no layer (add it to LAYERS)")
                    continue
                with open(full, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for m in INCLUDE.finditer(text):
                    target = m.group(1)
                    if not target.startswith(("sim/", "models/", "python/")):
                        continue
                    line = text.count("\n", 0, m.start()) + 1
                    there = row_of(target)
                    if there is None:
                        out.append(f"{rel}:{line}: includes {target}, in no layer")
                    elif there[0] > here[0]:
                        out.append(
                            f"{rel}:{line}: includes {target}: {here[2]} ({here[1]}) "
                            f"may not include {there[2]} ({there[1]}), which is above it"
                        )
    return out


def python_cycles(root):
    package = os.path.join(root, "python", "gpunvme")
    if not os.path.isdir(package):
        return []
    graph = {}
    for name in sorted(os.listdir(package)):
        if not name.endswith(".py"):
            continue
        module = name[:-3]
        with open(os.path.join(package, name), encoding="utf-8") as f:
            text = f.read()
        deps = set()
        for m in RELATIVE_IMPORT.finditer(text):
            if m.group(1):
                deps.add(m.group(1))
            else:  # from . import a, b
                deps.update(n.strip() for n in m.group(2).split(",") if n.strip())
        graph[module] = sorted(d for d in deps if d != module)
    out = []
    state = {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for dep in graph.get(node, []):
            if dep not in graph:
                continue
            if state.get(dep) == "open":
                cycle = stack[stack.index(dep):] + [dep]
                out.append("python/gpunvme: import cycle " + " -> ".join(cycle))
            elif dep not in state:
                visit(dep, stack)
        stack.pop()
        state[node] = "done"

    for module in graph:
        if module not in state:
            visit(module, [])
    return out


def check(root):
    return include_violations(root) + python_cycles(root)


def self_test():
    """Synthetic trees: one clean, and one with each kind of violation."""

    test = SelfTest(check)
    expect = test.expect

    clean = {
        "sim/core/protocol/nvme.h": "#pragma once\n#include <cstdint>\n",
        "sim/core/algo/a.h": '#include "sim/core/protocol/nvme.h"\n',
        "sim/kernel/params/p.h": '#include "sim/core/algo/a.h"\n',
        "models/pcie/fabric.h": '#include "sim/kernel/params/p.h"\n#include "models/topology/g.h"\n',
        "models/topology/g.h": '#include "sim/kernel/params/p.h"\n',
        "sim/system/run/run.cpp": '#include "sim/system/workload/w.h"\n',
        "sim/system/workload/w.h": '#include "sim/system/machine/m.h"\n',
        "sim/system/machine/m.h": '#include "models/pcie/fabric.h"\n',
        "python/src/module.cpp": '#include "sim/system/run/run.h"\n',
        "python/gpunvme/config.py": "from . import _native\nfrom .result import Result\n",
        "python/gpunvme/result.py": "from . import _native\n",
        "python/gpunvme/results.py": "from .config import Config\nfrom .result import Result\n",
        "python/gpunvme/_native.py": "import os\n",
    }
    expect("clean tree", clean, [])
    # A model that includes the machine (system) above it.
    expect(
        "upward include",
        dict(clean, **{"models/nvme/controller.h": '#include "sim/system/machine/m.h"\n'}),
        ["models/nvme/controller.h:1: includes sim/system/machine/m.h: models (models) "
         "may not include sim/system/machine (system)"],
    )
    # Rows of one layer are ordered too: the topology graph below the fabric.
    expect(
        "upward include within a layer",
        dict(clean, **{"models/topology/g.cpp": '#include <map>\n#include "models/pcie/routing.h"\n'}),
        ["models/topology/g.cpp:2: includes models/pcie/routing.h"],
    )
    # The bottom layer must not see the kernel.
    expect(
        "algorithm includes the kernel",
        dict(clean, **{"sim/core/algo/b.h": '#  include "sim/kernel/time.h"\n'}),
        ["sim/core/algo/b.h:1: includes sim/kernel/time.h"],
    )
    expect(
        "folder in no layer",
        dict(clean, **{"sim/misc/x.cpp": "int x;\n"}),
        ["sim/misc/x.cpp: its folder is in no layer"],
    )
    expect(
        "include of a folder in no layer",
        dict(clean, **{"sim/kernel/y.cpp": '#include "sim/misc/x.h"\n'}),
        ["sim/kernel/y.cpp:1: includes sim/misc/x.h, in no layer"],
    )
    # An import inside a function closes a cycle as surely as one at the top.
    expect(
        "python import cycle",
        dict(clean, **{"python/gpunvme/config.py": "def run():\n    from .results import run\n"}),
        ["python/gpunvme: import cycle config -> results -> config"],
    )
    return test.report()


def main(argv):
    clean = (f"layers: every include goes down ({len(LAYERS)} ranks, {LAYERS[0][0]} to "
             f"{LAYERS[-1][0]}); no Python import cycle")
    return tree_check.main(argv, check, self_test, clean)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
