#!/usr/bin/env bash
# Installs the Debian packages ggscope needs (when run as root or with sudo),
# otherwise prints the exact apt-get line and fails.
set -u
pkgs=(build-essential cmake pkg-config libncurses-dev libuv1-dev libcmocka-dev
      libcjson-dev libvulkan-dev glslc mesa-vulkan-drivers tmux)
[ "${1:-}" = "--test" ] && pkgs+=(clang libclang-rt-14-dev vulkan-validationlayers python3)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
line="apt-get install -y ${missing[*]}"
if [ "$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo"; else
  echo "ggscope needs these Debian packages. Run:" >&2
  echo "  sudo apt-get update && sudo $line" >&2
  exit 1
fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2 && $sudo $line -qq >&2 || { echo "failed: $line" >&2; exit 1; }
