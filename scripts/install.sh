#!/usr/bin/env bash
# Install Faultline into .venv/ at the repository root (safe to re-run).
#   scripts/install.sh        the product
#   scripts/install.sh --dev  the product and its test tools
set -euo pipefail
cd "$(dirname "$0")/.."

extras=""
[ "${1:-}" = "--dev" ] && extras="[dev]"

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

# System packages: only python3 with venv is needed so far.
if ! python3 -c "import venv, ensurepip" 2>/dev/null; then
  if command -v apt-get >/dev/null; then
    retry apt-get update -q && retry apt-get install -y -q python3-venv
  fi
fi

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
echo "install: Faultline is in .venv (CLI: .venv/bin/faultline)"
