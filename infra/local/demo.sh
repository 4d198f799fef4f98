#!/usr/bin/env bash
# The main job end to end on the local stack: start two Kafka-protocol clusters (A, B) and a
# DynamoDB-API server, seed a topic on A, show the plan for the A->B flow, then run a real
# slice that replicates it to B and print the slice report. Safe to run again: every run
# seeds a new batch of records, and the next slice copies exactly those.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

"$here/stack.sh" up
eval "$("$here/stack.sh" env)"

echo "==> building mirrorslice (release)"
cargo build --release --quiet --bin mirrorslice --example seed

config="$here/mm2.properties"
export MIRRORSLICE_STATE_DIR="${MIRRORSLICE_STATE_DIR:-$here/.run/state}"

echo "==> seeding 10000 records into topic 'orders' on cluster A ($MIRRORSLICE_STACK_A)"
./target/release/examples/seed --bootstrap "$MIRRORSLICE_STACK_A" --topic orders \
    --partitions 4 --records 10000 --size 512

echo "==> mirrorslice plan $config --flow 'A->B'"
./target/release/mirrorslice plan "$config" --flow 'A->B'

echo "==> mirrorslice run $config --flow 'A->B' --json"
./target/release/mirrorslice run "$config" --flow 'A->B' --max-duration 60s --json
