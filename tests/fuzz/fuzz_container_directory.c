/* Fuzz target: the .ninfer JSON directory (docs/artifact.md 5 and 7 item 2) through
 * nf_directory_parse, the very code nf_artifact_open runs on an entry's JSON text.
 *
 * Input: the JSON text (what an entry holds at bytes [32, 32 + json_bytes)), passed as is (not
 * NUL-terminated) so that any read past it is a sanitizer report.  The entry name is fixed,
 * "fuzz.ninfer", so the rule "a part must not name the entry itself" is reachable.
 *
 * Differential: nf_dir_check, the writer's record-at-a-time check (container_internal.h), must
 * give the same verdict and message, with every container walked (pieces of 1 byte) and with
 * the default pieces; a difference aborts. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "container/container_internal.h"
#include "fuzz_target.h"

static void same_as_check(const uint8_t *data, size_t size, nf_status want, const char *message)
{
    static const size_t pieces[] = {1, 0};
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
        nf_error err;
        nf_error_clear(&err);
        nf_status st = nf_dir_check(data, size, "fuzz.ninfer", pieces[i], &err);
        if (st != want || (st != NF_OK && strcmp(err.message, message) != 0)) {
            fprintf(stderr, "nf_dir_check (piece %zu): %d '%s'; nf_directory_parse: %d '%s'\n", pieces[i], st,
                    err.message, want, message);
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *root = NULL;
    nf_error err;
    nf_error_clear(&err);
    nf_status st = nf_directory_parse(data, size, "fuzz.ninfer", &root, &err);
    fz_note("nf_directory_parse", st == NF_OK, err.message);
    same_as_check(data, size, st, err.message);
    if (st == NF_OK) {
        /* Walk what was accepted: every member must be a live node. */
        const char *key;
        json_t *value;
        size_t members = 0;
        if (json_is_object(root)) {
            json_object_foreach(root, key, value)
            {
                fz_consume_str(key);
                members += json_typeof(value) == JSON_OBJECT ? json_object_size(value) : json_array_size(value);
            }
        }
        fz_consume(&members, sizeof members);
        json_decref(root);
    } else {
        fz_consume_str(err.message);
    }
    return 0;
}
