/* ninfer-convert --attest (docs/provenance.md, "The statement"): an in-toto Statement v1 whose
 * subject is the artifact's files with their SHA-256 and whose predicate is the conversion's
 * provenance (sources with their files' SHA-256, the recipe and its SHA-256, the converter).
 * It is made once the artifact is published and before the run commits, so that the artifact,
 * its report and the statement are published as one set (execute.c): the files are hashed as
 * they are in place, the bytes a signer's users will fetch. */
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "common/io.h"
#include "common/json_walk.h"
#include "common/sha256_file.h"
#include "convert/convert_impl.h"
#include "outputs/out_whole.h"

#define MP(path) nf_io_msg_path((path), (char[NF_IO_MSG_PATH + 1]){0})

#define NF_ATTEST_PREDICATE "urn:ninfer-tools:conversion:v1"

static bool fill_statement(void *ctx, nf_io_out *o)
{
    char *text = nf_jw_dump(ctx, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17), 0, NULL);
    if (!text) return false;
    nf_io_out_put(o, text, strlen(text));
    nf_io_out_put(o, "\n", 1);
    free(text);
    return true;
}

nf_status nf_convert_attest_temp(const nf_plan *p, const nf_writer *w, const json_t *provenance, const char *path,
                                 volatile int *cancel, char **tmp, nf_error *err)
{
    *tmp = NULL;
    json_t *subject = json_array();
    nf_status st = subject ? NF_OK : nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    for (size_t i = 0; st == NF_OK && i < nf_writer_file_count(w); i++) {
        nf_writer_file f;
        nf_writer_file_info(w, i, &f);
        char hex[NF_SHA256_HEX + 1];
        uint64_t n = 0;
        st = nf_sha256_file(f.path, MP(f.path), f.size, NULL, cancel, &n, hex, err);
        if (st != NF_OK) break;
        const char *base = strrchr(f.path, '/');
        if (json_array_append_new(
                subject, json_pack("{s:s,s:{s:s}}", "name", base ? base + 1 : f.path, "digest", "sha256", hex)) != 0)
            st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    }
    char id[33];
    nf_writer_id_hex(w, id);
    json_t *predicate = st == NF_OK ? json_deep_copy(provenance) : NULL;
    if (predicate) {
        json_object_set_new(predicate, "artifact_id", json_string(id));
        json_object_set(predicate, "metadata", p->metadata);
    }
    json_t *statement = predicate
                            ? json_pack("{s:s,s:O,s:s,s:o}", "_type", "https://in-toto.io/Statement/v1", "subject",
                                        subject, "predicateType", NF_ATTEST_PREDICATE, "predicate", predicate)
                            : NULL;
    if (st == NF_OK && !statement) st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    if (st == NF_OK) st = nf_outputs_write_temp(path, (size_t)1 << 16, fill_statement, statement, tmp, err);
    json_decref(statement);
    json_decref(subject);
    return st;
}
