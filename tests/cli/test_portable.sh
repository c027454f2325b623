#!/usr/bin/env bash
# Portable C (docs/portability.md):
#   1. x86 code lives in the x86 kernel files only: no x86 intrinsic, intrinsics header, vector
#      or mask type, target attribute or pragma, or inline assembly in the library and the
#      programs (lib/, cmd/) outside the kernel directories lib/src/*/simd/ and common/cpu.c
#      (CPUID), common/simd_target.h (the attribute macros) and common/sha256_shani.c (SHA-NI);
#      (the unit tests may use them to check the kernels); NEON's header and vector types, and
#      the ARMv8 SHA-256 target's attribute macro, in the kernel directories only (the macro
#      defined in common/simd_target.h);
#   2. Clang compiles every compilation of this build (compile_commands.json: the library, the
#      programs, the tests, with their own flags and warnings as errors) at -O0 into /dev/null:
#      its code generation runs too (a target-specific builtin outside its target is an error
#      there only), at little cost.  Clang is installed (scripts/deps.sh) when missing and root,
#      else the part is skipped with the reason;
#   3. the configure-time checks of the platform's assumptions refuse a target that breaks one,
#      naming it: x86-64 GCC with -mfpmath=387 evaluates binary32 arithmetic in x87 precision.
# usage: test_portable.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
build=$(cd "$bin/.." && pwd)
src=$(cd "$2/../.." && pwd)

# 1. x86 only in the kernels' files
x86='#include <(x86|imm|emm|pmm|tmm|smm|nmm|wmm|xmm|ia32|cpuid)(intrin)?\.h>|\b_mm(256|512)?_[a-z0-9_]+\(|\b_cvt(ss_sh|sh_ss)\b|\b__m(128|256|512)[di]?\b|\b__mmask[0-9]+\b|__attribute__\(\((__)?target|#pragma +GCC +target|\b__builtin_ia32_|\b(__)?asm(__)?\b|\bNF_(AVX2|AVX512|SHANI)_(FN|INLINE)\b'
outside=$(cd "$src" && grep -rlE "$x86" lib cmd --include='*.c' --include='*.h' --include='*.inc' |
    grep -vE '^lib/src/[a-z_]+/simd/|^lib/src/common/(cpu\.c|simd_target\.h|sha256_shani\.c)$' || true)
[ -z "$outside" ] && ok || bad "x86 intrinsics or target attributes outside the kernel files: $outside"
# the pattern finds what it is meant to: each kind of x86 code in a file known to hold it
for probe in 'lib/src/method/simd/f16_x86.c:#include <immintrin.h>' 'lib/src/method/simd/f16_x86.c:_mm_loadu_si128(' \
    'lib/src/method/simd/f16_x86.c:__m128i' 'lib/src/stats/simd/stats_avx2.c:_cvtsh_ss' \
    'lib/src/method/simd/absmax_avx512.c:__mmask16' 'lib/src/common/simd_target.h:__attribute__((target' \
    'lib/src/common/cpu.c:#include <cpuid.h>' 'lib/src/stats/simd/stats_avx2.c:NF_AVX2_FN'; do
    f=${probe%%:*} text=${probe#*:}
    if ! grep -qF -- "$text" "$src/$f"; then bad "the probe '$text' is no longer in $f"
    elif printf '%s\n' "$text" | grep -qE "$x86"; then ok
    else bad "the x86 pattern misses '$text' ($f)"; fi
done

# and NEON code (its header, its vector types, the SHA-256 target's attribute) in the kernel
# directories only
neon='#include <arm_neon\.h>|\b(u?int(8|16|32|64)|float(16|32|64)|poly(8|16|64))x[0-9]+(x[2-4])?_t\b|\bNF_ARM_SHA2_FN\b'
outside=$(cd "$src" && grep -rlE "$neon" lib cmd --include='*.c' --include='*.h' --include='*.inc' |
    grep -vE '^lib/src/[a-z_]+/simd/|^lib/src/common/simd_target\.h$' || true)
[ -z "$outside" ] && ok || bad "NEON intrinsics outside the kernel files: $outside"
for probe in 'lib/src/stats/simd/lanes_neon.h:#include <arm_neon.h>' 'lib/src/stats/simd/lanes_neon.h:float64x2_t' \
    'lib/src/method/simd/fp8_neon.c:uint32x4_t' 'lib/src/common/simd/sha256_armv8.c:NF_ARM_SHA2_FN'; do
    f=${probe%%:*} text=${probe#*:}
    if ! grep -qF -- "$text" "$src/$f"; then bad "the probe '$text' is no longer in $f"
    elif printf '%s\n' "$text" | grep -qE "$neon"; then ok
    else bad "the NEON pattern misses '$text' ($f)"; fi
done

# 2. Clang, warnings as errors, on every compilation of the build
if ! command -v clang >/dev/null && [ "$(id -u)" -eq 0 ]; then
    bash "$src/scripts/deps.sh" clang >"$work/apt.log" 2>&1 || bad "scripts/deps.sh clang failed: $(tail -n 3 "$work/apt.log")"
fi
if ! command -v clang >/dev/null; then
    [ "$(id -u)" -eq 0 ] || echo "SKIP clang: Debian's clang is not installed, and installing it needs root (uid $(id -u))"
elif [ ! -f "$build/compile_commands.json" ]; then
    bad "$build/compile_commands.json is missing (CMAKE_EXPORT_COMPILE_COMMANDS, CMakeLists.txt)"
else
    # each compilation once more: Clang instead of the compiler.  A file that holds intrinsics
    # or target attributes (the kernels, cpu.c, the tests that check kernels) is compiled at -O0
    # (after the build's -O, with _FORTIFY_SOURCE undefined: it needs optimization) into
    # /dev/null, since a missing target feature is an error of code generation only; the rest,
    # portable C whose code generation Clang never refuses, is checked with -fsyntax-only
    if python3 - "$build/compile_commands.json" <<'PY'; then
import json, os, re, shlex, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
entries = json.load(open(sys.argv[1]))
def argv(e):
    a = shlex.split(e['command'])
    out, skip = ['clang'], False
    for x in a[1:]:
        if skip:
            skip = False
        elif x == '-o':
            skip = True
        else:
            out.append(x)
    return out + ['-O0', '-U_FORTIFY_SOURCE']
KERNEL = re.compile(r'#\s*include\s*<(immintrin|arm_neon|arm_acle)\.h>|__attribute__\s*\(\(\s*(__)?target|NF_(AVX2|AVX512)_(FN|INLINE)')
def run(e):
    path = os.path.join(e['directory'], e['file'])
    with open(path, encoding='utf-8', errors='replace') as f:
        kernel = KERNEL.search(f.read()) is not None
    p = subprocess.run(argv(e) + (['-o', '/dev/null'] if kernel else ['-fsyntax-only']), cwd=e['directory'],
                       capture_output=True, text=True)
    return e['file'], kernel, p.returncode, p.stderr
bad = kernels = 0
with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
    for f, kernel, rc, err in pool.map(run, entries):
        kernels += kernel
        if rc != 0 or err.strip():
            bad += 1
            print(f"clang: {f}:\n{err}", file=sys.stderr)
print(f"clang: {len(entries)} compilations ({kernels} with intrinsics or target attributes compiled at -O0, "
      f"the others -fsyntax-only), {bad} with diagnostics")
# the kernel files are there to be compiled (a pattern that matched none would check nothing)
sys.exit(1 if bad or not entries or not kernels else 0)
PY
        ok
    else
        bad "Clang rejects some of the build (above)"
    fi
fi

# 3. an assumption broken at configure time is named
if [ "$(uname -m)" = x86_64 ] && command -v gcc >/dev/null; then
    if cmake -S "$src" -B "$work/x87" -DNINFER_TESTS=OFF -DCMAKE_C_COMPILER=gcc -DCMAKE_C_FLAGS=-mfpmath=387 \
        >"$work/x87.log" 2>&1; then
        bad "a configure with -mfpmath=387 (x87 excess precision) passed"
    else
        # (CMake wraps the message's lines)
        tr -s ' \n' '  ' <"$work/x87.log" |
            grep -q "assumes binary32 arithmetic is evaluated in binary32, without excess precision" &&
            ok || bad "the configure with -mfpmath=387 failed without naming the assumption: $(tail -n 5 "$work/x87.log")"
    fi
    # and the same configure without the flag passes (the check is not what fails)
    cmake -S "$src" -B "$work/plain" -DNINFER_TESTS=OFF -DCMAKE_C_COMPILER=gcc >"$work/plain.log" 2>&1 &&
        ok || bad "a plain configure failed: $(tail -n 5 "$work/plain.log")"
else
    echo "SKIP the x87 configure: not x86-64 GCC"
fi
finish test_portable
