#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ (clang-14, AddressSanitizer + UBSan) and runs each for a time,
# starting from the seed corpus in fuzz/corpus/<target> (copied: the repository's corpus is not changed).
# A crash stops with its input saved under the work directory and a non-zero status.
#   tools/fuzz.sh [seconds per target (60)] [build-dir] [work-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
build=${2:-$root/build-fuzz}
work=${3:-$(mktemp -d)}
"$root/tools/deps.sh" clang-14 libfuzzer-14-dev libclang-rt-14-dev
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGRAFT_BUILD_TESTS=OFF -DGRAFT_BUILD_EXAMPLES=OFF -DGRAFT_SANITIZE=ON -DGRAFT_FUZZ=ON -DGRAFT_WITH_CUDA=OFF >/dev/null
cmake --build "$build"
export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=0
status=0
for t in safetensors idx kernel_cache verify npy jaxpr_text; do
  mkdir -p "$work/$t/corpus" "$work/$t/crashes"
  cp -r "$root/fuzz/corpus/$t/." "$work/$t/corpus/"
  echo "== fuzz_$t: ${secs}s"
  if ! "$build/fuzz_$t" "$work/$t/corpus" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=20 \
      -artifact_prefix="$work/$t/crashes/" -print_final_stats=1 > "$work/$t/log" 2>&1; then
    echo "fuzz_$t FAILED; the input is in $work/$t/crashes:"
    tail -40 "$work/$t/log"
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$work/$t/log" | sed "s/^/  fuzz_$t /"
done
exit $status
