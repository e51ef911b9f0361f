#!/usr/bin/env bash
# A scripted visitor session against a running `make demo`, then the owner's report of
# it: chat questions (answered retrieval-only, the demo has no model), ratings of the
# answers, searches through /api/chat/tools and /mcp (some that find nothing), and a
# hand-over of the contact form, as a visitor's assistant would make it.
#
#   make demo                      # in one terminal
#   deploy/dev/demo-session.sh     # in another: prints `sitetools report` at the end
#
# DEMO_URL (http://127.0.0.1:8080) and DATABASE_URL (the demo's database) change where.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
base=${DEMO_URL:-http://127.0.0.1:8080}
db=${DATABASE_URL:-$("$here/deploy/dev/postgres.sh" url | sed 's|/postgres?|/sitetools_demo?|')}
json=(-sS -H 'Content-Type: application/json')

# ask QUESTION: one chat turn; prints the answer's id and kind from message.done.
ask() {
  curl "${json[@]}" -N "$base/api/chat" \
    -d "{\"consent\": true, \"messages\": [{\"role\": \"user\", \"content\": \"$1\"}]}" |
    sed -n 's/^data: {"usage".*"kind":"\([a-z]*\)","answerId":"\([^"]*\)".*/\2 \1/p'
}

# rate ID KIND RATING [REASON]
rate() {
  local reason=""
  [ -n "${4:-}" ] && reason=", \"reason\": \"$4\""
  curl "${json[@]}" -o /dev/null -w "feedback $3 ${4:-} → %{http_code}\n" "$base/api/feedback" \
    -d "{\"answerId\": \"$1\", \"kind\": \"$2\", \"rating\": \"$3\"$reason}"
}

search() {
  curl "${json[@]}" -o /dev/null -w "search (tools API) → %{http_code}\n" "$base/api/chat/tools" \
    -d "{\"name\": \"search_site\", \"arguments\": {\"query\": \"$1\"}}"
}

mcp_search() {
  curl "${json[@]}" -o /dev/null -w "search (MCP) → %{http_code}\n" -H 'Accept: application/json, text/event-stream' \
    -H 'Mcp-Protocol-Version: 2025-11-25' "$base/mcp" \
    -d "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/call\", \"params\": {\"name\": \"search_site\", \"arguments\": {\"query\": \"$1\"}}}"
}

read -r id kind < <(ask "What does an accessibility audit cost?"); rate "$id" "$kind" up
read -r id kind < <(ask "Do you give discounts to charities?"); rate "$id" "$kind" down outdated
read -r id kind < <(ask "How do I get in touch with you?"); rate "$id" "$kind" up
read -r id kind < <(ask "Do you build mobile apps for iPhone?"); rate "$id" "$kind" down unanswered
read -r id kind < <(ask "Wo ist euer Büro?"); rate "$id" "$kind" down
read -r id kind < <(ask "Who won the football world cup?"); rate "$id" "$kind" down wrong
rate "forged.m.AAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA" model up
for q in "pricing for a cloud cost review" "headless CMS migration" "recipe for banana bread"; do search "$q"; done
for q in "accessibility audit WCAG" "xyzzy plugh"; do mcp_search "$q"; done
curl "${json[@]}" -o /dev/null -w "hand-over → %{http_code}\n" "$base/api/handover" -d '{"tool": "prefill_contact_form"}'

# The counts reach the database within a second.
sleep 2
DATABASE_URL=$db "$here/bin/sitetools" report --days 1
