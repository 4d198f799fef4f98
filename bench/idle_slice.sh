#!/usr/bin/env bash
# Cost of an idle slice: `mirrorslice run` of one flow that is already caught up, from process
# start to exit — config, worker topics, connector lease and phase, task lease, offsets read,
# end-of-partition check, commit, status, lease release. This is the floor every scheduled
# invocation pays, so it decides what a short schedule costs. Target: <= 150 ms.
#
#   bench/idle_slice.sh            # 20 runs per backend (RUNS=N to change), release build
#   MIRRORSLICE_BENCH_BIN=path bench/idle_slice.sh   # the same with another mirrorslice binary
#
# Measured twice: with the DynamoDB lease (MIRRORSLICE_LEASE_TABLE, moto on the local stack —
# a local server, so this shows our own cost, not DynamoDB's network latency) and with the
# embedded local lease. Uses hyperfine when installed (apt-get install hyperfine), else a
# `date +%s%N` loop; prints the median of each. Seeds its topic with confluent-kafka (PyPI;
# installed if missing), because Debian's kcat cannot talk to tansu.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RUNS="${RUNS:-20}"

infra/local/stack.sh up >/dev/null
eval "$(infra/local/stack.sh env)"
if [[ -n "${MIRRORSLICE_BENCH_BIN:-}" ]]; then
    BIN="$MIRRORSLICE_BENCH_BIN" # another build, e.g. to compare before and after a change
else
    cargo build --release --quiet --bin mirrorslice
    BIN="$ROOT/target/release/mirrorslice"
fi
python3 -c "import confluent_kafka" 2>/dev/null || python3 -m pip install --quiet confluent-kafka

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
tag="$(date +%s%N | tail -c 9)$$"
SRC="bsrc$tag"
TGT="bdst$tag"
TOPIC="idle-$SRC"
TABLE="bench-leases-$tag"
CONFIG="$WORK/mm2.properties"
cat >"$CONFIG" <<EOF
clusters = $SRC, $TGT
$SRC.bootstrap.servers = $MIRRORSLICE_STACK_A
$TGT.bootstrap.servers = $MIRRORSLICE_STACK_B
$SRC->$TGT.enabled = true
$SRC->$TGT.topics = .*-$SRC
$TGT->$SRC.emit.heartbeats.enabled = false
replication.factor = 1
offset-syncs.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
config.storage.replication.factor = 1
offset.storage.replication.factor = 1
status.storage.replication.factor = 1
EOF

# seed TOPIC [GROUP]: a source topic with 4 partitions and 400 records, so an idle slice has
# real work to check; with GROUP, that consumer group commits offset 90 on every partition.
seed() {
    python3 - "$MIRRORSLICE_STACK_A" "$@" <<'PY'
import sys
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
bootstrap, topic, groups = sys.argv[1], sys.argv[2], sys.argv[3:]
admin = AdminClient({"bootstrap.servers": bootstrap})
for f in admin.create_topics([NewTopic(topic, 4, 1)]).values():
    f.result()
p = Producer({"bootstrap.servers": bootstrap})
for i in range(400):
    p.produce(topic, key=str(i).encode(), value=b"v" * 100, partition=i % 4)
assert p.flush(30) == 0
for group in groups:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(topic, p, 90) for p in range(4)], asynchronous=False)
    c.close()
PY
}
seed "$TOPIC"

# The lease table, created with one plain DynamoDB API call (moto ignores the signature).
curl -sf -X POST "$AWS_ENDPOINT_URL_DYNAMODB" \
    -H 'Content-Type: application/x-amz-json-1.0' \
    -H 'X-Amz-Target: DynamoDB_20120810.CreateTable' \
    -H "Authorization: AWS4-HMAC-SHA256 Credential=$AWS_ACCESS_KEY_ID/20240101/$AWS_REGION/dynamodb/aws4_request, SignedHeaders=host, Signature=0" \
    -d "{\"TableName\":\"$TABLE\",\"BillingMode\":\"PAY_PER_REQUEST\",
         \"AttributeDefinitions\":[{\"AttributeName\":\"lease_key\",\"AttributeType\":\"S\"}],
         \"KeySchema\":[{\"AttributeName\":\"lease_key\",\"KeyType\":\"HASH\"}]}" >/dev/null

export MIRRORSLICE_LOG=warn
DYNAMO_CMD="env MIRRORSLICE_LEASE_TABLE=$TABLE MIRRORSLICE_STATE_DIR=$WORK/state-dynamo $BIN run $CONFIG --flow '$SRC->$TGT'"
LOCAL_CMD="env -u MIRRORSLICE_LEASE_TABLE MIRRORSLICE_STATE_DIR=$WORK/state-local $BIN run $CONFIG --flow '$SRC->$TGT'"

# A second flow whose every slice also does checkpoint work (emit.checkpoints.interval.seconds
# = 0): one consumer group has committed offsets on its source topic, so each slice reads the
# offset syncs, lists the group's offsets and writes a checkpoint — what a slice on a schedule
# longer than the 60 s default interval always does.
SRC2="bcsrc$tag"
TGT2="bcdst$tag"
TOPIC2="idle-$SRC2"
CONFIG2="$WORK/mm2-checkpoints.properties"
sed -e "s/$SRC/$SRC2/g" -e "s/$TGT/$TGT2/g" "$CONFIG" >"$CONFIG2"
echo "$SRC2->$TGT2.emit.checkpoints.interval.seconds = 0" >>"$CONFIG2"
seed "$TOPIC2" "app-$TOPIC2"
CHECKPOINT_CMD="env MIRRORSLICE_LEASE_TABLE=$TABLE MIRRORSLICE_STATE_DIR=$WORK/state-checkpoints $BIN run $CONFIG2 --flow '$SRC2->$TGT2'"

# First slices copy the data and create the internal and remote topics; after that every slice
# is idle. Check that it really is, with each backend.
for cmd in "$DYNAMO_CMD" "$LOCAL_CMD" "$CHECKPOINT_CMD"; do
    eval "$cmd" >/dev/null
    out="$(eval "$cmd")"
    case "$out" in
        *": 0 records"*"caught up"*) ;;
        *) echo "not an idle slice: $out" >&2; exit 1 ;;
    esac
done
# ... and the checkpoint flow really does its checkpoint work (one group) every slice.
eval "$CHECKPOINT_CMD --json" | python3 -c '
import json, sys
c = json.load(sys.stdin)["slices"][0]["checkpoints"]
if not (c["emitted_due"] and c["groups"] >= 1):
    sys.exit(f"the checkpoint flow did no checkpoint work: {c}")
'

median_ms() { sort -n | awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; printf "%.1f", m}'; }

if command -v hyperfine >/dev/null; then
    # -N: no intermediate shell, so its start-up is not counted.
    hyperfine -N --runs "$RUNS" --warmup 2 --style basic --export-json "$WORK/idle.json" \
        -n "idle slice, DynamoDB lease" "$DYNAMO_CMD" \
        -n "idle slice, local lease" "$LOCAL_CMD" \
        -n "idle slice with checkpoint work, DynamoDB lease" "$CHECKPOINT_CMD" >&2
    python3 - "$WORK/idle.json" <<'EOF'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"{r['command']}: median {r['median'] * 1000:.1f} ms, "
          f"min {r['min'] * 1000:.1f} ms, max {r['max'] * 1000:.1f} ms ({len(r['times'])} runs)")
EOF
else
    for name in dynamo local checkpoints; do
        cmd="$DYNAMO_CMD"; [[ $name == local ]] && cmd="$LOCAL_CMD"
        [[ $name == checkpoints ]] && cmd="$CHECKPOINT_CMD"
        m="$(for _ in $(seq "$RUNS"); do
            t0=$(date +%s%N); eval "$cmd" >/dev/null; t1=$(date +%s%N)
            echo $(((t1 - t0) / 1000))
        done | awk '{print $1 / 1000}' | median_ms)"
        printf "idle slice, %s lease: median %s ms (%s runs)\n" "$name" "$m" "$RUNS"
    done
fi
