/* The artifact writer's JSON directory (writer_state.h): objects in upstream member order,
 * compact, padded to the reserve, with checksum placeholders patched at publish, and the file
 * table of the split policy; every reader cap is checked before anything is written. */
#include "common/utf8.h"
#include "container/writer_directory.h"
#include "container/writer_state.h"

/* ---------------------------------------------------------------- directory */
/* The directory is emitted member by member, an object record at a time (never one JSON tree of
 * every object, nor a checksum map of every ID: those cost about 1 KB of memory per object), in
 * upstream member order (2.7 step 2): components, objects, bindings, uses, metadata, provenance,
 * files.  Python's compact json.dumps of the whole root is exactly the concatenation of the
 * members' own compact texts, so the bytes are the same as one nf_json_emit of the root. */
static json_t *object_json(const wobj *o)
{
    json_t *d = json_object();
    if (!d) return NULL;
    int bad = json_object_set_new(d, "id", json_string(o->id));
    if (o->tensor) {
        json_t *shape = json_array();
        for (uint32_t k = 0; shape && k < o->rank; k++)
            bad |= json_array_append_new(shape, json_integer((json_int_t)o->shape[k]));
        bad |= json_object_set_new(d, "shape", shape);
        bad |= json_object_set_new(d, "format", json_string(o->format->name));
        bad |= json_object_set_new(d, "layout", json_string(o->layout->name));
        bad |= json_object_set_new(d, "offset", json_integer((json_int_t)o->offset));
        bad |= json_object_set_new(d, "bytes", json_integer((json_int_t)o->bytes));
        if (o->divisors != 1) bad |= json_object_set_new(d, "divisors", json_integer((json_int_t)o->divisors));
        bad |= json_object_set_new(d, "kind", json_string("tensor"));
    } else {
        bad |= json_object_set_new(d, "encoding", json_string("raw_bytes_v1"));
        bad |= json_object_set_new(d, "offset", json_integer((json_int_t)o->offset));
        bad |= json_object_set_new(d, "bytes", json_integer((json_int_t)o->bytes));
        bad |= json_object_set_new(d, "kind", json_string("resource"));
    }
    if (bad) {
        json_decref(d);
        return NULL;
    }
    return d;
}

static json_t *files_json(const nf_writer *w, const uint64_t *segs, size_t n)
{
    json_t *files = json_array();
    for (size_t i = 0; files && i < n; i++) {
        json_t *f = json_object();
        char *name = i ? nf_outputs_part_name(w->entry_name, i) : NULL;
        int bad = !f || (i && !name);
        if (!bad) {
            bad |= json_object_set_new(f, "path", i ? json_string(name) : json_null());
            bad |= json_object_set_new(f, "payload_bytes", json_integer((json_int_t)segs[i]));
        }
        free(name);
        if (bad || json_array_append_new(files, f)) {
            if (bad) json_decref(f); /* (json_array_append_new takes f even when it fails) */
            json_decref(files);
            return NULL;
        }
    }
    return files;
}

/* The reader refuses more than NF_MAX_JSON_BYTES of directory (reader.c): so does the writer,
 * before anything is created (docs/security.md 1.3: every cap a reader enforces is checked by the writer
 * before publishing; docs/security.md 7.1, F11). */
static nf_status too_big(uint64_t bytes, bool more, nf_error *err)
{
    return nf_error_set(err, NF_ERR_INVALID,
                        "%s%llu bytes of JSON, beyond the reader's cap of %llu bytes "
                        "(NF_MAX_JSON_BYTES, 64 MiB): write fewer objects, or less metadata, provenance or "
                        "component config",
                        more ? "more than " : "", (unsigned long long)bytes, (unsigned long long)NF_MAX_JSON_BYTES);
}

static nf_status put_text(nf_buf *t, const char *s, nf_error *err)
{
    return nf_buf_append(t, s, strlen(s)) ? NF_OK : nf_wr_nomem(err);
}

/* A member name or object ID as a JSON string, Python's way (the emitter's escapes). */
static nf_status put_key(nf_buf *t, const char *key, nf_error *err)
{
    json_t *k = json_string(key);
    if (!k) {
        size_t bad = 0;
        nf_utf8_valid((const uint8_t *)key, strlen(key), &bad);
        return nf_error_set(err, NF_ERR_INVALID, "JSON member name is not valid UTF-8 (byte %zu)", bad);
    }
    nf_status st = nf_json_emit(k, t, NULL, NULL, err);
    json_decref(k);
    return st;
}

/* A 32-digit checksum placeholder; *pos gets the offset of its first digit. */
static nf_status put_placeholder(nf_buf *t, size_t *pos, nf_error *err)
{
    NF_TRY(put_text(t, "\"", err));
    *pos = t->len;
    return put_text(t, CHECKSUM_ZEROS "\"", err);
}

/* metadata.checksums: {"algorithm":"xxh3-128","objects":{"<id>":"<zeros>",...},"directory":"<zeros>"}. */
static nf_status put_checksums(nf_writer *w, nf_buf *t, nf_error *err)
{
    NF_TRY(put_text(t, "{\"algorithm\":\"xxh3-128\",\"objects\":{", err));
    for (size_t i = 0; i < w->nobjs; i++) {
        if (i) NF_TRY(put_text(t, ",", err));
        NF_TRY(put_key(t, w->objs[i].id, err));
        NF_TRY(put_text(t, ":", err));
        NF_TRY(put_placeholder(t, &w->sum_pos[i], err));
        if (t->len > NF_MAX_JSON_BYTES) return too_big(t->len, true, err);
    }
    NF_TRY(put_text(t, "},\"directory\":", err));
    NF_TRY(put_placeholder(t, &w->dir_sum_pos, err));
    return put_text(t, "}", err);
}

/* The caller's metadata with "checksums" added (last) or, when the caller has one, replacing it
 * where it stands (as jansson's json_object_set would). */
static nf_status put_metadata(nf_writer *w, nf_buf *t, nf_error *err)
{
    NF_TRY(put_text(t, "{", err));
    const char *key;
    json_t *val;
    bool first = true, seen = false;
    json_object_foreach(w->members[M_METADATA], key, val)
    {
        if (!first) NF_TRY(put_text(t, ",", err));
        first = false;
        NF_TRY(put_key(t, key, err));
        NF_TRY(put_text(t, ":", err));
        if (w->opt.checksums && strcmp(key, "checksums") == 0) {
            seen = true;
            NF_TRY(put_checksums(w, t, err));
        } else {
            NF_TRY(nf_json_emit(val, t, NULL, NULL, err));
        }
    }
    if (w->opt.checksums && !seen) {
        NF_TRY(put_text(t, first ? "\"checksums\":" : ",\"checksums\":", err));
        NF_TRY(put_checksums(w, t, err));
    }
    return put_text(t, "}", err);
}

/* A member's text: its tree, or its head's members and then its records, one at a time
 * (nf_writer_set_member_records): the same text as of the whole tree. */
static nf_status put_member(nf_writer *w, int m, nf_buf *t, nf_error *err)
{
    if (!w->records[m].next) return nf_json_emit(w->members[m], t, NULL, NULL, err);
    NF_TRY(put_text(t, "{", err));
    const char *key;
    json_t *val;
    bool first = true;
    json_object_foreach(w->members[m], key, val)
    {
        if (!first) NF_TRY(put_text(t, ",", err));
        first = false;
        NF_TRY(put_key(t, key, err));
        NF_TRY(put_text(t, ":", err));
        NF_TRY(nf_json_emit(val, t, NULL, NULL, err));
    }
    if (w->records[m].key) {
        if (!first) NF_TRY(put_text(t, ",", err));
        NF_TRY(put_key(t, w->records[m].key, err));
        NF_TRY(put_text(t, ":{", err));
        first = true;
    }
    for (size_t i = 0;; i++) {
        const char *k = NULL;
        json_t *v = NULL;
        nf_status cs = w->records[m].next(w->records[m].ctx, i, &k, &v, err);
        if (cs != NF_OK) {
            json_decref(v); /* (a value yielded with a failure is the writer's to release too) */
            return cs;
        }
        if (!v) break;
        nf_status st = first ? NF_OK : put_text(t, ",", err);
        first = false;
        if (st == NF_OK) st = k ? put_key(t, k, err) : nf_error_set(err, NF_ERR_USAGE, "a record without a name");
        if (st == NF_OK) st = put_text(t, ":", err);
        if (st == NF_OK) st = nf_json_emit(v, t, NULL, NULL, err);
        json_decref(v);
        NF_TRY(st);
        /* stop growing as soon as the text is beyond what a reader takes */
        if (t->len > NF_MAX_JSON_BYTES) return too_big(t->len, true, err);
    }
    return put_text(t, w->records[m].key ? "}}" : "}", err);
}

/* Everything before the file table: "{" and the members before "files", with their commas. */
static nf_status emit_prefix(nf_writer *w, nf_buf *t, nf_error *err)
{
    for (int m = 0; m < M_COUNT; m++) {
        if (w->members[m]) continue;
        if (m == M_COMPONENTS) w->members[m] = json_pack("{s:{s:{}}}", "text", "config");
        else w->members[m] = m == M_USES ? json_array() : json_object();
        if (!w->members[m]) return nf_wr_nomem(err);
    }
    NF_TRY(put_text(t, "{\"components\":", err));
    NF_TRY(put_member(w, M_COMPONENTS, t, err));
    NF_TRY(put_text(t, ",\"objects\":[", err));
    for (size_t i = 0; i < w->nobjs; i++) {
        if (i) NF_TRY(put_text(t, ",", err));
        json_t *o = object_json(&w->objs[i]);
        if (!o) return nf_wr_nomem(err);
        nf_status st = nf_json_emit(o, t, NULL, NULL, err);
        json_decref(o);
        NF_TRY(st);
        /* stop growing as soon as the text is beyond what a reader takes */
        if (t->len > NF_MAX_JSON_BYTES) return too_big(t->len, true, err);
    }
    NF_TRY(put_text(t, "],\"bindings\":", err));
    NF_TRY(put_member(w, M_BINDINGS, t, err));
    NF_TRY(put_text(t, ",\"uses\":", err));
    NF_TRY(nf_json_emit(w->members[M_USES], t, NULL, NULL, err));
    NF_TRY(put_text(t, ",\"metadata\":", err));
    NF_TRY(put_metadata(w, t, err));
    NF_TRY(put_text(t, ",\"provenance\":", err));
    NF_TRY(put_member(w, M_PROVENANCE, t, err));
    if (t->len > NF_MAX_JSON_BYTES) return too_big(t->len, true, err);
    return NF_OK;
}

/* The text: the prefix (t->len = prefix bytes) followed by the given file table and "}". */
static nf_status emit_with_files(nf_writer *w, nf_buf *t, size_t prefix, const uint64_t *segs, size_t n, nf_error *err)
{
    t->len = prefix;
    json_t *files = files_json(w, segs, n);
    if (!files) return nf_wr_nomem(err);
    nf_status st = put_text(t, ",\"files\":", err);
    if (st == NF_OK) st = nf_json_emit(files, t, NULL, NULL, err);
    json_decref(files);
    if (st == NF_OK) st = put_text(t, "}", err);
    return st;
}

/* 2.7 step 4: reserve = align_up(32 + len(single-file JSON), 4096) - 32, then grow until the
 * JSON with its real file table fits.  Leaves the final text in *text and the file table in
 * segs and n.  A directory beyond the reader's cap is refused here. */
nf_status nf_wr_layout_directory(nf_writer *w, nf_buf *text, uint64_t **segs, size_t *n, nf_error *err)
{
    nf_status st = emit_prefix(w, text, err);
    if (st != NF_OK) return nf_error_forward(err, st, "%s: directory", MP(w->path));
    size_t prefix = text->len;
    uint64_t single = w->payload_end;
    NF_TRY(emit_with_files(w, text, prefix, &single, 1, err));
    uint64_t reserve;
    if (!nf_align_up_u64(NF_HEADER_BYTES + (uint64_t)text->len, NF_PAGE_BYTES, &reserve))
        return nf_error_set(err, NF_ERR_INVALID, "%s: directory too large", MP(w->path));
    reserve -= NF_HEADER_BYTES;
    for (int round = 0; round < 64; round++) {
        if (reserve > NF_MAX_JSON_BYTES) {
            return nf_error_forward(err, too_big(reserve, false, err), "%s: directory", MP(w->path));
        }
        free(*segs);
        *segs = NULL;
        st = nf_split_plan(w->payload_end, NF_HEADER_BYTES + reserve, w->opt.max_file_bytes, segs, n, err);
        if (st != NF_OK) return nf_error_forward(err, st, "%s", MP(w->path));
        NF_TRY(emit_with_files(w, text, prefix, *segs, *n, err));
        if ((uint64_t)text->len <= reserve) {
            w->json_bytes = reserve;
            w->entry_payload_start = NF_HEADER_BYTES + reserve;
            return NF_OK;
        }
        if (!nf_align_up_u64(NF_HEADER_BYTES + (uint64_t)text->len, NF_PAGE_BYTES, &reserve))
            return nf_error_set(err, NF_ERR_INVALID, "%s: directory too large", MP(w->path));
        reserve -= NF_HEADER_BYTES;
    }
    return nf_error_set(err, NF_ERR_INVALID, "%s: the directory reserve does not converge", MP(w->path));
}
