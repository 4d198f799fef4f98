#!/usr/bin/env bash
# Checks the Apache Kafka stack's IAM listeners against AWS's two reference signers: tokens from
# botocore (botocore_token.py, as aws-msk-iam-sasl-signer-python makes them) and from the Java
# library aws-msk-iam-auth (tests/java/MskIamReference.java) must validate, wrong ones must not,
# and a session must end with its token unless the client re-authenticates (reauth_probe.py).
# Needs a running stack with the same environment as `up`:
#   MIRRORSLICE_BROKER=kafka infra/local/stack.sh up
#   MIRRORSLICE_BROKER=kafka tests/msk_iam/check.sh [--no-reauth]   # ~1.5 min, ~20 s without
# --no-reauth skips the re-authentication checks, which wait for tokens to expire.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
STACK=infra/local/stack.sh
eval "$("$STACK" env)"
[[ "${MIRRORSLICE_STACK_IAM_SECRET_ACCESS_KEY:-}" ]] || { echo "check: no IAM credentials: is the Apache Kafka stack up (MIRRORSLICE_BROKER=kafka)?" >&2; exit 1; }
KEY="$MIRRORSLICE_STACK_IAM_ACCESS_KEY_ID" SECRET="$MIRRORSLICE_STACK_IAM_SECRET_ACCESS_KEY" REGION="$MIRRORSLICE_STACK_IAM_REGION"
CA="$MIRRORSLICE_STACK_TLS_DIR/ca.pem"
failed=0
pass() { echo "ok: $*"; }
fail() { echo "FAILED: $*"; failed=1; }

botocore() { python3 tests/msk_iam/botocore_token.py "$@"; }
# Exit status of the validator on token $1 (and NOW $2), the JSON line on stderr-free stdout.
validate() { "$STACK" java-exec infra/kafka/iam/MskIamValidator.java selftest "$KEY" "$SECRET" "$REGION" "$@" >"$tmp/line" 2>"$tmp/err"; }
expect() { # expect valid|invalid WHAT validate-args...
    local want="$1" what="$2" got
    shift 2
    if validate "$@"; then got=valid; else got=invalid; fi
    if [[ "$got" == "$want" ]]; then
        pass "$what: $want ($(python3 -c 'import json,sys;print(json.load(sys.stdin)["reason"][:70])' <"$tmp/line" 2>/dev/null || cat "$tmp/err"))"
    else
        fail "$what: $got, expected $want: $(cat "$tmp/line" "$tmp/err" | head -c 600)"
    fi
}
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
at() { date -u -d "$1" +%Y%m%dT%H%M%SZ; }

echo "--- the validator on botocore's tokens"
expect valid "botocore, now" "$(botocore --access-key "$KEY" --secret-key "$SECRET" --region "$REGION" --time now)"
expect valid "botocore, session token" "$(botocore --access-key "$KEY" --secret-key "$SECRET" --session-token 'IQoJb3JpZ2luX2VjE+/test==' --region "$REGION" --time now)"
expect valid "botocore, signed 4 minutes ahead (clock skew)" "$(botocore --access-key "$KEY" --secret-key "$SECRET" --region "$REGION" --time "$(at '4 min')")"
expect valid "botocore, fixed time, checked at that time" "$(botocore --access-key "$KEY" --secret-key "$SECRET" --region "$REGION" --time 20250101T000000Z)" 20250101T001459Z
expect invalid "botocore, wrong secret key" "$(botocore --access-key "$KEY" --secret-key "not-$SECRET" --region "$REGION" --time now)"
expect invalid "botocore, other access key" "$(botocore --access-key AKIAIOSFODNN7EXAMPLE --secret-key "$SECRET" --region "$REGION" --time now)"
expect invalid "botocore, other region" "$(botocore --access-key "$KEY" --secret-key "$SECRET" --region us-east-1 --time now)"
expect invalid "botocore, expired" "$(botocore --access-key "$KEY" --secret-key "$SECRET" --region "$REGION" --time "$(at '16 min ago')")"
expect invalid "botocore, fixed time, checked 900 s later" "$(botocore --access-key "$KEY" --secret-key "$SECRET" --region "$REGION" --time 20250101T000000Z)" 20250101T001500Z
expect invalid "botocore, signed 6 minutes ahead" "$(botocore --access-key "$KEY" --secret-key "$SECRET" --region "$REGION" --time "$(at '6 min')")"
expect invalid "botocore, X-Amz-Expires 901" "$(botocore --access-key "$KEY" --secret-key "$SECRET" --region "$REGION" --time now --expires 901)"

echo "--- AWS's Java library (aws-msk-iam-auth)"
lib_token() { AWS_ACCESS_KEY_ID="$KEY" AWS_SECRET_ACCESS_KEY="$1" AWS_SESSION_TOKEN="${2:-}" "$STACK" msk-iam-exec tests/java/MskIamReference.java token "$REGION"; }
expect valid "library token" "$(lib_token "$SECRET")"
expect valid "library token, session token" "$(lib_token "$SECRET" 'IQoJb3JpZ2luX2VjE+/test==')"
expect invalid "library token, wrong secret key" "$(lib_token "not-$SECRET")"
metadata() { AWS_ACCESS_KEY_ID="$KEY" AWS_SECRET_ACCESS_KEY="$1" "$STACK" msk-iam-exec tests/java/MskIamReference.java metadata "$2" "$CA" "$REGION" >"$tmp/out" 2>"$tmp/err"; }
for listener in "$MIRRORSLICE_STACK_A_IAM" "$MIRRORSLICE_STACK_B_IAM"; do
    if metadata "$SECRET" "$listener"; then pass "library client lists topics through $listener"; else fail "library client through $listener: $(tail -n 5 "$tmp/err")"; fi
    if metadata "not-$SECRET" "$listener"; then
        fail "library client with a wrong secret key was let in through $listener"
    elif tail -n 1 "$MIRRORSLICE_STACK_IAM_TOKEN_LOG" | grep -q '"valid":false,"reason":"signature mismatch'; then
        pass "library client with a wrong secret key refused by $listener (logged: signature mismatch)"
    else
        fail "library client with a wrong secret key through $listener: no valid=false line logged ($(tail -n 3 "$tmp/err"))"
    fi
done

if [[ "${1:-}" != --no-reauth ]]; then
    echo "--- sessions end with their token; re-authentication renews them"
    if python3 tests/msk_iam/reauth_probe.py "$MIRRORSLICE_STACK_A_IAM" 2>&1; then pass "broker-side session expiry and re-authentication"; else fail "reauth_probe.py"; fi
    if AWS_ACCESS_KEY_ID="$KEY" AWS_SECRET_ACCESS_KEY="$SECRET" "$STACK" msk-iam-exec tests/java/MskIamReference.java \
        reauth "$MIRRORSLICE_STACK_B_IAM" "$CA" "$REGION" 15 40 2>"$tmp/err"; then
        pass "Kafka's Java client re-authenticated with refreshed 15 s tokens for 40 s ($(grep -c 'new token' "$tmp/err") tokens)"
    else
        fail "Java client re-authentication: $(tail -n 5 "$tmp/err")"
    fi
fi

((failed == 0)) && echo "all IAM checks passed"
exit "$failed"
