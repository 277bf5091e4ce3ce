#!/usr/bin/env bash
# Configures and builds one flavour of the project into its own directory.
#   scripts/build.sh release   -> build/
#   scripts/build.sh sanitize  -> build-sanitize/ (AddressSanitizer + UBSan)
#   scripts/build.sh tsan      -> build-tsan/ (ThreadSanitizer; only the
#                                 host-thread platform tests, no SystemC)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
flavour="${1:-release}"
case "$flavour" in
  release) dir="$root/build"; args=(-DCMAKE_BUILD_TYPE=Release) ;;
  # The sanitizer flavour builds what its CTest run needs: not the Python
  # module (pytest runs against the release build) nor the benchmarks and
  # soak_bench.
  sanitize) dir="$root/build-sanitize"
            args=(-DCMAKE_BUILD_TYPE=Debug -DGPUNVME_SANITIZE=ON -DGPUNVME_PYTHON=OFF
                  -DGPUNVME_BENCHMARKS=OFF) ;;
  # Optimised with debug info: TSan's reports need line numbers, and the
  # real-concurrency tests run many threads through it.
  tsan) dir="$root/build-tsan"; args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUNVME_TSAN=ON) ;;
  *) echo "usage: $0 [release|sanitize|tsan]" >&2; exit 2 ;;
esac
"$root/scripts/install-deps.sh"
# Compiled objects are cached (ccache, in its default directory), so a second
# build of the same sources, in this checkout or in another clone, compiles
# only what changed. Paths are taken relative to the checkout (CCACHE_BASEDIR)
# and the build directory is left out of the hash (CCACHE_NOHASHDIR), so that
# two clones share entries; debug information then names the checkout that
# first compiled an object. GPUNVME_CCACHE=0 builds without the cache.
# A cache directory that cannot be written fails every compile, so the build
# goes without the cache then.
ccache_usable() {
  command -v ccache >/dev/null || return 1
  local dir
  dir="$(ccache -k cache_dir 2>/dev/null)" || return 1
  mkdir -p "$dir" 2>/dev/null && [ -w "$dir" ]
}
if [ "${GPUNVME_CCACHE:-1}" != 0 ] && ccache_usable; then
  export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
  args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S "$root" -B "$dir" -G Ninja -DGPUNVME_WERROR=ON "${args[@]}" >/dev/null
fi
cmake --build "$dir" -j "$(nproc)"
