#!/usr/bin/env bash
# The installed brisvox, away from the checkout (issue 14; CTest install.layout_and_deb):
#   1. cmake --install BUILD into a temporary prefix, then move the prefix (it must be relocatable);
#   2. cpack the .deb (brisvox_VERSION_amd64.deb, Depends from dpkg-shlibdeps) and dpkg -x it;
#   3. for each of the two trees, with the checkout, its third_party/ and BUILD hidden (a private
#      mount namespace mounts empty folders over them; nothing outside this process sees it):
#      RUNPATH and ldd point into the tree, `brisvox vad` on the sample prints what the build
#      tree's binary prints, `brisvox serve --config` answers /healthz and the demo page and
#      exits 0 on SIGTERM, and a C program built against the tree with find_package(brisvox) and
#      with pkg-config runs the bundled model.
# Nothing is built but the two tiny C programs: install and cpack copy what BUILD holds.
#   scripts/install_test.sh build/release        exit 0 pass, 1 fail, 77 checkout not hidable
set -euo pipefail
unset CMAKE_C_COMPILER_LAUNCHER CMAKE_CXX_COMPILER_LAUNCHER
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [[ ${1:-} == --hidden ]]; then
  # ---- inside the mount namespace: the checks of one tree ------------------------------------
  shift
  tree=$1 work=$2 version=$3
  shift 3
  for hidden in "$@"; do
    if [[ -e $hidden ]]; then mount -t tmpfs -o size=1m,mode=0755 brisvox-hidden "$hidden"; fi
  done
  for hidden in "$@"; do
    if [[ -n $(ls -A "$hidden" 2>/dev/null) ]]; then echo "FAIL: $hidden is not hidden" >&2; exit 1; fi
  done
  cd "$work"
  fail() { echo "FAIL [$tree]: $*" >&2; exit 1; }
  bin="$tree/bin/brisvox"
  runpath=$(readelf -d "$bin" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
  [[ $runpath == '$ORIGIN/../lib' ]] || fail "RUNPATH of bin/brisvox is '$runpath', not \$ORIGIN/../lib"
  ort=$(ldd "$bin" | awk '/libonnxruntime/ {print $3}')
  [[ $(realpath "$ort") == $(realpath "$tree/lib/libonnxruntime.so.1") ]] ||
    fail "bin/brisvox loads ONNX Runtime from '$ort', not from the tree's lib/"
  ldd "$bin" "$tree"/lib/libbrisvox_c.so | grep -q 'not found' && fail "a library is not found: $(ldd "$bin")"
  "$bin" --version | grep -q "brisvox $version" || fail "brisvox --version: $("$bin" --version)"
  "$bin" vad sample.wav > vad.json 2> vad.err || fail "brisvox vad: $(cat vad.err)"
  cmp -s vad.json expected_vad.json || fail "brisvox vad differs from the build tree's: $(diff vad.json expected_vad.json)"
  # serve: the packaged example config, on a free port; /healthz, the page from share/brisvox/web.
  # serve.log exists before the background shell opens it (sed on a missing file would end this
  # script under set -e), and serve dies with the script: a survivor holds CTest's output pipe.
  : > serve.log
  "$bin" serve --config "$tree/share/brisvox/serve.toml" --port 0 2> serve.log &
  pid=$!
  trap 'kill $pid 2> /dev/null || true' EXIT
  for _ in $(seq 100); do
    port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' serve.log)
    [[ -n $port ]] && break
    kill -0 $pid 2> /dev/null || fail "serve exited: $(cat serve.log)"
    sleep 0.1
  done
  [[ -n $port ]] || { kill $pid; fail "serve did not start in 10 s: $(cat serve.log)"; }
  health=$(curl -sS --max-time 5 "http://127.0.0.1:$port/healthz") || { kill $pid; fail "/healthz: no answer"; }
  page=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/") || true
  kill -TERM $pid
  wait $pid || fail "serve did not exit 0 on SIGTERM: $(cat serve.log)"
  trap - EXIT
  [[ $health == *'"status":"ok"'* ]] || fail "/healthz answered '$health'"
  [[ $page == 200 ]] || fail "GET / (the demo page) answered $page: $(cat serve.log)"
  # A C program against the installed library: find_package(brisvox), then pkg-config.
  rm -rf consumer-build
  cmake -S consumer -B consumer-build -DCMAKE_PREFIX_PATH="$tree" -DCMAKE_BUILD_TYPE=Release > cmake.log 2>&1 ||
    fail "find_package(brisvox): $(cat cmake.log)"
  cmake --build consumer-build > build.log 2>&1 || fail "building against brisvox::c: $(cat build.log)"
  consumer-build/brisvox_consumer sample.wav > c1.out 2>&1 || fail "find_package program: $(cat c1.out)"
  export PKG_CONFIG_PATH="$tree/lib/pkgconfig"
  [[ $(pkg-config --modversion brisvox) == "$version" ]] || fail "pkg-config --modversion brisvox"
  # shellcheck disable=SC2046  # pkg-config's words are separate arguments
  cc -std=c11 -o consumer_pc consumer/main.c $(pkg-config --cflags --libs brisvox) \
    -Wl,-rpath,"$(pkg-config --variable=libdir brisvox)" > cc.log 2>&1 || fail "pkg-config build: $(cat cc.log)"
  ./consumer_pc sample.wav > c2.out 2>&1 || fail "pkg-config program: $(cat c2.out)"
  cmp -s c1.out c2.out || fail "the two C programs disagree"
  echo "ok [$tree]: RUNPATH, ldd, vad, serve + /healthz + page, find_package and pkg-config programs"
  exit 0
fi

# ---- outside: install, package, unpack, then the checks under hidden paths ----------------------
build=$(realpath "${1:?usage: install_test.sh BUILD_DIR}")
src=$(realpath "$here/..")
third_party=$(realpath "$src/third_party")
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")
[[ -n $version ]] || { echo "FAIL: no CPACK_PACKAGE_VERSION in $build/CPackConfig.cmake (configure first)"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/brisvox-install-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
t0=$SECONDS

cmake --install "$build" --prefix "$work/staged" --strip > "$work/install.log" || { cat "$work/install.log"; exit 1; }
mv "$work/staged" "$work/prefix"  # relocatable: nothing may remember where it was installed
t_install=$((SECONDS - t0))

mkdir "$work/deb"
(cd "$work/deb" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/deb" > cpack.log 2>&1) ||
  { cat "$work/deb/cpack.log"; exit 1; }
deb="$work/deb/brisvox_${version}_amd64.deb"
[[ -f $deb ]] || { echo "FAIL: no $deb: $(ls "$work/deb")"; exit 1; }
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libc6 libstdc++6 libsndfile1 libsoxr0; do
  [[ $depends == *"$lib"* ]] || { echo "FAIL: Depends lacks $lib: $depends"; exit 1; }
done
# (Listings are read whole before grep: `grep -q` on a pipe would kill dpkg-deb with SIGPIPE.)
contents=$(dpkg-deb -c "$deb")
for f in ./etc/brisvox/serve.toml ./usr/lib/systemd/system/brisvox.service ./usr/bin/brisvox ./usr/lib/libonnxruntime.so.1; do
  grep -q " $f\$" <<< "$contents" || { echo "FAIL: no $f in the .deb"; exit 1; }
done
grep -q '/tmp\|_CPack_Packages' <<< "$contents" && { echo "FAIL: staging paths in the .deb: $contents"; exit 1; }
conffiles=$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)
grep -qx /etc/brisvox/serve.toml <<< "$conffiles" || { echo "FAIL: /etc/brisvox/serve.toml is not a conffile"; exit 1; }
dpkg -x "$deb" "$work/debroot"
# The unit, with ExecStart pointed at the unpacked binary (verify wants it executable): any
# message (an unknown key is only a warning, exit 0) fails.
if command -v systemd-analyze > /dev/null; then
  sed "s|/usr/bin/brisvox|$work/debroot/usr/bin/brisvox|" "$work/debroot/usr/lib/systemd/system/brisvox.service" \
    > "$work/brisvox.service"
  verify=$(systemd-analyze verify "$work/brisvox.service" 2>&1) && [[ -z $verify ]] ||
    { echo "FAIL: systemd-analyze verify brisvox.service: $verify"; exit 1; }
else
  echo "note: no systemd-analyze here: brisvox.service not verified" >&2
fi
t_deb=$((SECONDS - t0 - t_install))
echo "install: ${t_install} s; .deb ($(du -k "$deb" | cut -f1) KiB, Depends: $depends): ${t_deb} s"

# What the build tree's binary prints is what the installed ones must print.
cp "$third_party/audio/sample.wav" "$work/sample.wav"
(cd "$work" && "$build/brisvox" vad sample.wav > expected_vad.json)
cp -r "$src/tests/install/consumer" "$work/consumer"
cp "${BASH_SOURCE[0]}" "$work/install_test.sh"

# Without a private mount namespace the checks cannot hide the checkout: skip (77) after running them.
source "$here/mount_namespace.sh"
hide=("$src" "$third_party" "$build")
status=0
for tree in "$work/prefix" "$work/debroot/usr"; do
  if ((${#ns[@]})); then
    "${ns[@]}" bash "$work/install_test.sh" --hidden "$tree" "$work" "$version" "${hide[@]}" || status=1
  else
    bash "$work/install_test.sh" --hidden "$tree" "$work" "$version" || status=1
  fi
done
echo "install test: $((SECONDS - t0)) s in all"
((status == 0)) || exit 1
if ((${#ns[@]} == 0)); then
  echo "SKIP: no mount namespace (unshare) here: the checks ran with the checkout visible" >&2
  exit 77
fi
