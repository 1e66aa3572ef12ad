#!/usr/bin/env bash
# Run a command with a headless browser for the console's tests: Debian's chromium and
# chromium-driver (installed when missing, as with-postgres.sh installs PostgreSQL) and axe-core
# for the accessibility check (installed from the npm registry into a cache directory once).
# Exports DIALECTIC_TEST_CHROMIUM, DIALECTIC_TEST_CHROMEDRIVER and DIALECTIC_TEST_AXE.
set -euo pipefail

AXE_VERSION="${DIALECTIC_AXE_VERSION:-4.10.3}"
CACHE="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/dialectic"

as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else "$@"; fi; }

find_chromium() { command -v chromium || command -v chromium-browser || true; }
find_driver() { command -v chromedriver || { [[ -x /usr/bin/chromedriver ]] && echo /usr/bin/chromedriver; } || true; }

if [[ -z $(find_chromium) || -z $(find_driver) ]]; then
  echo "with-browser: no chromium or chromedriver; installing Debian's chromium and chromium-driver" >&2
  as_root apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium chromium-driver >&2
fi
CHROMIUM=$(find_chromium); DRIVER=$(find_driver)
[[ -n $CHROMIUM && -n $DRIVER ]] || { echo "with-browser: chromium is still missing after install" >&2; exit 1; }

AXE="$CACHE/axe-core-$AXE_VERSION/node_modules/axe-core/axe.min.js"
if [[ ! -f $AXE ]]; then
  command -v npm >/dev/null || { echo "with-browser: installing npm for axe-core" >&2
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq npm >&2; }
  echo "with-browser: installing axe-core $AXE_VERSION into $CACHE" >&2
  mkdir -p "$CACHE/axe-core-$AXE_VERSION"
  npm install --silent --no-audit --no-fund --prefix "$CACHE/axe-core-$AXE_VERSION" "axe-core@$AXE_VERSION" >&2
fi

export DIALECTIC_TEST_CHROMIUM="$CHROMIUM" DIALECTIC_TEST_CHROMEDRIVER="$DRIVER" DIALECTIC_TEST_AXE="$AXE"
echo "with-browser: $("$CHROMIUM" --version 2>/dev/null | head -1), axe-core $AXE_VERSION" >&2
exec "$@"
