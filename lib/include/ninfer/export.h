/* ninfer/export.h - NF_API marks the declarations libninfer exports (docs/library.md, "ABI").
 *
 * The library is compiled with -fvisibility=hidden: only what a public header declares with
 * NF_API is visible in libninfer.so, so its dynamic symbol table is exactly the documented API
 * (tests/cli/test_exports.sh compares the two).  Test hooks and internal helpers stay inside.
 */
#ifndef NINFER_EXPORT_H
#define NINFER_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define NF_API __attribute__((visibility("default")))
#else
#define NF_API
#endif

#endif
