#!/bin/bash
# The WinogradConv kernel objects compiled for AVX-512 / AVX2 must define no global code but
# their entry points (run_avx512, run_avx2). Any other function (an inline function or template
# instantiation emitted as a weak symbol) could be the copy the linker keeps for the whole
# program, and a CPU without that instruction set would then crash in it (src/models/tts/piper/winograd_kernel.h).
# Shared data is harmless (the sanitizer builds emit the transforms' constexpr tables as unique
# globals, and the exception personality's reference as a weak object): only code counts.
# Usage: isa_symbols_test.sh OBJECT... (a ;-separated list counts as several)
set -euo pipefail
status=0
count=0
for arg in "$@"; do
  IFS=';' read -ra objects <<< "$arg"
  for obj in "${objects[@]}"; do
    [[ -n $obj ]] || continue
    count=$((count + 1))
    # Global code: T (text), W (weak, not an object: a function), i (indirect function).
    extra=$(nm --defined-only -C "$obj" | awk '$2 ~ /^[TWi]$/' | grep -v -E 'brisvox::piper::winograd::run_(avx512|avx2)\(' || true)
    if [[ -n $extra ]]; then
      echo "FAIL: $obj defines more than its entry point:"
      echo "$extra"
      status=1
    else
      echo "ok: $obj"
    fi
  done
done
[[ $count -gt 0 ]] || { echo "FAIL: no object files given"; exit 1; }
exit $status
