"""setuptools glue for pyproject.toml: the version from CMakeLists.txt, the
extension _gpunvme built by the project's CMake build, and the shipped data
(configs/, scenarios/) installed as <prefix>/share/gpunvme, where the
extension looks for it (data_dir())."""

import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def cmake_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(gpunvme VERSION ([0-9.]+)", f.read()).group(1)


def shipped_data():
    files = []
    for top in ("configs", "scenarios"):
        for folder, _, names in os.walk(os.path.join(ROOT, top)):
            relative = os.path.relpath(folder, ROOT)
            # Sweep outputs written beside a shipped spec are not data.
            paths = [os.path.join(relative, n) for n in sorted(names)
                     if not n.startswith(".") and not n.endswith((".jsonl", ".csv", ".tmp"))]
            if paths:
                files.append((os.path.join("share", "gpunvme", relative), paths))
    return files


class CMakeBuild(build_ext):
    """Builds the CMake target _gpunvme and copies the module where setuptools packs it."""

    def build_extension(self, ext):
        build_dir = os.path.abspath(os.environ.get("GPUNVME_CMAKE_BUILD_DIR")
                                    or os.path.join(ROOT, "build-python"))
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            subprocess.run(["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                            "-DGPUNVME_TESTS=OFF", "-DGPUNVME_HARDWARE=OFF",
                            "-DPython3_EXECUTABLE=" + sys.executable], check=True)
        subprocess.run(["cmake", "--build", build_dir, "--target", "_gpunvme"], check=True)
        folder = os.path.join(build_dir, "python")
        built = [n for n in os.listdir(folder) if n.startswith("_gpunvme") and n.endswith(".so")]
        if len(built) != 1:
            raise RuntimeError("expected one _gpunvme module in %s, found %s" % (folder, built))
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(folder, built[0]), target)


setup(
    version=cmake_version(),
    ext_modules=[Extension("_gpunvme", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    data_files=shipped_data(),
    # setuptools' own build folder beside the CMake one, not in the CMake build tree.
    options={"build": {"build_base": os.path.join("build-python", "setuptools")}},
)
