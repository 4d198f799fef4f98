#!/usr/bin/env bash
# The project's test command: start the local stack (idempotent), then run every test target.
# The stack is left running so the next run starts in milliseconds; `stack.sh down` stops it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

infra/local/stack.sh up
cargo test --workspace --all-targets "$@"
