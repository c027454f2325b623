/* Fuzz target: a scale-out plan file (docs/scale-out.md, "What a plan can make a task do") through
 * nf_scaleout_open, read from a file of this process's private directory (fuzz_tmpdir.h); when
 * it opens, every accessor is asked (every task's object ids too), and the tasks must cover the
 * files once, in order. */
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "fuzz_target.h"
#include "fuzz_tmpdir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_write_file("plan.json", data, size);
    char path[FZ_PATH_BYTES];
    fz_path("plan.json", path);
    nf_scaleout *s = NULL;
    nf_error err;
    nf_error_clear(&err);
    nf_status st = nf_scaleout_open(path, &s, &err);
    fz_remove_file("plan.json");
    fz_note("nf_scaleout_open", st == NF_OK, err.message);
    if (st != NF_OK) {
        if (st != NF_ERR_INVALID && st != NF_ERR_NOMEM) abort();
        if (s) abort();
        fz_consume_str(err.message);
        return 0;
    }
    if (nf_scaleout_task_count(s) == 0 || nf_scaleout_conversion(s)) abort(); /* (rebuilt only on request) */
    fz_consume_str(nf_scaleout_output(s));
    const char *dir = nf_scaleout_directory(s);
    if (dir) fz_consume_str(dir);
    uint8_t id[16];
    nf_scaleout_artifact_id(s, id);
    fz_consume(id, sizeof id);
    /* every task's object ids (the files' lists, kept apart from the plan's tree) */
    for (size_t t = 0; t < nf_scaleout_task_count(s); t++) {
        const char **ids = NULL;
        size_t n = 0;
        if (nf_scaleout_task_objects(s, t, &ids, &n, &err) != NF_OK) abort(); /* (opened: every list checked) */
        for (size_t k = 0; k < n; k++) fz_consume_str(ids[k]);
        free(ids);
    }
    const char **ids = NULL;
    size_t n = 0;
    if (nf_scaleout_task_objects(s, nf_scaleout_task_count(s), &ids, &n, &err) != NF_ERR_INVALID) abort();
    nf_scaleout_free(s);
    return 0;
}
