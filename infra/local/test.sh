#!/usr/bin/env bash
# The project's test command: check formatting (`cargo fmt`) and lints (`cargo clippy`, warnings
# are errors), start the local stack (idempotent), then run the unit and integration tests (not
# the benchmarks: `cargo bench` runs those).
# The stack is left running so the next run starts in milliseconds; `stack.sh down` stops it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

# librdkafka is built with TLS against the system OpenSSL: make sure its headers are there.
if ! dpkg -s libssl-dev pkg-config >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq libssl-dev pkg-config
fi

# The SAM template must lint clean (offline; no AWS account needed). cfn-lint is run through
# the interpreter that has it, so a fresh pip install needs no PATH or pyenv shim.
if ! python3 -c "import cfnlint" >/dev/null 2>&1; then
    python3 -m pip install --quiet cfn-lint
fi
python3 -c 'import sys; from cfnlint.runner import main; sys.exit(main())' template.yaml
echo "cfn-lint: template.yaml ok"

# Style and lints are part of the suite: formatting drift or a clippy warning fails it.
if command -v rustup >/dev/null; then
    for component in rustfmt clippy; do
        rustup component list --installed | grep -q "^$component" || rustup component add "$component"
    done
fi
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings

infra/local/stack.sh up
cargo test --workspace --lib --bins --tests "$@"
