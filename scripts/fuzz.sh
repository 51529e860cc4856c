#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang, -fsanitize=fuzzer,address,undefined) in
# build/fuzz and runs each for SECONDS, one per core at a time, on a scratch copy of its seed
# corpus (fuzz/corpus/<target>; the repository's corpus is never written). One summary line per target; exits non-zero if any
# target found a crash, an invariant violation, a leak, a timeout or an out-of-memory, whose input
# is then in build/fuzz/artifacts/ (reproduce: build/fuzz/fuzz/<target> <artifact>).
#   scripts/fuzz.sh [SECONDS]     default 60; CI runs it with a few seconds
#   scripts/fuzz.sh --build-only  builds the targets and runs none (CI builds them while other
#                                 tests run)
# Needs clang with libFuzzer (Debian: clang, libclang-rt-14-dev; scripts/setup.sh installs them)
# and what scripts/setup.sh fetched (the build configures the whole project).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds="${1:-60}"
build_only=0
[[ $seconds != --build-only ]] || build_only=1
[[ $build_only == 1 || "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "usage: scripts/fuzz.sh [SECONDS | --build-only]" >&2; exit 2; }
build=build/fuzz
artifacts="$build/artifacts"
logs="$build/logs"
# Per input: a generous bound (the slowest target takes milliseconds), and the memory any input
# may use before it counts as a finding.
timeout_s=10
rss_limit_mb=2048

command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DBRISVOX_BUILD_FUZZERS=ON -DBRISVOX_BUILD_TESTS=OFF -DBRISVOX_BUILD_BENCHMARKS=OFF \
  -DBRISVOX_BUILD_CLI=OFF -DCMAKE_UNITY_BUILD="${BRISVOX_UNITY:-OFF}" >/dev/null
cmake --build "$build" --target fuzzers -j "$(nproc)"
((build_only == 0)) || exit 0

mkdir -p "$artifacts" "$logs"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# One target per core at a time (each is one process): its summary line goes to a file, and the
# lines are printed in the list's order once all have run.
run_target() { # run_target TARGET: runs it, writes its summary line to $scratch/TARGET.result
  local target="$1" corpus="$scratch/$1" log="$logs/$1.log" status=0 runs rate result finding
  mkdir -p "$corpus"
  cp -r "fuzz/corpus/$target/." "$corpus/"
  local options=(-max_total_time="$seconds" -timeout="$timeout_s" -rss_limit_mb="$rss_limit_mb"
                 -artifact_prefix="$artifacts/$target-" -print_final_stats=1)
  [[ -f "fuzz/$target.dict" ]] && options+=(-dict="fuzz/$target.dict")
  "$build/fuzz/$target" "${options[@]}" "$corpus" >"$log" 2>&1 || status=$?
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
  if [[ -z "$runs" ]]; then  # no final stats after a crash: the last progress line says how far
    runs="$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -1)"
    rate="$(sed -n 's/.* exec\/s: \([0-9]*\).*/\1/p' "$log" | tail -1)"
  fi
  if [[ $status == 0 ]]; then
    result="ok"
  else
    finding="$(grep -m1 -E 'ERROR: libFuzzer|ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error|invariant violated' "$log" || true)"
    result="FOUND (exit $status): ${finding:-see $log}; input in $artifacts/$target-*; log $log"
  fi
  printf '%-28s %12s %10s  %s\n' "$target" "${runs:-?}" "${rate:-?}" "$result" >"$scratch/$target.result"
}

mapfile -t targets < <(grep -v '^$' "$build/fuzz/fuzzers.txt")
jobs_max="$(nproc)"
for target in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n || true; done
  run_target "$target" &
done
wait

failed=0
printf '%-28s %12s %10s  %s\n' target executions exec/s result
for target in "${targets[@]}"; do
  if [[ -f "$scratch/$target.result" ]]; then
    cat "$scratch/$target.result"
    grep -q '  ok$' "$scratch/$target.result" || failed=1
  else
    printf '%-28s %12s %10s  %s\n' "$target" "?" "?" "FOUND: no result (the run itself failed); log $logs/$target.log"
    failed=1
  fi
done

if [[ $failed != 0 ]]; then
  echo "fuzz.sh: findings above; reproduce with: $build/fuzz/<target> <artifact>" >&2
  exit 1
fi
