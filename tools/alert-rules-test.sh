#!/usr/bin/env bash
# The alert rules' unit tests: promtool test rules with
# deploy/prometheus/rmqns-rules.test.yml against the shipped
# deploy/prometheus/rmqns-rules.yml, its description and runbook
# annotations left out (each must be one line; promtool check rules still
# parses their templates), so that a case spells only the summary. Fails
# when an alert of the rules has no case in which it fires or none in which
# it must not.
#   tools/alert-rules-test.sh
# Installs Debian's prometheus package when promtool is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
RULES=deploy/prometheus/rmqns-rules.yml
TESTS=deploy/prometheus/rmqns-rules.test.yml
fail() { echo "alert-rules-test: FAIL: $*" >&2; exit 1; }

if ! command -v promtool >/dev/null; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
promtool check rules "$RULES"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/rmqns-alert-rules-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# annotations are single-line "key: value" entries: a continued one would
# leave a line behind that the check below catches
sed -E '/^ +(description|runbook): /d' "$RULES" >"$TMP/rmqns-rules.yml"
if grep -nE '^ +(description|runbook):' "$TMP/rmqns-rules.yml"; then
	fail "a multi-line description or runbook annotation in $RULES"
fi
cp "$TESTS" "$TMP/rmqns-rules.test.yml"
promtool check rules "$TMP/rmqns-rules.yml" >/dev/null
promtool test rules "$TMP/rmqns-rules.test.yml"

# every alert: a case where it fires (exp_alerts with entries) and one
# where it must not (exp_alerts: [])
python3 - "$RULES" "$TESTS" <<'PY'
import re, sys
rules, tests = (open(p).read() for p in sys.argv[1:])
alerts = re.findall(r"^\s*- alert: (\w+)", rules, re.M)
fires, quiet = set(), set()
# a case is "alertname: X" followed by "exp_alerts: []" or by entries
for m in re.finditer(r"alertname: (\w+)[,}\s]+exp_alerts:\s*(\[\])?", tests):
    (quiet if m.group(2) else fires).add(m.group(1))
missing = ["%s (%s)" % (a, ", ".join(w for w, s in (("fires", fires), ("quiet", quiet)) if a not in s))
           for a in alerts if a not in fires or a not in quiet]
unknown = sorted((fires | quiet) - set(alerts))
if missing or unknown:
    sys.exit("alert-rules-test: FAIL: cases missing: %s; unknown alerts: %s" % (missing, unknown))
print("alert-rules-test: %d alerts, each with a firing and a quiet case" % len(alerts))
PY
