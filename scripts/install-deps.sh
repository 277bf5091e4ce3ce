#!/usr/bin/env bash
# Installs the Debian packages the project builds and tests with, and any
# further packages named as arguments (scripts/fuzz.sh: clang-14 and its
# sanitizer runtimes); a no-op when they are all present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache
  libsystemc-dev libboost-graph-dev libboost-context-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev pybind11-dev zlib1g-dev
  python3-dev python3-pytest python3-pandas python3-matplotlib python3-nbclient
  python3-nbconvert python3-nbformat python3-ipykernel python3-distributed
  python3-jsonschema python3-venv python3-pip python3-setuptools git
  python3-tqdm
  jupyter-notebook graphviz
)
packages+=("$@")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "installing: ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" >/dev/null
