#!/usr/bin/env bash
# Three brisvox replicas behind HAProxy on loopback, with one replica drained and another killed
# during a real-time load; prints one JSON summary on stdout (docs/DEPLOYMENT.md shows a run).
#
#   scripts/scale_test.sh                       # 600 streams x 40 s, with a one-replica baseline first
#   scripts/scale_test.sh --streams 30 --seconds 12 --no-baseline   # the CTest variant (deploy.scale_test)
#   scripts/scale_test.sh --cpu-per-replica 0.4 --seconds 30   # capped replicas: the capacity ratio
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
# With --cpu-per-replica Q (root; the cgroup v1 `cpu` controller), every replica runs in a cgroup of
# its own with a CPU quota of Q cores (cpu.cfs_quota_us over a 100 ms period), as on a node; the
# balancer and the load generator run outside them. Then, instead of the baseline:
#   capacity  one capped replica alone (r3, direct): the most streams that keep event p99 within
#             --p99-ms with no frame lost and no stream refused (doubling, then bisection; each probe
#             --probe-seconds long)
#   aggregate three capped replicas behind HAProxy at three times that, steady; if that misses the
#             target, bisection down to the most that meets it; capacity_ratio = that / one's
#   balanced  the drain and kill run at the aggregate's load, as a rolling update and a crash go on
#             a cluster: a replacement r4 starts (and is UP) before r1 is drained, and r5 starts
#             when r2 is killed; r3, r4 and r5 are the survivors
# The cgroups are removed at the end, like the processes.
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
cpu_per_replica=
p99_ms=15
probe_seconds=15

usage() { sed -n '2,33p' "$0"; }
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
    --cpu-per-replica) cpu_per_replica=$2; shift 2 ;;
    --p99-ms) p99_ms=$2; shift 2 ;;
    --probe-seconds) probe_seconds=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "scale_test.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for v in streams seconds direct budget_s p99_ms probe_seconds; do
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

capped=0
if [[ -n $cpu_per_replica ]]; then
  [[ $cpu_per_replica =~ ^([0-9]+(\.[0-9]*)?|\.[0-9]+)$ ]] && awk -v q="$cpu_per_replica" 'BEGIN { exit !(q >= 0.05 && q <= 64) }' || {
    echo "scale_test.sh: --cpu-per-replica must be a number of cores from 0.05 to 64, got '$cpu_per_replica'" >&2; exit 2; }
  capped=1
  baseline=0  # the capacity search takes its place
  ((probe_seconds >= 5)) || { echo "scale_test.sh: --probe-seconds must be at least 5" >&2; exit 2; }
  cg_root=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ { print $2; exit }' /proc/mounts)
  [[ -n $cg_root && -w $cg_root ]] || {
    echo "scale_test.sh: --cpu-per-replica needs the cgroup v1 cpu controller mounted and writable (as root); found '${cg_root:-none}' in /proc/mounts" >&2; exit 1; }
  quota_us=$(awk -v q="$cpu_per_replica" 'BEGIN { printf "%d", q * 100000 + 0.5 }')
fi

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
  if [[ -n ${group:-} && -d $group ]]; then
    for d in "$group"/r*/; do [[ -d $d ]] && rmdir "$d" 2>/dev/null || true; done
    rmdir "$group" 2>/dev/null || echo "scale_test.sh: could not remove the cgroup $group" >&2
  fi
  if ((keep == 0 && rc == 0)); then rm -rf "$work"; else echo "scale_test.sh: logs kept in $work" >&2; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { printf 'scale_test.sh: [%3ds] %s\n' $((SECONDS - started)) "$*" >&2; }
over_budget() { ((SECONDS - started > budget_s)); }

# Free loopback ports: r1..r5 (r4 and r5 only with --cpu-per-replica), the balancer, its stats page.
read -r p1 p2 p3 p4 p5 pb ps < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(7)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')

declare -A rpid rport=([r1]=$p1 [r2]=$p2 [r3]=$p3 [r4]=$p4 [r5]=$p5)
if ((capped)); then group=$cg_root/brisvox-scale-$$; mkdir "$group"; fi
start_replica() {  # start_replica rN: one inference thread each (the replicas share this machine)
  local r=$1
  local cmd=("$brisvox" serve --host 127.0.0.1 --port "${rport[$r]}" --workers 1 --drain-timeout-s 15 --max-streams 2000)
  if ((capped)); then
    mkdir "$group/$r"
    echo 100000 >"$group/$r/cpu.cfs_period_us"
    echo "$quota_us" >"$group/$r/cpu.cfs_quota_us"
    # The shell joins the cgroup, then becomes the replica: every thread it starts is in it.
    bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' _ "$group/$r" "${cmd[@]}" >"$work/$r.log" 2>&1 &
  else
    "${cmd[@]}" >"$work/$r.log" 2>&1 &
  fi
  rpid[$r]=$!
  pids+=("$!")
}
for r in r1 r2 r3; do start_replica "$r"; done
servers=("127.0.0.1:$p1" "127.0.0.1:$p2" "127.0.0.1:$p3")
# r4 and r5, the replacements, are in the configuration from the start: DOWN until they listen.
((capped)) && servers+=("127.0.0.1:$p4" "127.0.0.1:$p5")
"$render" --bind "127.0.0.1:$pb" --stats "127.0.0.1:$ps" "${servers[@]}" >"$work/haproxy.cfg"
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

echo '{}' >"$work/capped.json"
if ((capped)); then
  # One probe: N streams for --probe-seconds, straight to a replica or through HAProxy. It passes
  # when every stream ran to its end, no frame was lost and event p99 <= --p99-ms.
  probe() {  # probe NAME URL STREAMS -> prints "pass P99" or "fail P99"
    local name=$1 url=$2 n=$3
    timeout $((probe_seconds + 40)) "$brisvox" loadtest --url "$url" --streams "$n" --seconds "$probe_seconds" --ramp-s 2 \
      --json >"$work/$name.json" 2>"$work/$name.err" || true
    python3 - "$work/$name.json" "$n" "$p99_ms" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception:
    print("fail none"); sys.exit()
n, target = int(sys.argv[2]), float(sys.argv[3])
p99 = j.get("p99_event_latency_ms")
ok = (j.get("connection_failures") == 0 and j.get("connections_completed") == n and j.get("frames_lost") == 0
      and p99 is not None and p99 <= target)
print("pass" if ok else "fail", p99)
PY
    sleep 2  # the replica lets the streams go
  }
  probes=()
  try_at() {  # try_at one|three N: one probe; sets $verdict, logs and records it
    local url what p99
    if [[ $1 == one ]]; then url="ws://127.0.0.1:$p3" what="one replica at $cpu_per_replica cores"
    else url="ws://127.0.0.1:$pb" what="three replicas behind HAProxy"; fi
    over_budget && { log "capacity search over --budget-s"; exit 1; }
    read -r verdict p99 < <(probe "$1_$2" "$url" "$2")
    log "$what, $2 streams: p99 $p99 ms, $verdict"
    probes+=("$1:$2:$verdict:$p99")
  }
  bisect() {  # bisect one|three: narrows lo (met) .. hi (missed) to within 5 % of lo
    while ((hi - lo > (lo / 20 > 2 ? lo / 20 : 2))); do
      n=$(((lo + hi) / 2))
      try_at "$1" "$n"
      if [[ $verdict == pass ]]; then lo=$n; else hi=$n; fi
    done
  }
  # One capped replica alone (r3): double from 25 until a probe misses, then bisect.
  lo=0 hi=0 n=25
  while ((hi == 0)); do
    try_at one "$n"
    if [[ $verdict == pass ]]; then lo=$n; n=$((n * 2)); ((n <= 4000)) || hi=$n; else hi=$n; fi
  done
  bisect one
  ((lo > 0)) || { log "one replica at $cpu_per_replica cores meets p99 <= $p99_ms ms at no stream count tried"; exit 1; }
  one=$lo
  # Three replicas behind HAProxy: three times that, then bisection down if it misses.
  try_at three $((3 * one))
  if [[ $verdict == pass ]]; then lo=$((3 * one)) hi=0; else lo=$one hi=$((3 * one)); bisect three; fi
  three=$lo
  python3 - "$work" "$cpu_per_replica" "$quota_us" "$p99_ms" "$probe_seconds" "$one" "$three" "${probes[@]}" <<'PY'
import json, sys
work, q, quota, target, probe_seconds, one, three = sys.argv[1:8]
probes = []
for p in sys.argv[8:]:
    phase, n, verdict, p99 = p.split(":")
    probes.append({"replicas": 1 if phase == "one" else 3, "streams": int(n), "p99_ms": None if p99 == "None" else float(p99),
                   "meets_target": verdict == "pass"})
def detail(name):
    try:
        j = json.load(open(f"{work}/{name}.json"))
    except Exception:
        return None
    out = {k: j.get(k) for k in ("streams", "seconds", "p50_event_latency_ms", "p99_event_latency_ms", "frames_lost",
                                 "connection_failures")}
    if "replicas" in j:
        out["streams_per_replica"] = {r: v["connections"] for r, v in sorted(j["replicas"].items())}
        out["p99_ms_per_replica"] = {r: v["latency"].get("p99_ms") for r, v in sorted(j["replicas"].items())}
    return out
one, three = int(one), int(three)
json.dump({"cpu_per_replica": float(q), "cfs_quota_us": int(quota), "cfs_period_us": 100000,
           "p99_target_ms": float(target), "probe_seconds": int(probe_seconds),
           "one_replica_streams": one, "one_replica_run": detail(f"one_{one}"),
           "three_replicas_streams": three, "three_replicas_run": detail(f"three_{three}"),
           "capacity_ratio": round(three / one, 2), "probes": probes}, open(f"{work}/capped.json", "w"))
PY
  streams=$three
  direct=$(( one / 10 > 3 ? one / 10 : 3 ))
  log "capacity: one capped replica $one streams, three $three (ratio $(python3 -c "print(round($three / $one, 2))")); the drain and kill run at $three"
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

if ((capped && term_at > 3)); then
  # A rolling update: the replacement first, UP in HAProxy, then the old replica drains.
  sleep $((term_at - 3))
  log "start r4 (the replacement of r1)"
  start_replica r4
  until [[ $(curl -fsS "http://127.0.0.1:$ps/stats;csv" 2>/dev/null | grep -c '^brisvox_replicas,r4,.*,UP') == 1 ]]; do
    ((SECONDS - t0 < term_at + 10)) || { log "r4 not UP in HAProxy 10 s after the drain was due"; exit 1; }
    sleep 0.1
  done
  while ((SECONDS - t0 < term_at)); do sleep 0.1; done
else
  sleep "$term_at"
fi
log "SIGTERM r1 (pid ${rpid[r1]})"
kill -TERM "${rpid[r1]}"
while ((SECONDS - t0 < kill_at)); do sleep 0.1; done
log "SIGKILL r2 (pid ${rpid[r2]})"
kill -KILL "${rpid[r2]}"
if ((capped)); then log "start r5 (the restart of r2)"; start_replica r5; fi

set +e
wait "$lb"; lb_rc=$?
wait "$ld"; ld_rc=$?
wait "${rpid[r1]}"; r1_rc=$?
wait "${rpid[r2]}" 2>/dev/null; r2_rc=$?  # bash would report the kill the test made
set -e
log "load done after $((SECONDS - t0)) s (loadtest exits $lb_rc, $ld_rc; r1 exit $r1_rc, r2 exit $r2_rc)"
curl -fsS "http://127.0.0.1:$ps/stats;csv" >"$work/haproxy_stats.csv" 2>/dev/null || true

throttling=()
if ((capped)); then
  for r in r1 r2 r3 r4 r5; do
    [[ -f $group/$r/cpu.stat ]] && throttling+=("$r:$(awk '{ printf "%s=%s,", $1, $2 }' "$group/$r/cpu.stat")")
  done
fi
python3 - "$work" "$streams" "$seconds" "$direct" "$term_at" "$kill_at" "$r1_rc" "$r2_rc" "$lb_rc" "$ld_rc" "${throttling[@]}" <<'PY'
import csv, json, sys
work, streams, seconds, direct, term_at, kill_at, r1_rc, r2_rc, lb_rc, ld_rc = sys.argv[1:11]
throttling = {}
for t in sys.argv[11:]:
    name, stats = t.split(":", 1)
    throttling[name] = {k: int(v) for k, v in (kv.split("=") for kv in stats.strip(",").split(","))}
capped = json.load(open(f"{work}/capped.json"))
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
# The replicas that neither drained nor died: r3, and with --cpu-per-replica the replacements.
survivors = ["r3"] + (["r4", "r5"] if capped else [])
survivor_frames_unanswered = {k: rep(k)["frames_unanswered"] for k in survivors}
r1_log = open(f"{work}/r1.log").read()
hap = {}
try:
    for row in csv.DictReader(open(f"{work}/haproxy_stats.csv").read().lstrip("# ").splitlines()):
        if row["pxname"] == "brisvox_replicas" and row["svname"] in ("r1", "r2", "r3", "r4", "r5"):
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
    "frames_unanswered_on_survivors": survivor_frames_unanswered,
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
if capped:
    summary["capacity_ratio"] = capped["capacity_ratio"]
    summary["capped"] = capped
    summary["cgroup_cpu_stat"] = throttling
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
    "survivors_lost_no_frame": all(v == 0 for v in survivor_frames_unanswered.values()) and dire.get("frames_lost") == 0,
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
