#!/usr/bin/env bash
# The CPU one real-time stream costs a `brisvox serve` replica, for sizing pods (docs/DEPLOYMENT.md,
# "Sizing"): starts one server (--workers 1), drives it with `brisvox loadtest` (S real-time
# streams of the bundled sample, looped), and prints one JSON line: the server's CPU per stream,
# what that gives per vCPU (CPU seconds per second of audio analysed), latency, frames lost, RSS.
#
#   deploy/measure_sizing.sh --pipeline vad  --streams 300 --seconds 30
#   deploy/measure_sizing.sh --pipeline turn --streams 100 --seconds 30        # events=vad,turn (Smart Turn v3.2)
#   deploy/measure_sizing.sh --pipeline transcript --streams 4 --seconds 60    # events=vad,transcript (Whisper tiny.en)
#
# The load generator runs on the same machine: its own CPU is reported apart and not counted.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build/release
pipeline=vad
streams=100
seconds=30
workers=1
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --pipeline) pipeline=$2; shift 2 ;;
    --streams) streams=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "measure_sizing.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case $pipeline in
  vad) server_args=(); events=vad ;;
  turn) server_args=(--turn-model v3.2); events=vad,turn ;;
  transcript) server_args=(--stt-model tiny.en); events=vad,transcript ;;
  *) echo "measure_sizing.sh: --pipeline is vad, turn or transcript, got '$pipeline'" >&2; exit 2 ;;
esac
brisvox=$build/brisvox
[[ -x $brisvox ]] || { echo "measure_sizing.sh: $brisvox not found: build it first" >&2; exit 1; }

work=$(mktemp -d /tmp/brisvox-sizing.XXXXXX)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$brisvox" serve --host 127.0.0.1 --port "$port" --workers "$workers" --max-streams 5000 "${server_args[@]}" >"$work/server.log" 2>&1 &
spid=$!
trap 'kill -KILL "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 600); do
  grep -qs "listening on" "$work/server.log" && break
  kill -0 "$spid" 2>/dev/null || { tail -5 "$work/server.log" >&2; exit 1; }
  sleep 0.1
done
grep -q "listening on" "$work/server.log" || { echo "measure_sizing.sh: the server did not start in 60 s" >&2; exit 1; }

cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"; }
c0=$(cpu_s "$spid")
set +e
"$brisvox" loadtest --url "ws://127.0.0.1:$port/v1/stream?sample_rate=16000&encoding=pcm_s16le&events=$events" \
  --streams "$streams" --seconds "$seconds" --grace-s 60 --json >"$work/load.json" 2>"$work/load.err"
rc=$?
set -e
c1=$(cpu_s "$spid")
python3 - "$work/load.json" "$c0" "$c1" "$streams" "$pipeline" "$workers" "$rc" <<'PY'
import json, sys
path, c0, c1, n, pipeline, workers, rc = sys.argv[1:8]
j = json.load(open(path))
n, cpu = int(n), float(c1) - float(c0)
# The server's CPU seconds per second of audio it analysed: the cores one real-time stream takes.
# Counted on the frames it processed (not on wall time), so a server starved by other processes on
# the machine is not credited with streams it did not keep up with.
frames = (j.get("server") or {}).get("frames_processed") or 0
audio_s = frames * 512 / 16000
per_stream = cpu / audio_s if audio_s > 0 else None
cores = cpu / j["wall_s"]
print(json.dumps({
    "pipeline": pipeline, "streams": n, "seconds": j["seconds"], "server_workers": int(workers),
    "server_cpu_s": round(cpu, 2), "server_cores": round(cores, 3), "audio_analysed_s": round(audio_s, 1),
    "server_millicores_per_stream": round(per_stream * 1000, 3) if per_stream else None,
    "streams_per_vcpu": round(1 / per_stream) if per_stream else None,
    "p50_ms": j["p50_event_latency_ms"], "p99_ms": j["p99_event_latency_ms"], "frames_lost": j["frames_lost"],
    "connection_failures": j["connection_failures"], "errors": j["errors"],
    "server_rss_mib_loaded": j["server_rss_mib_loaded"], "client_cores": j["client_cpu_cores"],
    "machine": j["machine"], "loadtest_ok": int(rc) == 0}))
PY
