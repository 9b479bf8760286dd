#!/bin/sh
# Runs COPIES copies of one built test file at once, ROUNDS times over, and keeps each run's output:
# for faults that show only under load (bench/results.md, "replication restore refusing a position").
# Usage: bench/parallel-runs.sh dist/test/replication-retention.test.js [copies=6] [rounds=3] [out=/tmp/parallel-runs]
set -u
file=$1
copies=${2:-6}
rounds=${3:-3}
out=${4:-/tmp/parallel-runs}
mkdir -p "$out"
failed=0
round=1
while [ "$round" -le "$rounds" ]; do
  copy=1
  while [ "$copy" -le "$copies" ]; do
    timeout 300 node --test "$file" >"$out/round$round-copy$copy.txt" 2>&1 &
    copy=$((copy + 1))
  done
  wait
  for log in "$out"/round$round-copy*.txt; do
    grep -q '^# fail 0' "$log" || { failed=$((failed + 1)); echo "failed: $log"; }
  done
  round=$((round + 1))
done
echo "$failed of $((copies * rounds)) runs failed; outputs in $out"
