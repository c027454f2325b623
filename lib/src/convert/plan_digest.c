/* The plan's content digest (nf_plan_content_digest, docs/security.md 7.1, F13): what the
 * artifact id is derived from under SOURCE_DATE_EPOCH -- the plan's description, its directory
 * members and every byte the plan reads.  Apart from planner.c, which builds the plan: the digest
 * only reads a finished one. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ninfer/ninfer.h>
#include <xxhash.h>

#include "common/fail.h"
#include "common/io.h"
#include "common/json_walk.h"
#include "convert/convert_impl.h"

/* Under SOURCE_DATE_EPOCH the artifact id used to be derived from the plan's description --
 * names, shapes, formats -- and the epoch alone: two checkpoints with the same names and shapes
 * got the same id, so an entry of one passed `verify --quick` with the parts of the other and
 * `dequant --all` read mixed data (docs/security.md 7.1, F13).  The id must bind the content.  The encoded
 * objects would do, but their digests are known only after the id is written into every part
 * header; the bytes the plan reads are known before, and hashing them costs one sequential read
 * of the checkpoint (XXH3 runs far faster than the read; docs/ninfer-convert.md has the figures). */
#define DIGEST_CHUNK ((size_t)4 << 20)

static void digest_str(XXH3_state_t *h, const char *s) { XXH3_128bits_update(h, s, strlen(s) + 1); }

static void digest_u64(XXH3_state_t *h, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
    XXH3_128bits_update(h, b, sizeof b);
}

#define DIGEST_DUMPS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY)

static bool digest_json(XXH3_state_t *h, const char *what, const json_t *j)
{
    char *text = nf_jw_dump(j ? j : json_null(), DIGEST_DUMPS, 0, NULL);
    if (!text) return false;
    digest_str(h, what);
    digest_str(h, text);
    free(text);
    return true;
}

/* The compact text of one value, without its NUL. */
static bool digest_text(XXH3_state_t *h, const json_t *j)
{
    char *text = nf_jw_dump(j, DIGEST_DUMPS, 0, NULL);
    if (!text) return false;
    XXH3_128bits_update(h, text, strlen(text));
    free(text);
    return true;
}

static bool digest_member(XXH3_state_t *h, bool *first, const char *key, const json_t *value)
{
    json_t *k = json_string(key);
    bool ok = k && (*first || (XXH3_128bits_update(h, ",", 1), true)) && digest_text(h, k) &&
              (XXH3_128bits_update(h, ":", 1), true) && digest_text(h, value);
    json_decref(k);
    *first = false;
    return ok;
}

/* digest_json of the member head and its records (nf_plan_*_record) as one object -- under
 * records_key, or directly when it is NULL: the compact text of a whole tree is the
 * concatenation of its members' texts, so the digest is that of the tree, never built. */
static nf_status digest_records(XXH3_state_t *h, const char *what, const json_t *head, const char *records_key,
                                nf_status (*next)(void *, size_t, const char **, json_t **, nf_error *),
                                const nf_plan *p, nf_error *err)
{
    nf_plan_records cursor = {p, 0, 0};
    digest_str(h, what);
    XXH3_128bits_update(h, "{", 1);
    bool first = true, ok = true;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)head, key, val) ok = ok && digest_member(h, &first, key, val);
    if (ok && records_key) {
        json_t *k = json_string(records_key);
        ok = k && (first || (XXH3_128bits_update(h, ",", 1), true)) && digest_text(h, k);
        json_decref(k);
        XXH3_128bits_update(h, ":{", 2);
        first = true;
    }
    for (size_t i = 0; ok; i++) {
        const char *k = NULL;
        json_t *v = NULL;
        NF_TRY(next(&cursor, i, &k, &v, err));
        if (!v) break;
        ok = digest_member(h, &first, k, v);
        json_decref(v);
    }
    if (!ok) return nf_common_nomem(err);
    XXH3_128bits_update(h, records_key ? "}}" : "}", records_key ? 3 : 2); /* with the text's NUL */
    return NF_OK;
}

static nf_status digest_tensor(XXH3_state_t *h, const nf_source *src, const nf_source_tensor *t, uint8_t *buf,
                               nf_error *err)
{
    digest_str(h, t->name);
    digest_u64(h, t->bytes);
    for (uint64_t off = 0; off < t->bytes;) {
        size_t len = t->bytes - off < DIGEST_CHUNK ? (size_t)(t->bytes - off) : DIGEST_CHUNK;
        NF_TRY(nf_source_read_bytes(src, t, off, buf, len, err));
        XXH3_128bits_update(h, buf, len);
        off += len;
    }
    return NF_OK;
}

static nf_status digest_file(XXH3_state_t *h, const char *path, uint8_t *buf, nf_error *err)
{
    int fd = nf_io_open(path, O_RDONLY | O_NONBLOCK, 0);
    if (fd < 0) return nf_error_errno(err, errno, "%s: cannot open", path);
    struct stat sb;
    int e = nf_io_fstat(fd, &sb);
    nf_status st = NF_OK;
    if (e) st = nf_error_errno(err, e, "%s: cannot stat", path);
    else if (!S_ISREG(sb.st_mode)) st = nf_error_set(err, NF_ERR_INVALID, "%s: not a regular file", path);
    digest_str(h, path);
    uint64_t size = st == NF_OK ? (uint64_t)sb.st_size : 0;
    digest_u64(h, size);
    for (uint64_t off = 0; st == NF_OK && off < size;) {
        size_t len = size - off < DIGEST_CHUNK ? (size_t)(size - off) : DIGEST_CHUNK;
        if ((e = nf_io_pread_full(fd, buf, len, off)) != 0) st = nf_error_errno(err, e, "%s: cannot read", path);
        else XXH3_128bits_update(h, buf, len);
        off += len;
    }
    nf_io_close(fd);
    return st;
}

nf_status nf_plan_content_digest(const nf_plan *p, uint8_t out[16], nf_error *err)
{
    if (!p || !out) return nf_error_set(err, NF_ERR_USAGE, "nf_plan_content_digest: missing argument");
    XXH3_state_t *h = XXH3_createState();
    uint8_t *buf = malloc(DIGEST_CHUNK);
    nf_status st = NF_OK;
    if (!h || !buf || XXH3_128bits_reset(h) != XXH_OK) {
        st = nf_common_nomem(err);
        goto done;
    }
    digest_str(h, "ninfer plan content digest v1");
    json_t *d = nf_plan_describe(p);
    bool ok = d && digest_json(h, "plan", d) && digest_json(h, "components", p->components);
    json_decref(d);
    if (!ok) {
        st = nf_common_nomem(err);
        goto done;
    }
    /* (in the order of the members before the records were streamed: the digest, and so the
     * ids derived from it, did not change) */
    st = digest_records(h, "bindings", NULL, NULL, nf_plan_binding_record, p, err);
    if (st == NF_OK && !digest_json(h, "metadata", p->metadata)) st = nf_common_nomem(err);
    if (st == NF_OK) st = digest_records(h, "provenance", p->provenance, "objects", nf_plan_provenance_record, p, err);
    if (st != NF_OK) goto done;
    for (size_t i = 0; st == NF_OK && i < p->nobjects; i++) {
        const plan_object *o = &p->objects[i];
        digest_str(h, o->id);
        if (o->kind == NF_OBJECT_RESOURCE) {
            if (o->data) { /* (made from the source, whose bytes the digest reads: its text too) */
                digest_u64(h, o->bytes);
                XXH3_128bits_update(h, o->data, (size_t)o->bytes);
            } else {
                st = digest_file(h, o->path, buf, err);
            }
            continue;
        }
        for (size_t k = 0; st == NF_OK && k < o->nmembers; k++) {
            const plan_member *m = &o->members[k];
            st = digest_tensor(h, m->source->src, m->t, buf, err);
            if (st == NF_OK && m->scale_t) st = digest_tensor(h, m->source->src, m->scale_t, buf, err);
        }
    }
    const plan_source *base = nf_plan_base_source(p);
    for (size_t i = 0; st == NF_OK && i < p->ncompanions; i++)
        st = digest_tensor(h, base->src, p->companions[i], buf, err);
    for (size_t i = 0; st == NF_OK && i < p->nsources; i++)
        if ((p->imatrices && p->imatrices[i]) || (p->budget && p->recipe->budget.sensitivity &&
                                                  !strcmp(p->recipe->budget.sensitivity, p->sources[i].name))) {
            digest_str(h, p->sources[i].name); /* an imatrix, or the budget's sensitivity file */
            st = digest_file(h, p->sources[i].path, buf, err);
        }
    if (st == NF_OK) {
        XXH128_canonical_t c;
        XXH128_canonicalFromHash(&c, XXH3_128bits_digest(h));
        memcpy(out, c.digest, 16);
    }
done:
    XXH3_freeState(h);
    free(buf);
    return st;
}
