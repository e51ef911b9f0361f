#!/usr/bin/env bash
# Install Debian's php-cli if missing, so that `make test` can check the TYPO3 extension in
# deploy/typo3 (php -l, Tests/hook_check.php). Idempotent and quick when php is present.
set -euo pipefail

command -v php >/dev/null && exit 0

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

printf 'php.sh: installing php-cli\n' >&2
as_root apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends php-cli >/dev/null
