/* The NVFP4 importer (nvfp4_import.c): its row converter, which the dispatcher (import.c) calls.
 * Rows [first_row, first_row + rows) of the chunk (already checked against the import, the
 * output and the buffer sizes) into out rows [out_row, ...). */
#ifndef NINFER_IMPORT_NVFP4_IMPORT_H
#define NINFER_IMPORT_NVFP4_IMPORT_H

#include <stdint.h>

#include <ninfer/import.h>

nf_status nf_import_nvfp4_rows(const nf_import *imp, const nf_import_chunk *c, nf_words *out, uint64_t out_row,
                               nf_error *err);

/* MXFP4's rows into nvfp4 (nf_import_init_mxfp4), the same way. */
nf_status nf_import_mxfp4_rows(const nf_import *imp, const nf_import_chunk *c, nf_words *out, uint64_t out_row,
                               nf_error *err);

/* GGUF MXFP4 and NVFP4 blocks' rows into nvfp4 (nf_import_init_gguf_fp4), the same way. */
nf_status nf_import_gguf_fp4_rows(const nf_import *imp, const nf_import_chunk *c, nf_words *out, uint64_t out_row,
                                  nf_error *err);

#endif
