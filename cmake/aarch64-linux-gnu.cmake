# Cross build for aarch64 Linux with Debian's gcc-aarch64-linux-gnu and the arm64 multiarch -dev
# packages of the dependencies (scripts/arm64.sh, make test-arm64; docs/portability.md).  The
# programs and tests run under qemu-user through binfmt_misc, which scripts/arm64.sh sets up.
#   NINFER_CRITERION_PKGCONFIG  a directory with criterion.pc: Criterion unpacked, not installed
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
# libraries and headers under the arm64 roots first (pkg-config names the arm64 multiarch
# directories); the search may also look outside them, because Criterion is unpacked elsewhere
# (scripts/arm64.sh).  Headers are architecture-independent.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
# (try_compile reads this file again, in the same process: the value goes with it)
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES NINFER_CRITERION_PKGCONFIG)
set(ENV{PKG_CONFIG_LIBDIR} ${NINFER_CRITERION_PKGCONFIG}:/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
