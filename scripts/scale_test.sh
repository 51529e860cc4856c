#!/usr/bin/env bash
# Three brisvox replicas behind HAProxy on loopback, with one replica drained and another killed
# during a real-time load; prints one JSON summary on stdout (docs/DEPLOYMENT.md shows a run).
#
#   scripts/scale_test.sh                       # 600 streams x 40 s, with a one-replica baseline first
#   scripts/scale_test.sh --streams 30 --seconds 12 --no-baseline   # the CTest variant (deploy.scale_test)
#
# What happens (times from the start of the balanced load):
#   baseline  (unless --no-baseline) streams/3 streams straight to one replica: its p99 and its CPU per
#             stream, the yardstick for "3 replicas hold 3x the streams at the same p99"
#   0 s       `brisvox loadtest --reconnect` opens --streams streams through HAProxy (leastconn), and
#             --direct streams straight to replica r3, in the same seconds (the balancer's added latency)
#   --term-at r1 gets SIGTERM: it closes its listener (HAProxy's /readyz check fails, its retries
#             send racing connects elsewhere), finishes its streams (final events, close 1001) and
#             exits; those clients reconnect through HAProxy and resend what had no answer
#   --kill-at r2 gets SIGKILL: its clients see the connection cut and reconnect the same way
# Exit status 0 when every check in "checks" holds. Everything this script starts is stopped by
# its PID at the end (and on any exit); the whole run is bounded by --budget-s.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build/release
streams=600
seconds=40
direct=30
baseline=1
term_at=
kill_at=
budget_s=300
keep=0

usage() { sed -n '2,22p' "$0"; }
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --streams) streams=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --direct) direct=$2; shift 2 ;;
    --term-at) term_at=$2; shift 2 ;;
    --kill-at) kill_at=$2; shift 2 ;;
    --no-baseline) baseline=0; shift ;;
    --budget-s) budget_s=$2; shift 2 ;;
    --keep-logs) keep=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "scale_test.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for v in streams seconds direct budget_s; do
  [[ ${!v} =~ ^[0-9]+$ && ${!v} -gt 0 ]] || { echo "scale_test.sh: --${v//_/-} must be a positive integer, got '${!v}'" >&2; exit 2; }
done
((streams >= 6)) || { echo "scale_test.sh: --streams must be at least 6 (two per replica)" >&2; exit 2; }
((seconds >= 8)) || { echo "scale_test.sh: --seconds must be at least 8 (a drain and a kill must fit in)" >&2; exit 2; }
ramp=$(( streams >= 300 ? 5 : 2 ))
# Defaults: the drain a third of the way in, the kill at two thirds, both after the ramp.
term_at=${term_at:-$(( ramp + (seconds - ramp) / 3 ))}
kill_at=${kill_at:-$(( ramp + 2 * (seconds - ramp) / 3 ))}
((term_at < kill_at && kill_at < seconds)) || {
  echo "scale_test.sh: need --term-at < --kill-at < --seconds (got $term_at, $kill_at, $seconds)" >&2; exit 2; }

brisvox=$build/brisvox
render=$root/deploy/haproxy/render.sh
[[ -x $brisvox ]] || { echo "scale_test.sh: $brisvox not found: build it first (cmake --build --preset release --target brisvox_cli)" >&2; exit 1; }
command -v haproxy >/dev/null || { echo "scale_test.sh: haproxy not found: scripts/setup.sh installs it (apt package haproxy)" >&2; exit 1; }
command -v curl >/dev/null || { echo "scale_test.sh: curl not found" >&2; exit 1; }

work=$(mktemp -d /tmp/brisvox-scale.XXXXXX)
pids=()
started=$SECONDS
cleanup() {
  local rc=$?
  # TERM first: `timeout` passes it on to the loadtest it runs; then KILL whatever is left.
  local alive=()
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive+=("$p"); done
  if ((${#alive[@]})); then
    kill -TERM "${alive[@]}" 2>/dev/null || true
    sleep 1
    kill -KILL "${alive[@]}" 2>/dev/null || true
  fi
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if ((keep == 0 && rc == 0)); then rm -rf "$work"; else echo "scale_test.sh: logs kept in $work" >&2; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { printf 'scale_test.sh: [%3ds] %s\n' $((SECONDS - started)) "$*" >&2; }
over_budget() { ((SECONDS - started > budget_s)); }

# Free loopback ports: r1..r3, the balancer, its stats page.
read -r p1 p2 p3 pb ps < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(5)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')

declare -A rpid rport=([r1]=$p1 [r2]=$p2 [r3]=$p3)
for r in r1 r2 r3; do
  # One inference thread each: the three replicas share this machine's cores.
  "$brisvox" serve --host 127.0.0.1 --port "${rport[$r]}" --workers 1 --drain-timeout-s 15 \
    --max-streams 2000 >"$work/$r.log" 2>&1 &
  rpid[$r]=$!
  pids+=("$!")
done
"$render" --bind "127.0.0.1:$pb" --stats "127.0.0.1:$ps" "127.0.0.1:$p1" "127.0.0.1:$p2" "127.0.0.1:$p3" >"$work/haproxy.cfg"
haproxy -db -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
hpid=$!
pids+=("$hpid")

# Ready: every replica listening and HAProxy seeing all three UP.
until grep -q "listening on" "$work/r1.log" && grep -q "listening on" "$work/r2.log" && grep -q "listening on" "$work/r3.log" &&
      [[ $(curl -fsS "http://127.0.0.1:$ps/stats;csv" 2>/dev/null | grep -c '^brisvox_replicas,r[0-9],.*,UP') == 3 ]]; do
  for r in r1 r2 r3; do kill -0 "${rpid[$r]}" 2>/dev/null || { log "$r exited at start:"; tail -5 "$work/$r.log" >&2; exit 1; }; done
  kill -0 "$hpid" 2>/dev/null || { log "haproxy exited at start:"; tail -5 "$work/haproxy.log" >&2; exit 1; }
  over_budget && { log "replicas or HAProxy not ready within --budget-s"; exit 1; }
  sleep 0.2
done
log "3 replicas (ports $p1 $p2 $p3) behind HAProxy 127.0.0.1:$pb, all UP"

cpu_s() {  # utime + stime of a process, seconds
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"
}
lt_timeout=$((seconds + ramp + 40))

echo '{}' >"$work/baseline.json"
if ((baseline)); then
  nb=$((streams / 3))
  bsec=$(( seconds < 20 ? seconds : 20 ))
  log "baseline: $nb streams x ${bsec} s straight to r3"
  c0=$(cpu_s "${rpid[r3]}")
  timeout "$lt_timeout" "$brisvox" loadtest --url "ws://127.0.0.1:$p3" --streams "$nb" --seconds "$bsec" --ramp-s "$ramp" \
    --json >"$work/baseline.json" 2>"$work/baseline.err" || log "baseline loadtest exit $? (see the summary)"
  c1=$(cpu_s "${rpid[r3]}")
  python3 - "$work/baseline.json" "$c0" "$c1" "$nb" <<'PY'
import json, sys
path, c0, c1, n = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
j = json.load(open(path))
j["replica_cpu_s"] = round(c1 - c0, 2)
j["replica_cores_per_stream"] = round((c1 - c0) / j["wall_s"] / n, 6) if j.get("wall_s") else None
json.dump(j, open(path, "w"))
PY
fi

log "balanced: $streams streams x $seconds s through HAProxy (+ $direct straight to r3); SIGTERM r1 at ${term_at} s, SIGKILL r2 at ${kill_at} s"
timeout "$lt_timeout" "$brisvox" loadtest --url "ws://127.0.0.1:$pb" --streams "$streams" --seconds "$seconds" \
  --ramp-s "$ramp" --replica-header x-brisvox-replica --reconnect --split-at-s "$term_at" --json \
  >"$work/balanced.json" 2>"$work/balanced.err" &
lb=$!
pids+=("$lb")
timeout "$lt_timeout" "$brisvox" loadtest --url "ws://127.0.0.1:$p3" --streams "$direct" --seconds "$seconds" \
  --ramp-s "$ramp" --split-at-s "$term_at" --json >"$work/direct.json" 2>"$work/direct.err" &
ld=$!
pids+=("$ld")
t0=$SECONDS

sleep "$term_at"
log "SIGTERM r1 (pid ${rpid[r1]})"
kill -TERM "${rpid[r1]}"
sleep $((kill_at - term_at))
log "SIGKILL r2 (pid ${rpid[r2]})"
kill -KILL "${rpid[r2]}"

set +e
wait "$lb"; lb_rc=$?
wait "$ld"; ld_rc=$?
wait "${rpid[r1]}"; r1_rc=$?
wait "${rpid[r2]}"; r2_rc=$?
set -e
log "load done after $((SECONDS - t0)) s (loadtest exits $lb_rc, $ld_rc; r1 exit $r1_rc, r2 exit $r2_rc)"
curl -fsS "http://127.0.0.1:$ps/stats;csv" >"$work/haproxy_stats.csv" 2>/dev/null || true

python3 - "$work" "$streams" "$seconds" "$direct" "$term_at" "$kill_at" "$r1_rc" "$r2_rc" "$lb_rc" "$ld_rc" <<'PY'
import csv, json, sys
work, streams, seconds, direct, term_at, kill_at, r1_rc, r2_rc, lb_rc, ld_rc = sys.argv[1:11]
streams, seconds, direct = int(streams), int(seconds), int(direct)
def load(name):
    try:
        return json.load(open(f"{work}/{name}.json"))
    except Exception as e:
        return {"unreadable": str(e)}
bal, dire, base = load("balanced"), load("direct"), load("baseline")
reps = bal.get("replicas", {})
def rep(name):
    return reps.get(name, {"connections": 0, "completed": 0, "closed_1001": 0, "closed_1001_after_final_events": 0,
                           "cut_off": 0, "other_end": 0, "reconnects_landed": 0, "frames_sent": 0,
                           "frames_unanswered": 0, "latency": {}})
r1, r2, r3 = rep("r1"), rep("r2"), rep("r3")
r1_log = open(f"{work}/r1.log").read()
hap = {}
try:
    for row in csv.DictReader(open(f"{work}/haproxy_stats.csv").read().lstrip("# ").splitlines()):
        if row["pxname"] == "brisvox_replicas" and row["svname"] in ("r1", "r2", "r3"):
            hap[row["svname"]] = {"sessions_total": int(row["stot"]), "status": row["status"]}
except Exception:
    pass
# The balancer's cost: r3's frames via HAProxy against the direct streams' frames to r3, both sent
# in the steady part of the run (after the ramp, before the SIGTERM: no reconnection bursts).
lat3 = r3.get("latency_before_split", {})
latd = dire.get("latency_before_split", {})
def diff(a, b):
    return None if a is None or b is None else round(a - b, 3)
summary = {
    "streams": streams, "seconds": seconds, "direct_streams": direct,
    "sigterm_r1_at_s": int(term_at), "sigkill_r2_at_s": int(kill_at),
    "streams_per_replica_first_connection": {k: v["connections"] - v["reconnects_landed"] for k, v in sorted(reps.items())},
    "connections_per_replica": {k: v["connections"] for k, v in sorted(reps.items())},
    "haproxy_sessions_per_replica": {k: v["sessions_total"] for k, v in sorted(hap.items())},
    "frames_unanswered_on_survivor_r3": r3["frames_unanswered"],
    "frames_unanswered_direct_to_r3": dire.get("frames_lost"),
    "call_frames_lost": bal.get("call_frames_lost"),
    "frames_resent_after_reconnect": bal.get("frames_resent"),
    "drained_r1": {
        "connections": r1["connections"], "closed_1001": r1["closed_1001"],
        "closed_1001_after_final_events": r1["closed_1001_after_final_events"],
        "other_end": r1["other_end"] + r1["cut_off"], "frames_unanswered_then_resent": r1["frames_unanswered"],
        "exit_status": int(r1_rc), "log_drained": "drained, exiting" in r1_log},
    "killed_r2": {
        "connections": r2["connections"], "cut_off": r2["cut_off"], "closed_1001": r2["closed_1001"],
        "completed": r2["completed"], "frames_unanswered_then_resent": r2["frames_unanswered"], "exit_status": int(r2_rc)},
    "reconnects": bal.get("reconnects"), "reconnects_failed": bal.get("reconnects_failed"),
    "reconnect_failure_reasons": bal.get("reconnect_failure_reasons"),
    "reconnects_landed": {k: v["reconnects_landed"] for k, v in sorted(reps.items()) if v["reconnects_landed"]},
    "streams_completed": bal.get("connections_completed"), "stream_failures": bal.get("connection_failures"),
    "failure_reasons": bal.get("failure_reasons"),
    "p99_ms_before_sigterm": bal.get("latency_before_split", {}).get("p99_ms"),
    "p99_ms_after_sigterm": bal.get("latency_after_split", {}).get("p99_ms"),
    "p50_ms_before_sigterm": bal.get("latency_before_split", {}).get("p50_ms"),
    "p50_ms_after_sigterm": bal.get("latency_after_split", {}).get("p50_ms"),
    "balancer_overhead_steady": {
        "window_s": [bal.get("ramp_s"), int(term_at)],
        "via_haproxy_on_r3": lat3, "direct_to_r3": latd,
        "added_p50_ms": diff(lat3.get("p50_ms"), latd.get("p50_ms")),
        "added_p99_ms": diff(lat3.get("p99_ms"), latd.get("p99_ms"))},
    "p99_ms_per_replica_whole_run": {k: v["latency"].get("p99_ms") for k, v in sorted(reps.items())},
    "machine": bal.get("machine"),
}
if "streams" in base:
    summary["baseline_one_replica"] = {
        "streams": base["streams"], "seconds": base["seconds"], "p50_ms": base["p50_event_latency_ms"],
        "p99_ms": base["p99_event_latency_ms"], "frames_lost": base["frames_lost"],
        "replica_cores_per_stream": base.get("replica_cores_per_stream")}
    p99_1, p99_3 = base["p99_event_latency_ms"], summary["p99_ms_before_sigterm"]
    summary["scale"] = {"streams_ratio": round(streams / base["streams"], 2),
                        "p99_ms_one_replica": p99_1, "p99_ms_three_replicas": p99_3,
                        "p99_ratio": round(p99_3 / p99_1, 2) if p99_1 and p99_3 else None}
first = summary["streams_per_replica_first_connection"]
checks = {
    "every_stream_completed": bal.get("connection_failures") == 0 and bal.get("connections_completed") == streams,
    "survivor_lost_no_frame": r3["frames_unanswered"] == 0 and dire.get("frames_lost") == 0,
    "call_lost_no_frame": bal.get("call_frames_lost") == 0,
    "all_three_replicas_took_streams": all(first.get(r, 0) > 0 for r in ("r1", "r2", "r3")),
    "drained_streams_got_final_events_and_1001": r1["closed_1001"] > 0 and r1["closed_1001"] == r1["closed_1001_after_final_events"]
        and r1["other_end"] + r1["cut_off"] == 0,
    "drained_replica_exited_cleanly": int(r1_rc) == 0 and "drained, exiting" in r1_log,
    # Every connection the drain or the kill ended was followed by one that opened (refused
    # attempts in between, e.g. a replica over its latency budget, are counted and retried).
    "killed_replica_clients_cut_off_and_reconnected": r2["cut_off"] > 0
        and bal.get("reconnects") == r1["closed_1001"] + r2["cut_off"] + r2["closed_1001"],
    "no_reconnect_landed_on_a_stopped_replica": rep("r1")["reconnects_landed"] == 0,
}
summary["checks"] = checks
summary["ok"] = all(checks.values())
print(json.dumps(summary, indent=2))
sys.exit(0 if summary["ok"] else 1)
PY
