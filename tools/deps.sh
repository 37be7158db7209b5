#!/usr/bin/env bash
# Installs the Debian packages ggscope needs (when run as root or with sudo),
# otherwise prints the exact apt-get line and fails. One line per step; apt's
# own output goes to $BUILD/deps.log (named when a step fails).
#   tools/deps.sh           packages to build and run
#   tools/deps.sh --test    also those the tests and the fuzzer need
set -u
cd "$(dirname "$0")/.."
pkgs=(build-essential cmake pkg-config libncurses-dev libuv1-dev libcmocka-dev
      libcjson-dev libmd4c-dev libcurl4-openssl-dev libvulkan-dev glslc mesa-vulkan-drivers tmux)
[ "${1:-}" = "--test" ] && pkgs+=(clang libclang-rt-14-dev vulkan-validationlayers python3 nginx-light)
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
log_dir=${BUILD:-build}
mkdir -p "$log_dir" && log=$(cd "$log_dir" && pwd)/deps.log || log=/tmp/ggscope-deps.log
: >"$log"
export DEBIAN_FRONTEND=noninteractive
step() {  # step "what" command...: one line, the output to the log
  local what=$1; shift
  printf 'deps: %s ... ' "$what" >&2
  echo "### $*" >>"$log"
  if "$@" >>"$log" 2>&1; then echo ok >&2; else
    echo "failed (see $log)" >&2; exit 1; fi
}
step "apt-get update" $sudo apt-get update
step "installing ${missing[*]}" $sudo apt-get install -y -q "${missing[@]}"
