#!/usr/bin/env bash
# The test command of README.md: set up (idempotent), build a preset, run its tests.
#   scripts/test.sh            setup + build + ctest (release): the whole suite, then the Python
#                              package (scripts/test_python.sh: wheel, fresh venv, pytest)
#   scripts/test.sh asan       the whole suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   scripts/test.sh tsan       the concurrent layers (ctest labels engine, server) under
#                              ThreadSanitizer
#   scripts/test.sh ci         release, asan, tsan, then scripts/fuzz.sh for a bounded time:
#                              what .ci/run runs on every submission. Pipelined: while one phase's
#                              tests (and the Python package) run, the next phase builds at the
#                              lowest CPU priority, and the set-up that only tests need runs beside
#                              the first build; every build is a unity build (docs/TESTING.md, "CI
#                              time")
#   scripts/test.sh PRESET STEP  one step of a preset: build (setup, configure, build), cpu (the
#                              CPU-bound tests), waiting (the tests that wait on the clock, then the
#                              Python package for release)
# With BRISVOX_CI_PRUNE=1 (.ci/run sets it) the ci run deletes each phase's build tree once the
# phase has passed, and setup deletes fetched archives once unpacked (scripts/prune.sh): the
# disk it needs at its peak is then one build tree, not four (docs/TESTING.md, "Disk").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
preset="${1:-release}"

disk() { df -Pk . | awk 'NR == 2 { printf "%.1f GB free", $4 / 1048576 }'; }

if [[ $preset == ci ]]; then
  start=$SECONDS
  echo "[test] ci: $(disk) at the start" >&2
  # A unity build compiles a target's sources in batches: each header is parsed once per batch, not
  # once per file (docs/TESTING.md, "CI time"). Developers' builds stay one object per file.
  export BRISVOX_UNITY=ON
  # build_behind NAME COMMAND...: builds the next phase at the lowest CPU priority while this one's
  # tests run: they keep the CPU they use (nice 19 weighs 15 against their 1024), and the build
  # takes what they leave (the waiting tests need little; the CPU-bound pass leaves a core idle
  # while its last tests finish). Its output goes to a log, printed when it fails.
  behind_pid=""
  build_behind() {
    local name="$1"
    shift
    mkdir -p build
    # Its own process group (job control on for this one job), so that it can be paused as a whole
    # (pause_behind); the same session, so that its nice counts against the tests (the kernel's
    # autogroup shares the CPUs between sessions first: under setsid a build took half of them).
    set -m
    nice -n 19 "$@" >"build/$name.behind.log" 2>&1 &
    behind_pid=$!
    set +m
  }
  # The browser test's fake microphone drifts when a build shares the cores (one run here put the
  # segments of Chromium's resampled capture 128 ms late, against 0-32 ms without it): the build
  # behind is paused while that test runs, beside the other waiting tests as before.
  pause_behind() { kill -STOP -- "-$behind_pid" 2>/dev/null || true; }
  resume_behind() { kill -CONT -- "-$behind_pid" 2>/dev/null || true; }
  join_behind() { # join_behind NAME: waits for the build behind; exits if it failed
    local status=0
    wait "$behind_pid" || status=$?
    if ((status != 0)); then
      cat "build/$1.behind.log" >&2
      echo "[test] the $1 build failed (exit $status)" >&2
      exit "$status"
    fi
    echo "[test] $1 built behind the tests (log: build/$1.behind.log)" >&2
  }
  prune() { # prune PRESET: a passed phase's build tree, with BRISVOX_CI_PRUNE=1
    echo "[test] $1 done at $((SECONDS - start)) s (build/$1 $(du -sh "build/$1" | cut -f1), $(disk))" >&2
    if [[ ${BRISVOX_CI_PRUNE:-0} == 1 ]]; then
      rm -rf "build/$1"
      [[ $1 != release ]] || rm -rf build/python
    fi
  }
  # Each phase's tests all run even when one fails, so that one CI log names every failure.
  status=0
  # What the build needs first; the rest of the set-up (the venv, the models and their conversions,
  # much of it waiting on the network) while the release build runs.
  apt_flag=()
  [[ $(id -u) == 0 ]] || apt_flag=(--no-apt)
  bash scripts/setup.sh --build-only "${apt_flag[@]}"
  bash scripts/setup.sh "${apt_flag[@]}" &
  setup_pid=$!
  export BRISVOX_SETUP_DONE=1  # the phases' builds need nothing more from scripts/setup.sh
  build_status=0
  bash "$0" release build || build_status=$?
  wait "$setup_pid" || { echo "[test] scripts/setup.sh failed" >&2; exit 1; }
  ((build_status == 0)) || exit "$build_status"
  echo "[test] set up and release built at $((SECONDS - start)) s" >&2
  build_behind asan bash "$0" asan build
  bash "$0" release cpu || status=$?
  pause_behind
  (
    browser_status=0
    # Ahead of the other waiting tests on the CPU (same session, so nice counts; root only, else
    # nice warns and runs it as is): Chromium's fake microphone inserts silence when its capture
    # misses a deadline, and a CI run's page segments came 288 ms late beside the server tests.
    nice -n -10 ctest --preset release -L browser || browser_status=$?
    resume_behind
    exit "$browser_status"
  ) &
  browser_pid=$!
  BRISVOX_WAITING_EXCLUDE=browser bash "$0" release waiting || status=$?
  wait "$browser_pid" || status=$?
  resume_behind
  join_behind asan
  ((status == 0)) || exit "$status"
  prune release
  build_behind tsan bash "$0" tsan build
  bash "$0" asan cpu || status=$?
  bash "$0" asan waiting || status=$?
  join_behind tsan
  ((status == 0)) || exit "$status"
  prune asan
  build_behind fuzz bash scripts/fuzz.sh --build-only
  bash "$0" tsan cpu || status=$?
  bash "$0" tsan waiting || status=$?
  join_behind fuzz
  ((status == 0)) || exit "$status"
  prune tsan
  bash scripts/fuzz.sh "${BRISVOX_CI_FUZZ_SECONDS:-3}"
  echo "[test] fuzz done at $((SECONDS - start)) s ($(disk))" >&2
  exit 0
fi

step="${2:-all}"
case "$step" in
  all | build | cpu | waiting) ;;
  *) echo "usage: scripts/test.sh [release|asan|tsan|ci] [build|cpu|waiting]" >&2; exit 2 ;;
esac

if [[ ($step == all || $step == build) && ${BRISVOX_SETUP_DONE:-0} != 1 ]]; then
  apt_flag=()
  [[ $(id -u) == 0 ]] || apt_flag=(--no-apt)
  bash scripts/setup.sh "${apt_flag[@]}"
fi

build_args=()
ctest_args=()
# What the tests may read to leave out what their phase does not need (test_tts_server.py: numerics
# under TSan).
export BRISVOX_TEST_PRESET="$preset"
case "$preset" in
  asan)
    # Five Whisper parity tests compare transcripts against faster-whisper on many recordings
    # (~3 min of CPU here; four on tiny.en, one on base in five languages) and the browser test drives a headless chromium: both are checked in
    # the release suite, and the code they cross (Whisper decoding, the server) runs under the
    # sanitizers in the engine and server tests and the other WhisperParity tests (model layouts).
    # The two peak-RSS bounds (a 10-minute file, a 5-minute upload in the memory of a short one)
    # measure the allocator, and ASan's keeps freed blocks in its quarantine (~300 MB resident
    # here): they hold in the release suite.
    # OpenAI's routes (server_openai_api) translate onto the upload and POST /v1/tts paths, which
    # server_transcribe and server_tts_end_to_end run here, and their parsers are fuzzed with ASan;
    # the calls' soak checks timing and RSS, and the calls' code runs here in server_call_end_to_end,
    # server_telephony_twilio and server_telephony_telnyx. Both pass in the release phase (CI time:
    # docs/TESTING.md).
    # The streams' soak measures RSS and descriptors, which ASan's quarantine distorts, and the
    # calls' loadtest is concurrency (TSan's phase runs it); their code paths run here in
    # server_end_to_end and server_call_end_to_end.
    # The phone-band accuracy check is numerics (the segments of the release build's models); its
    # code paths (the 2x upsampler, both model rates) run here in the audio, CLI and engine tests.
    # So is Whisper's word error rate on the engine's speech (TtsIntelligibility): Piper's and
    # Whisper's code run here in the TTS and speech-to-text engine tests.
    # Three more numerics comparisons are the release suite's alone: a segment's transcript against
    # the transcriber's on the same audio, Piper's audio against piper-tts's, Smart Turn's
    # probabilities against Pipecat's (~35 s of CPU under ASan); so are the beam search's and the
    # temperature fallback's comparisons with faster-whisper and with the transcriber across
    # streams (their lane copies run under ASan in WhisperDecoder.ACopiedLaneContinuesAsItsSource).
    # The streams that wait for one request slot are a matter of threads: release and TSan run them.
    # Word timestamps against faster-whisper's (tiny.en, base) and the engine's words against the
    # transcriber's are numerics too (~40 s of CPU in release); the alignment pass, the path and the
    # placement run here in the words tests on hand-made timings and in the partial transcripts'
    # engine test's decoding.
    # The engine's stt stage, Piper and Smart Turn run under the sanitizers in the other engine,
    # TTS and turn tests.
    ctest_args=(-E '^(WhisperParity\.(FullWindowTextMatchesFasterWhisper|FitWindowStaysCloseToFullWindow|BatchedDecodingEqualsOneAtATime|Int8WeightsKeepFasterWhispersAccuracy)|WhisperMultilingual\.(DetectsAndTranscribesAsFasterWhisper|FasterWhispersDefaultDecodingGivesItsAccuracy|TheFallbackFiresWhereFasterWhispersDoes|APromptAndHotwordsDecodeAsFasterWhispers)|WhisperWords\.(TinyEnWordTimesMatchFasterWhisper|BaseWordTimesMatchFasterWhisperInFiveLanguages)|EngineStt\.(EachSegmentsTranscriptIsTheTranscribersOnTheSameAudio|BeamSearchAndTheFallbackGiveTheTranscribersResultAcrossStreams|StreamsWaitingForTheOneRequestSlotAllGetTheirTranscripts|WordTimestampsAreTheTranscribersOnTheSameAudio)|PiperParity\.AudioEqualsPiperTtsWithNoiseOff|turn\.pipecat_parity|browser\.|CliFiles\.LongFileInBoundedMemory$|server_uploads$|server_openai_api$|server_soak_calls_short$|server_soak_short$|server_call_loadtest$|vad_telephony_accuracy$|TtsIntelligibility\.)')
    ;;
  tsan)
    # The pools, the watchdog, the payload channel, the server and a model's one session (run by
    # all of its workers: tests/runtime/shared_session_test.cpp) are where threads meet; the
    # other layers are single-threaded and covered by asan.
    build_args=(--target brisvox_runtime_tests brisvox_engine_tests brisvox_fault_injection_tests brisvox_turn_engine_tests
                brisvox_engine_accounting_tests brisvox_batch_pool_tests brisvox_payload_tests brisvox_reader_wake_tests
                brisvox_stt_engine_tests brisvox_tts_engine_tests brisvox_call_engine_tests
                brisvox_server_tests brisvox_cli)
    # Of the speech-to-text engine tests, the single-stream transcript comparisons and the word
    # timestamps' comparison are numerics (release, and asan for the first); the concurrent-streams,
    # partial-transcript and bad-stage ones are where threads meet.
    # The calls' soak checks every frame of real-time callers, which Piper under ThreadSanitizer
    # (5-15x slower) cannot keep up with; its calls' threads are covered by server_call_end_to_end.
    # OpenAI's routes start no thread of their own (the upload and TTS paths they translate onto
    # run here in server_transcribe and server_tts_end_to_end); the Realtime sessions are a
    # protocol on an engine stream with transcripts, whose threads server_call_end_to_end crosses here.
    # The server's network side is one thread (io_threads 1): its threads meet the engine's in
    # the wake-ups, the job threads and the pools, which the streams', TTS, calls', uploads' and
    # loadtest's end-to-end tests cross here. The Twilio front is a protocol on the calls' code
    # (one io thread), and so are the Telnyx, Vonage, Asterisk, jambonz and FreeSWITCH fronts (the same MediaStreamFront), and the hardening,
    # operations and soak tests are about inputs, limits and memory over time: ASan's phase and the
    # release phase run them.
    ctest_args=(-L 'engine|server|runtime'
                -E '^(EngineStt\.(EachSegmentsTranscriptIsTheTranscribersOnTheSameAudio|BeamSearchAndTheFallbackGiveTheTranscribersResultAcrossStreams|TelephonyAudioIsTranscribedAt8kHz|TheOfflineRunnerWritesTheTranscriptionDocument|WordTimestampsAreTheTranscribersOnTheSameAudio)|server_soak_calls_short|server_openai_api|server_openai_realtime|server_telephony_twilio|server_telephony_telnyx|server_telephony_vonage|server_telephony_asterisk|server_telephony_jambonz|server_telephony_freeswitch|server_telephony_audiosocket|server_soak_short|server_hardening|server_operations)$')
    ;;
esac

if [[ $step == all || $step == build ]]; then
  cmake --preset "$preset" -DCMAKE_UNITY_BUILD="${BRISVOX_UNITY:-OFF}"
  cmake --build --preset "$preset" -j "$(nproc)" "${build_args[@]}"
fi
# First the tests that keep the CPUs busy, one per core; then those that drive the built server or
# a browser in real time, which mostly wait on the clock and the network (about a fifth of their
# wall time is CPU, measured in docs/TESTING.md "CI time"): twice as many at once.
waiting='e2e|soak|browser'
# Both run even when the first fails, so that one CI log names every failure.
status=0
if [[ $step == all || $step == cpu ]]; then
  ctest --preset "$preset" -j "$(nproc)" -LE "$waiting" "${ctest_args[@]}" || status=$?
fi
if [[ $step == all || $step == waiting ]]; then
  # BRISVOX_WAITING_EXCLUDE: a label the ci run tests on its own (the browser test).
  exclude=()
  [[ -z ${BRISVOX_WAITING_EXCLUDE:-} ]] || exclude=(-LE "$BRISVOX_WAITING_EXCLUDE")
  ctest --preset "$preset" -j "$((2 * $(nproc)))" -L "$waiting" "${exclude[@]}" "${ctest_args[@]}" || status=$?
  # The Python package: wheel, fresh venv, pytest (scripts/test_python.sh; release only).
  if [[ $preset == release ]]; then
    bash scripts/test_python.sh || status=$?
  fi
fi
exit "$status"
