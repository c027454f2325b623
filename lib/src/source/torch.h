/* The PyTorch checkpoint reader (torch.c), which the openers (source.c) call. */
#ifndef NINFER_SOURCE_TORCH_H
#define NINFER_SOURCE_TORCH_H

#include <stddef.h>

#include "source/store.h"

/* Parse file `file` of s, a torch.save zip archive, and append its tensors. */
nf_status nf_source_torch_parse(nf_source *s, size_t file, nf_error *err);

#endif
