/* The GGUF parser (gguf_parse.c), which the opener (source.c) calls. */
#ifndef NINFER_SOURCE_GGUF_PARSE_H
#define NINFER_SOURCE_GGUF_PARSE_H

#include <stddef.h>

#include "source/store.h"

/* Parse file 0 of s as GGUF: KVs, tensor infos, data section. */
nf_status nf_source_gguf_parse(nf_source *s, nf_error *err);

#endif
