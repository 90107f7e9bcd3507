#!/usr/bin/env bash
# Fault tests: a killed rank, a rank that leaves mid-step, a rank that sleeps past the collective
# timeout and ranks that call different collectives must each end the job with a non-zero exit and
# a clear message within 30 s. Usage: faults.sh MPIEXEC FAULTS_PROGRAM
set -uo pipefail
mpiexec=$1
prog=$2
export OMPI_MCA_btl_vader_single_copy_mechanism=none GRAFT_NUM_THREADS=1
failed=0

# run NAME NP EXPECTED-PATTERN FORBIDDEN-PATTERN [ENV=VALUE...]: the job must fail within 30 s and
# print the first pattern, and not the second
run() {
  local mode=$1 np=$2 pattern=$3 forbidden=$4
  shift 4
  local out start end rc before=$failed
  out=$(mktemp)
  start=$(date +%s.%N)
  env "$@" timeout -k 5 60 "$mpiexec" -np "$np" --oversubscribe --allow-run-as-root "$prog" "$mode" >"$out" 2>&1
  rc=$?
  end=$(date +%s.%N)
  local secs
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  if [[ $rc -eq 0 ]]; then
    echo "FAIL $mode: the job exited 0"; failed=1
  elif awk -v s="$secs" 'BEGIN { exit !(s >= 60) }'; then
    echo "FAIL $mode: the job hung (stopped after 60 s)"; failed=1
  elif awk -v s="$secs" 'BEGIN { exit !(s > 30) }'; then
    echo "FAIL $mode: the job took $secs s to end"; failed=1
  elif ! grep -Eq "$pattern" "$out"; then
    echo "FAIL $mode: no line matches /$pattern/"; failed=1
  elif [[ -n $forbidden ]] && grep -Eq "$forbidden" "$out"; then
    echo "FAIL $mode: a line matches /$forbidden/"; failed=1
  else
    echo "ok   $mode: exit $rc after $secs s"
  fi
  if [[ $failed -ne $before ]]; then sed 's/^/    | /' "$out"; fi
  grep -E "$pattern" "$out" | head -3 | sed 's/^/    > /'
  rm -f "$out"
}

run kill 2 "rank 1 .*(signal 9|Killed)" ""
run exit 2 "rank 1 exited while rank 0 waits for it" ""
# the ranks that wait name the one that did not come, and only it
run sleep 3 "collective #2 on world/0: rank [01] waited [0-9]+ s .*GRAFT_COLLECTIVE_TIMEOUT=2" "rank [01] did not arrive" \
  GRAFT_COLLECTIVE_TIMEOUT=2
run sleep 3 "rank 2 did not arrive" "" GRAFT_COLLECTIVE_TIMEOUT=2
run mismatch 2 "collective #2 differs between the ranks: rank 0 calls MPI_Allreduce\(sum\) of 4 x f32 .*rank 1 calls MPI_Allreduce\(sum\) of 5 x f32" "" GRAFT_DEBUG_COLLECTIVES=1
exit $failed
