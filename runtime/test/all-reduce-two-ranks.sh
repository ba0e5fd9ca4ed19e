#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# all-reduce-two-ranks.sh MEMWALL_RUN BUNDLE INPUTS EXPECTED_DIR WORK_DIR: runs
# BUNDLE (group_size 2) as two ranks, one memwall-run process each, rank 1
# started first so that it waits for rank 0's NCCL unique id. Both must
# exit 0, join with the same id (FakeNccl.c's join log), dump the expected
# sums byte for byte, and rank 0 must remove the id file once both joined.
set -u
run=$1 bundle=$2 inputs=$3 expected=$4 work=$5
rm -rf "$work"
mkdir -p "$work"
unset MEMWALL_NCCL_LIBRARY # FakeNccl.c, beside the fake driver
export MEMWALL_WORLD_SIZE=2 MEMWALL_NCCL_ID_FILE="$work/nccl-id"
export FAKE_NCCL_JOIN_LOG="$work/joined.log"
MEMWALL_RANK=1 "$run" "$bundle" --inputs="$inputs" --iters=2 \
  --dump-outputs="$work/rank1" >"$work/rank1.log" 2>&1 &
rank1=$!
sleep 0.3
MEMWALL_RANK=0 "$run" "$bundle" --inputs="$inputs" --iters=2 \
  --dump-outputs="$work/rank0" >"$work/rank0.log" 2>&1
status0=$?
wait "$rank1"
status1=$?
cat "$work/rank0.log" "$work/rank1.log"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$status0" -eq 0 ] || fail "rank 0 exited $status0"
[ "$status1" -eq 0 ] || fail "rank 1 exited $status1"
[ ! -e "$work/nccl-id" ] || fail "rank 0 left the id file behind"
ids=$(sed 's/^rank [01] of 2: //' "$work/joined.log" | sort -u | wc -l)
joined=$(grep -c '^rank [01] of 2: FAKE-NCCL-ID ' "$work/joined.log")
if [ "$joined" -ne 2 ] || [ "$ids" -ne 1 ]; then
  fail "the ranks did not join with one id: $(cat "$work/joined.log")"
fi
for rank in 0 1; do
  for file in "$expected"/*.bin; do
    cmp "$file" "$work/rank$rank/$(basename "$file")" ||
      fail "rank $rank: $(basename "$file") differs from $file"
  done
done
echo "PASS"
