/* The safetensors parser (safetensors.c), which the openers (source.c) call. */
#ifndef NINFER_SOURCE_SAFETENSORS_H
#define NINFER_SOURCE_SAFETENSORS_H

#include <stddef.h>

#include "source/store.h"

/* Parse file `file` of s as safetensors and append its tensors (in offset order). */
nf_status nf_source_st_parse(nf_source *s, size_t file, nf_error *err);
/* A tensor's dtype and what follows from it (its name, storage block, convertibility); the
 * PyTorch reader's tensors take their dtype the same way. */
void nf_source_st_set_dtype(nf_source_tensor *t, nf_st_dtype d);

#endif
