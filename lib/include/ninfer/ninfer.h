/* ninfer/ninfer.h - umbrella header of libninfer. */
#ifndef NINFER_NINFER_H
#define NINFER_NINFER_H

#include <ninfer/export.h>

#include <ninfer/error.h>
#include <ninfer/escape.h>
#include <ninfer/outputs.h>
#include <ninfer/names.h>
#include <ninfer/preset.h>
#include <ninfer/format.h>
#include <ninfer/layout.h>
#include <ninfer/stats.h>
#include <ninfer/simd.h>
#include <ninfer/method.h>
#include <ninfer/mprog.h>
#include <ninfer/container.h>
#include <ninfer/verify.h>
#include <ninfer/source.h>
#include <ninfer/import.h>
#include <ninfer/imatrix.h>
#include <ninfer/recipe.h>
#include <ninfer/dialect.h>
#include <ninfer/convert.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "0.1.0": the library's version (same as the programs'). */
NF_API const char *nf_version(void);

#ifdef __cplusplus
}
#endif
#endif
