#!/usr/bin/env bash
# The project's test command: check formatting (`cargo fmt`) and lints (`cargo clippy`, warnings
# are errors), then, for each broker of MIRRORSLICE_TEST_BROKERS (default "kafka tansu"), start
# the local stack with it (idempotent) and run the unit and integration tests (not the
# benchmarks: `cargo bench` runs those). Apache Kafka is what our users run; tansu stays covered
# because the demo and the benchmarks default to it.
# The stacks are left running so the next run starts fast; `stack.sh down` stops them.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

# librdkafka is built with TLS against the system OpenSSL: make sure its headers are there. The
# openssl tool makes the Apache Kafka stack's test CA and certificates.
if ! dpkg -s libssl-dev pkg-config openssl >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq libssl-dev pkg-config openssl
fi
# Apache Kafka brokers run on Java 17+ and are fetched from Maven Central with Maven. The JDK,
# not only a JRE: the stack compiles its IAM token validator with javac.
if ! command -v java >/dev/null || ! command -v javac >/dev/null || ! command -v mvn >/dev/null; then
    apt-get update -qq && apt-get install -y -qq openjdk-17-jdk-headless maven
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

for broker in ${MIRRORSLICE_TEST_BROKERS:-kafka tansu}; do
    echo "--- tests against $broker brokers"
    MIRRORSLICE_BROKER="$broker" infra/local/stack.sh up
    MIRRORSLICE_BROKER="$broker" cargo test --workspace --lib --bins --tests "$@"
done
