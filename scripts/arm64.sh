#!/usr/bin/env bash
# make test-arm64 (docs/portability.md, "aarch64"): the library, the programs and the suite
# cross-built for aarch64 Linux with Debian's gcc-aarch64-linux-gnu and the arm64 multiarch -dev
# packages of the dependencies, then the tests of what the code computes run under qemu-user.
# On an aarch64 machine the suite simply runs natively (make test).
#
# usage: scripts/arm64.sh BUILD_DIR [PATTERN [HOST_BIN]]
#   PATTERN   the tests to run (ctest -R), default all
#   HOST_BIN  this machine's programs: cli_test_same_bytes compares their artifacts with the
#             aarch64 programs' (NINFER_HOST_BIN)
#
# As root, everything it needs is set up, and what it started is undone at its end:
#   - arm64 is added to dpkg's architectures and the packages are installed (scripts/deps.sh);
#   - Criterion's arm64 packages cannot be installed beside the host's (Debian's libcriterion3
#     and libnanomsg5 are not Multi-Arch: same): they are unpacked into BUILD_DIR/criterion-root;
#   - qemu-aarch64 is registered with binfmt_misc for the run (Criterion runs each test in a new
#     process of the same program, so the emulator must be the kernel's, not a prefix); the
#     registration, and the mount of binfmt_misc when it was not mounted, are removed at exit.
# Without root, when something is missing, it says what and skips (exit 0).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: arm64.sh BUILD_DIR [PATTERN [HOST_BIN]]}
pattern=${2:-}
host_bin=${3:-}
case $build in /*) ;; *) build=$PWD/$build ;; esac

if [ "$(uname -m)" = aarch64 ]; then
  echo "test-arm64: this machine is aarch64: the suite runs natively (make test)"
  exec make test
fi

skip() {
  echo "test-arm64: SKIP: $*"
  exit 0
}
root=no
[ "$(id -u)" -ne 0 ] || root=yes

multiarch=(libjansson-dev libxxhash-dev libyaml-dev libzstd-dev zlib1g-dev)
packages=(gcc-aarch64-linux-gnu qemu-user)
for p in "${multiarch[@]}"; do packages+=("$p:arm64"); done
if [ $root = no ]; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] ||
    skip "not root, and these Debian packages are missing: ${missing[*]} (as root: dpkg --add-architecture" \
      "arm64 && apt-get update && apt-get install ${missing[*]})"
else
  dpkg --print-foreign-architectures | grep -qx arm64 || {
    echo "test-arm64: adding arm64 to dpkg's architectures (dpkg --add-architecture arm64)"
    dpkg --add-architecture arm64
    apt-get update -qq
  }
  bash scripts/deps.sh "${packages[@]}"
fi

# ---------------------------------------------------------------- Criterion, unpacked
crit=$build/criterion-root
libdir=$crit/usr/lib/aarch64-linux-gnu
if [ ! -f "$crit/criterion.pc" ]; then
  # its other libraries (libgit2, libffi, ...) are Multi-Arch: same and installed as usual
  deps=$(apt-cache depends --no-recommends --no-suggests libcriterion3:arm64 2>/dev/null |
    awk '/Depends:/ { print $2 }' | sed 's/:arm64$//' | grep -v -e '^libnanomsg5$' -e '^libc6$' -e '^<' | sort -u || true)
  [ -n "$deps" ] || skip "apt knows no libcriterion3:arm64 (is arm64 in dpkg's architectures, and apt-get update done?)"
  dep_pkgs=()
  for d in $deps; do dep_pkgs+=("$d:arm64"); done
  if [ $root = yes ]; then
    bash scripts/deps.sh "${dep_pkgs[@]}"
  else
    for p in "${dep_pkgs[@]}"; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
        skip "not root, and the Debian package $p (a library of Criterion's) is missing"
    done
  fi
  rm -rf "$crit" "$build/criterion-debs"
  mkdir -p "$build/criterion-debs" "$crit"
  (cd "$build/criterion-debs" &&
    apt-get -q -o APT::Sandbox::User="$(id -un)" download libcriterion3:arm64 libcriterion-dev:arm64 libnanomsg5:arm64)
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
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-linux-gnu.cmake" \
    -DNINFER_CRITERION_PKGCONFIG="$crit"
fi
# with a pattern, only what its tests run: the programs and the unit tests it names
targets=(all)
if [ -n "$pattern" ]; then
  targets=(ninfer ninfer-convert ninfer-inspect ninfer-verify ninfer-dequant ninfer-diff ninfer-gen-checkpoint
    ninfer-demo-sample ninfer-mprog-echo)
  for f in tests/unit/test_*.c; do
    n=$(basename "$f" .c)
    ! printf '%s\n' "$n" | grep -Eq -- "$pattern" || targets+=("$n")
  done
fi
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target "${targets[@]}"

# ---------------------------------------------------------------- qemu-aarch64 as the kernel's
# The ELF header of an aarch64 executable: 64-bit, little-endian, e_machine 183 (0xb7); the mask
# leaves out the OS ABI byte and the low bit of e_type (executables and PIEs alike).
binfmt=/proc/sys/fs/binfmt_misc
mounted=no
registered=
cleanup() {
  [ -z "$registered" ] || echo -1 >"$binfmt/$registered" || true
  [ $mounted = no ] || umount "$binfmt" || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
have_binfmt() {
  local f
  for f in "$binfmt"/*; do
    [ -f "$f" ] && grep -q '^interpreter .*qemu-aarch64' "$f" 2>/dev/null && grep -qx enabled "$f" && return 0
  done
  return 1
}
if ! { [ -f "$binfmt/status" ] && have_binfmt; }; then
  [ $root = yes ] || skip "qemu-aarch64 is not registered with binfmt_misc and registering it needs root"
  if [ ! -f "$binfmt/status" ]; then
    mount -t binfmt_misc binfmt_misc "$binfmt" || skip "cannot mount binfmt_misc on $binfmt"
    mounted=yes
  fi
  registered=ninfer-qemu-aarch64
  printf '%s' ":$registered:M::\\x7fELF\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\xb7\\x00:\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xff\\xff\\xff:$(command -v qemu-aarch64):" \
    >"$binfmt/register" || {
    registered=
    skip "cannot register qemu-aarch64 with binfmt_misc"
  }
fi

args=()
[ -z "$pattern" ] || args=(-R "$pattern")
if [ -n "$host_bin" ]; then
  [ -x "$host_bin/ninfer-convert" ] || { echo "test-arm64: $host_bin/ninfer-convert is not there" >&2; exit 2; }
  NINFER_HOST_BIN=$(cd "$host_bin" && pwd)
  export NINFER_HOST_BIN
fi
cd "$build"
ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" "${args[@]}"
