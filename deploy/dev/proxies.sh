#!/usr/bin/env bash
# Install Debian's nginx and caddy if missing, so that `make test` can check the proxy
# configurations in deploy/proxy/ (nginx -t, caddy validate). Idempotent and quick when
# both are present. No service is started: a temporary policy-rc.d refuses it.
set -euo pipefail

missing=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v caddy >/dev/null || missing+=(caddy)
[ ${#missing[@]} -eq 0 ] && exit 0

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

printf 'proxies.sh: installing %s\n' "${missing[*]}" >&2
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy"
  trap 'as_root rm -f "$policy"' EXIT
fi
as_root apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
