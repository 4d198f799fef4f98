#!/usr/bin/env bash
# Benchmark for issue #2: `mirrorslice plan --offline` on a config with 50 clusters and 200
# flow keys (so 50 x 49 = 2450 herder pairs, heartbeats being on by default), against the
# baseline of a 2-cluster config, in the same run. Prints medians and the ratio.
# Usage: bench/plan_large.sh [path/to/mirrorslice]   (default: target/release/mirrorslice)
set -euo pipefail
bin="${1:-target/release/mirrorslice}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

{
    printf 'clusters = '
    for i in $(seq 1 50); do printf 'c%02d%s' "$i" "$([ "$i" -lt 50 ] && echo ', ')"; done
    echo
    for i in $(seq 1 50); do echo "c$(printf %02d "$i").bootstrap.servers = host$i:9092"; done
    n=0
    for s in $(seq 1 50); do
        for t in $(seq 1 50); do
            [ "$s" = "$t" ] && continue
            [ "$n" -ge 200 ] && break 2
            src=$(printf c%02d "$s"); dst=$(printf c%02d "$t")
            case $((n % 4)) in
                0) echo "$src->$dst.enabled = true" ;;
                1) echo "$src->$dst.topics = orders.*, payments" ;;
                2) echo "$src->$dst.tasks.max = 4" ;;
                3) echo "$src->$dst.sync.topic.acls.enabled = false" ;;
            esac
            n=$((n + 1))
        done
    done
} > "$dir/large.properties"
printf 'clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n' > "$dir/small.properties"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_runs() {
    for _ in $(seq 1 "$2"); do
        s=$(date +%s%N); "$bin" plan "$1" --offline --json > /dev/null; e=$(date +%s%N)
        echo $(( (e - s) / 1000000 ))
    done | median
}
pairs=$("$bin" plan "$dir/large.properties" --offline --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["herder_pairs"]))')
small=$(time_runs "$dir/small.properties" 10)
large=$(time_runs "$dir/large.properties" 10)
echo "plan --offline, median of 10 runs"
echo "  2 clusters, 1 flow key:              ${small} ms"
echo "  50 clusters, 200 flow keys ($pairs pairs): ${large} ms   (ratio $(python3 -c "print(round($large/max($small,1),1))")x)"
