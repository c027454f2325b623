/* writer_publish.c, for writer.c: the output's lock; a failure of begin rolls everything
 * back. */
#ifndef NINFER_CONTAINER_WRITER_PUBLISH_H
#define NINFER_CONTAINER_WRITER_PUBLISH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "container/writer_state.h"

nf_status nf_wr_fail_and_abort(nf_writer *w, nf_status st);
nf_status nf_wr_take_lock(nf_writer *w, nf_error *err);

#endif
