/* Fuzz target: a checkpoint's config.json as the converter takes it (docs/security.md 7.1, F14): the text parser
 * nf_source_parse_config (size cap, pre-scan, strict jansson parse, an object) and the file
 * reader nf_source_read_config the planner uses, on the same bytes written as config.json in a
 * private directory (fuzz_tmpdir.h).
 *
 * Invariants (abort() on failure): both entry points give the same verdict and, when they accept,
 * equal JSON; an accepted config is an object, survives a compact dump and re-parse unchanged,
 * and fits the .ninfer directory it is published in -- the dump is within NF_MAX_JSON_BYTES and
 * passes the directory's own pre-scan caps with room for the two levels that wrap it
 * (components.NAME.config), since every cap a reader enforces must hold for what the writer
 * publishes (docs/security.md 1.3). */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ninfer/ninfer.h>

#include "common/json_prescan.h"
#include "container/container_internal.h"
#include "fuzz_target.h"
#include "fuzz_tmpdir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *a = NULL, *b = NULL;
    nf_error ea, eb;
    nf_error_clear(&ea);
    nf_error_clear(&eb);
    nf_status sa = nf_source_parse_config(data, size, "fuzz/config.json", &a, &ea);
    fz_note("nf_source_parse_config", sa == NF_OK, ea.message);
    if (sa != NF_OK && sa != NF_ERR_INVALID) abort();
    if ((sa == NF_OK) != (a != NULL)) abort();

    fz_write_file("config.json", data, size);
    char path[FZ_PATH_BYTES];
    fz_path("config.json", path);
    nf_status sb = nf_source_read_config(path, &b, &eb);
    fz_remove_file("config.json");
    fz_note("nf_source_read_config", sb == NF_OK, eb.message);
    if (sb != sa) abort();
    if (sa != NF_OK) {
        fz_consume_str(ea.message);
        fz_consume_str(eb.message);
        return 0;
    }
    if (!json_is_object(a) || !json_equal(a, b)) abort();

    char *text = json_dumps(a, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!text) abort();
    size_t n = strlen(text);
    static const nf_json_caps dir_caps = {NF_MAX_JSON_DEPTH - 2, NF_MAX_JSON_CONTAINERS, NF_MAX_JSON_VALUES};
    size_t at = 0;
    if ((uint64_t)n > NF_MAX_JSON_BYTES || nf_json_prescan((const uint8_t *)text, n, &dir_caps, &at) != NF_JSON_WITHIN)
        abort();
    json_error_t je;
    json_t *again = json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
    if (!again || !json_equal(a, again)) abort();
    json_decref(again);
    free(text);
    json_decref(a);
    json_decref(b);
    return 0;
}
