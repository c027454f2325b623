/* The import module's shared helpers (checks.c): the checks of source declarations and chunks,
 * message helpers and little-endian reads, used by the dispatcher (import.c) and the dialects
 * (gguf_import.c, nvfp4_import.c, fp8.c) alike.  Each dialect's row converter is declared in the header of
 * its own file (gguf_import.h, nvfp4_import.h, fp8.h), so that includes run one way: the dispatcher above
 * the dialects above these helpers. */
#ifndef NINFER_IMPORT_CHECKS_H
#define NINFER_IMPORT_CHECKS_H

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ninfer/escape.h>
#include <ninfer/import.h>

#include "common/checked.h"

/* Records "<name>: <message>" and returns status (name NULL: "(unnamed tensor)"). */
nf_status nf_import_fail(nf_error *err, nf_status status, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Little-endian words from unaligned bytes. */
static inline uint16_t nf_import_le16(const uint8_t *p) { return (uint16_t)(p[0] | (unsigned)p[1] << 8); }

static inline uint32_t nf_import_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* What is wrong with (or special about) a binary16 word, for messages: "-0", "+infinity",
 * "-infinity", "NaN"; NULL for a finite word other than -0. */
const char *nf_import_f16_problem(uint16_t h);
/* Same for binary32: "-0", "+infinity", "-infinity", "NaN", "negative", "+0"; NULL for a finite
 * positive word. */
const char *nf_import_f32_problem(uint32_t bits);

/* "Q4_K", "PQ2_0", "F32"... or "unknown" for a ggml type id. */
const char *nf_import_ggml_name(int ggml_type);

/* "[128,64]" into buf. */
const char *nf_import_shape_str(const nf_import_tensor *t, char *buf, size_t size);

/* Argument sanity of a declaration: non-NULL, named, shape present for rank > 0, rank within
 * NF_MAX_RANK.  `role` names the argument in NF_ERR_USAGE messages. */
nf_status nf_import_check_decl(const nf_import_tensor *t, const char *role, nf_error *err);
/* Product of all dimensions, checked (false on overflow). */
bool nf_import_elements(const nf_import_tensor *t, uint64_t *out);

/* Safetensors dialect checks: t is a safetensors tensor named "<prefix>.<component>" (prefix
 * the same as codes'), of dtype `dtype`.  `what` describes the dialect for messages ("a
 * ModelOpt NVFP4"). */
nf_status nf_import_expect_member(const nf_import_tensor *t, const nf_import_tensor *codes, const char *component,
                                  const char *what, nf_error *err);
nf_status nf_import_expect_dtype(const nf_import_tensor *t, const char *dtype, const char *what, nf_error *err);

#endif
