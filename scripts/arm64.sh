#!/usr/bin/env bash
# make test-arm64 (docs/portability.md, "aarch64"): the library, the programs and the suite
# cross-built for aarch64 Linux with Debian's gcc-aarch64-linux-gnu and the arm64 multiarch -dev
# packages of the dependencies, then the tests of what the code computes run under qemu-user.
# On an aarch64 machine the suite simply runs natively (make test).
#
# usage: scripts/arm64.sh BUILD_DIR [PATTERN [HOST_BIN]]
#        scripts/arm64.sh --bench BUILD_DIR
#   PATTERN   the tests to run (ctest -R), default all
#   HOST_BIN  this machine's programs: cli_test_same_bytes compares their artifacts with the
#             aarch64 programs' (NINFER_HOST_BIN)
#   --bench   only the packages and ninfer-bench, cross-built in BUILD_DIR (tests off, the
#             default build's flags), for bench/insns.sh (make bench-insns): no Criterion, no
#             binfmt_misc (qemu-aarch64 runs it as a command)
#
# As root, everything it needs is set up, and what it started is undone at its end:
#   - arm64 is added to dpkg's architectures and the packages are installed (scripts/deps.sh);
#   - Criterion's arm64 library cannot be installed beside the host's: it depends on libnanomsg5,
#     which is not Multi-Arch: same.  libcriterion3, libcriterion-dev and libnanomsg5 for arm64
#     are unpacked into BUILD_DIR/criterion-root instead; Criterion's other libraries (libgit2,
#     libffi, ...) are installed as arm64 multiarch packages;
#   - qemu-aarch64 is registered with binfmt_misc for the run (Criterion runs each test in a new
#     process of the same program, so the emulator must be the kernel's, not a prefix); the
#     registration, and the mount of binfmt_misc when it was not mounted, are removed at exit.
#     An existing registration of an aarch64 emulator (Debian's qemu-user-binfmt) is used as it is.
# Runs are serialized (a lock in /tmp): one run's cleanup never pulls the emulator from another.
# Without root, when something is missing, it says what and skips (exit 0); as root, a setup
# step that fails fails the run (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."
bench=no
if [ "${1:-}" = --bench ]; then
  bench=yes
  shift
fi
build=${1:?usage: arm64.sh BUILD_DIR [PATTERN [HOST_BIN]] | arm64.sh --bench BUILD_DIR}
pattern=${2:-}
host_bin=${3:-}
case $build in /*) ;; *) build=$PWD/$build ;; esac
case $build in *[[:space:]]*)
  echo "test-arm64: the build directory '$build' holds white space, which pkg-config's files cannot" >&2
  exit 2
  ;;
esac

if [ "$(uname -m)" = aarch64 ]; then
  if [ $bench = yes ]; then
    echo "test-arm64: SKIP: this machine is aarch64, where make bench measures the kernels themselves (no cross build)"
    exit 0
  fi
  echo "test-arm64: this machine is aarch64: the suite runs natively (make test)"
  exec make test
fi

root=no
[ "$(id -u)" -ne 0 ] || root=yes
skip() {
  echo "test-arm64: SKIP: $*"
  exit 0
}
# a step that cannot be done: a skip without root, a failure as root (who could have done it)
cannot() {
  if [ $root = yes ]; then
    echo "test-arm64: FAIL: $*" >&2
    exit 1
  fi
  skip "$*"
}
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
need() { # need PACKAGE...: installed as root, else named and skipped
  local missing=() p
  for p in "$@"; do installed "$p" || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ $root = yes ] || skip "not root, and these Debian packages are missing: ${missing[*]} (as root:" \
    "dpkg --add-architecture arm64 && apt-get update && apt-get install ${missing[*]})"
  bash scripts/deps.sh "${missing[@]}"
}

exec 9>/tmp/ninfer-test-arm64.lock
flock 9 || cannot "cannot take /tmp/ninfer-test-arm64.lock"

packages=(gcc-aarch64-linux-gnu qemu-user)
for p in libjansson-dev libxxhash-dev libyaml-dev libzstd-dev zlib1g-dev; do packages+=("$p:arm64"); done
if [ $root = yes ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "test-arm64: adding arm64 to dpkg's architectures (dpkg --add-architecture arm64)"
  dpkg --add-architecture arm64
  apt-get update -qq
fi
need "${packages[@]}"

if [ $bench = yes ]; then
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNINFER_TESTS=OFF -DNINFER_BENCH=ON \
      -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-linux-gnu.cmake" >/dev/null
  fi
  cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target ninfer-bench
  exit 0
fi

# ---------------------------------------------------------------- Criterion, unpacked
crit=$build/criterion-root
libdir=$crit/usr/lib/aarch64-linux-gnu
deps=$(apt-cache depends --no-recommends --no-suggests libcriterion3:arm64 2>/dev/null |
  awk '/Depends:/ { print $2 }' | sed 's/:arm64$//' | grep -v -e '^libnanomsg5$' -e '^libc6$' -e '^<' | sort -u || true)
[ -n "$deps" ] || cannot "apt knows no libcriterion3:arm64 (is arm64 in dpkg's architectures, and apt-get update done?)"
dep_pkgs=()
for d in $deps; do dep_pkgs+=("$d:arm64"); done
need "${dep_pkgs[@]}"
if [ ! -f "$crit/criterion.pc" ]; then
  rm -rf "$crit" "$build/criterion-debs"
  mkdir -p "$build/criterion-debs" "$crit"
  (cd "$build/criterion-debs" &&
    apt-get -q -o APT::Sandbox::User="$(id -un)" download libcriterion3:arm64 libcriterion-dev:arm64 libnanomsg5:arm64) ||
    cannot "apt-get download of Criterion's arm64 packages failed"
  for d in "$build"/criterion-debs/*.deb; do dpkg-deb -x "$d" "$crit"; done
  version=$(sed -n 's/^Version: *//p' "$libdir/pkgconfig/criterion.pc")
  # our own .pc: the shared library only (the private requirements are for static links), and
  # an RPATH (not RUNPATH: it also finds libnanomsg for libcriterion) to the unpacked libraries
  cat >"$crit/criterion.pc.tmp" <<EOF
prefix=$crit/usr
includedir=\${prefix}/include
libdir=\${prefix}/lib/aarch64-linux-gnu
Name: criterion
Description: Criterion, unpacked for the arm64 cross build (scripts/arm64.sh)
Version: $version
Libs: -L\${libdir} -Wl,-rpath-link,\${libdir} -Wl,--disable-new-dtags -Wl,-rpath,\${libdir} -lcriterion
Cflags: -I\${includedir}
EOF
  mv "$crit/criterion.pc.tmp" "$crit/criterion.pc"
fi

# ---------------------------------------------------------------- the build
# The default build's -O3, with -g1 (line tables only, enough for a crash's file:line) for a shorter
# build: GCC's code does not depend on -g, so the tests run the code users build.  (The unit
# tests' own files are at -O1 -g1, as in every default build: tests/CMakeLists.txt.)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O3 -g1 -DNDEBUG" \
    -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-linux-gnu.cmake" \
    -DNINFER_CRITERION_PKGCONFIG="$crit" -DNINFER_TEST_EMULATED=ON
fi
# (a build directory configured before the option existed takes it too)
grep -q '^NINFER_TEST_EMULATED:BOOL=ON$' "$build/CMakeCache.txt" || cmake -B "$build" -DNINFER_TEST_EMULATED=ON >/dev/null
# With a pattern that takes unit tests, golden cases and CLI tests only: the programs (those the
# tests run too: the fault-injecting convert, the docs' examples) and the unit tests it names;
# otherwise everything.
targets=(all)
if [ -n "$pattern" ]; then
  names=$(cd "$build" && ctest -N -R "$pattern" | sed -n 's/^ *Test *#[0-9]*: //p')
  if ! printf '%s\n' "$names" | grep -qvE '^(test_|cli_cases_|cli_test_)|^$'; then
    targets=(ninfer ninfer-convert ninfer-inspect ninfer-verify ninfer-dequant ninfer-diff ninfer-gen-checkpoint
      ninfer-demo-sample ninfer-mprog-echo)
    all_targets=$(cmake --build "$build" --target help | sed -n 's/^\.\.\. //p')
    for t in $all_targets; do
      case $t in ninfer-convert-faults | example_*) targets+=("$t") ;; esac
    done
    for n in $(printf '%s\n' "$names" | grep '^test_' || true); do targets+=("$n"); done
  fi
fi
# (several targets build as one, ninfer_build_set, so that they build in parallel: CMakeLists.txt)
if [ "${targets[*]}" != all ]; then
  cmake -B "$build" "-DNINFER_BUILD_SET=$(IFS=';' && echo "${targets[*]}")" >/dev/null
  targets=(ninfer_build_set)
fi
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target "${targets[@]}"

# ---------------------------------------------------------------- qemu-aarch64 as the kernel's
# The ELF header of an aarch64 executable: 64-bit, little-endian, e_machine 183 (0xb7); the mask
# leaves out the OS ABI byte and the low bit of e_type (executables and PIEs alike).
binfmt=/proc/sys/fs/binfmt_misc
magic=7f454c460201010000000000000000000200b700
mounted=no
registered=
cleanup() {
  [ -z "$registered" ] || echo -1 >"$binfmt/$registered" || true
  [ $mounted = no ] || umount "$binfmt" || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# an enabled entry for aarch64 executables, whatever its name and interpreter
have_binfmt() {
  local f
  [ -f "$binfmt/status" ] && grep -qx enabled "$binfmt/status" || return 1
  for f in "$binfmt"/*; do
    case ${f##*/} in register | status) continue ;; esac
    grep -qx enabled "$f" 2>/dev/null && grep -qx "magic $magic" "$f" && return 0
  done
  return 1
}
if ! have_binfmt; then
  [ $root = yes ] || skip "no aarch64 emulator is registered with binfmt_misc, and registering one needs root"
  if [ ! -f "$binfmt/status" ]; then
    mount -t binfmt_misc binfmt_misc "$binfmt" || cannot "cannot mount binfmt_misc on $binfmt"
    mounted=yes
  fi
  registered=ninfer-qemu-aarch64
  printf '%s' ":$registered:M::\\x7fELF\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\xb7\\x00:\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xff\\xff\\xff:$(command -v qemu-aarch64):" \
    >"$binfmt/register" || {
    registered=
    cannot "cannot register qemu-aarch64 with binfmt_misc"
  }
  have_binfmt || cannot "qemu-aarch64 was registered with binfmt_misc, but no enabled entry has its magic"
fi

args=()
[ -z "$pattern" ] || args=(-R "$pattern")
if [ -n "$host_bin" ]; then
  [ -x "$host_bin/ninfer-convert" ] || { echo "test-arm64: $host_bin/ninfer-convert is not there" >&2; exit 2; }
  NINFER_HOST_BIN=$(cd "$host_bin" && pwd)
  export NINFER_HOST_BIN
fi
cd "$build"
# qemu-aarch64's CPU (its default, max) has the ARMv8 SHA-256 instructions: test_common_sha256
# fails if the detection does not see them, rather than skipping the kernel's comparison
export NINFER_TEST_EXPECT_SHA=1
ctest --output-on-failure --no-tests=error -j "$(nproc 2>/dev/null || echo 2)" "${args[@]}"
