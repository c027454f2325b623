/* The PyTorch checkpoint reader (torch.c), which the openers (source.c) call. */
#ifndef NINFER_SOURCE_TORCH_H
#define NINFER_SOURCE_TORCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source/store.h"

/* Parse file `file` of s, a torch.save zip archive, and append its tensors. */
nf_status nf_source_torch_parse(nf_source *s, size_t file, nf_error *err);

/* True when p[0..n) starts as torch.save's stream before PyTorch 1.6 (a pickled magic number). */
bool nf_source_torch_legacy_magic(const uint8_t *p, size_t n);

#endif
