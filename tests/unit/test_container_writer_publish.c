/* Publication in two steps (nf_writer_publish, then nf_writer_commit or a rollback) when
 * overwriting: after publish the new set is in place and the replaced files are kept; abort or
 * free before the commit puts the old set back byte for byte (also the old artifact's parts
 * beyond the new one's last); commit drops the kept files and the surplus parts.  Fault
 * injection at every open, read, sync, link and unlink of publish + commit over an artifact
 * with more parts: the old set back exactly, or (a failed removal in the commit) the new one
 * with a ".old" file left. */
#include "test_container_util.h"

#define OK(expr)                                                         \
    do {                                                                 \
        nf_status s_ = (expr);                                           \
        cr_assert_eq(s_, NF_OK, "%s -> %d: %s", #expr, s_, err.message); \
    } while (0)

#define DATA_BYTES 30000u

static uint8_t *pattern(uint8_t seed)
{
    uint8_t *p = malloc(DATA_BYTES);
    cr_assert_not_null(p);
    for (size_t i = 0; i < DATA_BYTES; i++) p[i] = (uint8_t)(i * 31u + seed);
    return p;
}

/* A writer over path holding one resource, begun and fully written: max_file_bytes sets the
 * number of files (8192: 8, 16384: 3, 0: 1). */
static nf_status start(const char *path, uint64_t max_file_bytes, uint8_t seed, nf_writer **out, nf_error *err)
{
    nf_writer_options opt = {max_file_bytes, NULL, true, true};
    nf_writer *w = NULL;
    *out = NULL;
    nf_status st = nf_writer_create(path, &opt, &w, err);
    size_t idx = 0;
    uint8_t *data = pattern(seed);
    if (st == NF_OK) st = nf_writer_add_resource(w, "data", DATA_BYTES, &idx, err);
    if (st == NF_OK) st = nf_writer_begin(w, err);
    if (st == NF_OK) st = nf_writer_write(w, idx, 0, data, DATA_BYTES, err);
    free(data);
    if (st != NF_OK) {
        nf_writer_free(w);
        return st;
    }
    *out = w;
    return NF_OK;
}

typedef struct snapshot {
    char names[4096];
    size_t n;
    char *path[16];
    uint8_t *data[16];
    size_t len[16];
} snapshot;

static void take(const char *dir, snapshot *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->names, sizeof s->names, "%s", tc_listing(dir, &s->n));
    cr_assert_leq(s->n, 16);
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", s->names);
    size_t k = 0;
    for (char *save = NULL, *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save), k++) {
        tc_path p = tc_join(dir, t);
        s->path[k] = strdup(p.s);
        s->data[k] = tc_read(p.s, &s->len[k]);
    }
}

static bool same(const char *dir, const snapshot *s)
{
    size_t n;
    if (strcmp(tc_listing(dir, &n), s->names) != 0) return false;
    for (size_t k = 0; k < s->n; k++) {
        size_t len;
        uint8_t *d = tc_read(s->path[k], &len);
        bool eq = len == s->len[k] && memcmp(d, s->data[k], len) == 0;
        free(d);
        if (!eq) return false;
    }
    return true;
}

static void drop(snapshot *s)
{
    for (size_t k = 0; k < s->n; k++) {
        free(s->path[k]);
        free(s->data[k]);
    }
}

static size_t parts_of(const char *path)
{
    nf_error err;
    nf_artifact *a;
    OK(nf_artifact_open(path, NF_READ_PREAD, &a, &err));
    size_t n = nf_artifact_file_count(a);
    for (size_t i = 1; i < n; i++) OK(nf_artifact_open_part(a, i, &err));
    uint8_t *buf = malloc(DATA_BYTES);
    OK(nf_artifact_read(a, 0, buf, DATA_BYTES, &err));
    uint8_t *want = pattern(2);
    cr_assert_eq(memcmp(buf, want, DATA_BYTES), 0, "the new artifact's bytes");
    free(want);
    free(buf);
    nf_artifact_close(a);
    return n;
}

/* The old artifact (8 files) in a fresh directory. */
static char *old_set(tc_path *out)
{
    char *dir = tc_tmpdir();
    *out = tc_join(dir, "p.ninfer");
    nf_error err;
    nf_writer *w;
    OK(start(out->s, 8192, 1, &w, &err));
    OK(nf_writer_finish(w, &err));
    nf_writer_free(w);
    size_t n;
    tc_listing(dir, &n);
    cr_assert_eq(n, 8, "%s", tc_listing(dir, &n));
    return dir;
}

Test(writer_publish, abort_after_publish_puts_the_old_set_back)
{
    static const uint64_t limits[] = {8192, 16384, 0, 12288};
    for (size_t k = 0; k < sizeof limits / sizeof limits[0]; k++) {
        for (int how = 0; how < 2; how++) {
            tc_path out;
            char *dir = old_set(&out);
            snapshot before;
            take(dir, &before);
            nf_error err;
            nf_writer *w;
            OK(start(out.s, limits[k], 2, &w, &err));
            OK(nf_writer_publish(w, &err));
            parts_of(out.s); /* the new artifact is complete at this point */
            if (how == 0) nf_writer_abort(w);
            nf_writer_free(w); /* how 1: free without a commit rolls back too */
            size_t n;
            cr_assert(same(dir, &before), "limit %llu, %s: the old set is not back: %s", (unsigned long long)limits[k],
                      how ? "free" : "abort", tc_listing(dir, &n));
            drop(&before);
            tc_rmtree(dir);
            free(dir);
        }
    }
}

Test(writer_publish, commit_removes_kept_files_and_surplus_parts)
{
    static const uint64_t limits[] = {8192, 16384, 0, 12288};
    for (size_t k = 0; k < sizeof limits / sizeof limits[0]; k++) {
        tc_path out;
        char *dir = old_set(&out);
        nf_error err;
        nf_writer *w;
        OK(start(out.s, limits[k], 2, &w, &err));
        cr_assert_eq(nf_writer_commit(w, &err), NF_ERR_USAGE, "commit before publish");
        OK(nf_writer_publish(w, &err));
        size_t n, files = parts_of(out.s);
        tc_listing(dir, &n);
        cr_assert_gt(n, files, "the replaced files are kept until the commit: %s", tc_listing(dir, &n));
        OK(nf_writer_commit(w, &err));
        cr_assert_eq(nf_writer_commit(w, &err), NF_ERR_USAGE, "commit twice");
        nf_writer_abort(w); /* no effect after the commit */
        nf_writer_free(w);
        cr_assert_eq(parts_of(out.s), files);
        char *names = tc_listing(dir, &n);
        cr_assert_eq(n, files, "limit %llu: left %s", (unsigned long long)limits[k], names);
        tc_rmtree(dir);
        free(dir);
    }
}

/* Fail the n-th call of op in publish + commit of an artifact with fewer files than the old one. */
static void sweep(nf_io_op op)
{
    size_t failed = 0, kept = 0;
    for (uint64_t nth = 1;; nth++) {
        tc_path out;
        char *dir = old_set(&out);
        snapshot before;
        take(dir, &before);
        nf_error err;
        nf_writer *w;
        OK(start(out.s, 16384, 2, &w, &err));
        nf_io_fault_arm(op, nth, EIO);
        nf_status st = nf_writer_publish(w, &err);
        if (st == NF_OK) st = nf_writer_commit(w, &err);
        uint64_t calls = nf_io_calls(op);
        nf_io_fault_reset();
        nf_writer_free(w);
        size_t n;
        char *names = tc_listing(dir, &n);
        if (st != NF_OK) {
            cr_assert_eq(st, NF_ERR_IO, "%s", err.message);
            cr_assert(same(dir, &before), "op %d call %llu failed (%s): the old set is not back: %s", (int)op,
                      (unsigned long long)nth, err.message, names);
            failed++;
        } else {
            size_t files = parts_of(out.s);
            cr_assert_lt(files, 8);
            size_t visible = 0;
            for (char *p = names; p && *p; p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL)
                if (*p != '.') visible++;
            cr_assert_eq(visible, files, "op %d call %llu: %s", (int)op, (unsigned long long)nth, names);
            if (n > files) {
                cr_assert_eq(op, NF_IO_UNLINK, "only a failed removal in the commit leaves a file: %s", names);
                cr_assert_not_null(strstr(names, ".old"), "%s", names);
                kept++;
            }
        }
        drop(&before);
        tc_rmtree(dir);
        free(dir);
        if (nth > calls) break; /* this run no longer reached the fault */
    }
    cr_assert_gt(failed + kept, 0, "op %d: no fault point", (int)op);
}

Test(writer_publish, faults_in_publish_and_commit)
{
    sweep(NF_IO_OPEN);
    sweep(NF_IO_READ);
    sweep(NF_IO_WRITE);
    sweep(NF_IO_SYNC);
    sweep(NF_IO_LINK);
    sweep(NF_IO_UNLINK);
}

Test(writer_publish, more_parts_than_the_old_artifact)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "p.ninfer");
    nf_error err;
    nf_writer *w;
    OK(start(out.s, 16384, 1, &w, &err));
    OK(nf_writer_finish(w, &err));
    nf_writer_free(w);
    for (int commit = 0; commit < 2; commit++) {
        snapshot before;
        take(dir, &before);
        cr_assert_eq(before.n, 3, "%s", before.names);
        OK(start(out.s, 8192, 2, &w, &err));
        OK(nf_writer_publish(w, &err));
        if (commit) OK(nf_writer_commit(w, &err));
        nf_writer_free(w);
        size_t n;
        if (commit) {
            cr_assert_eq(parts_of(out.s), 8);
            tc_listing(dir, &n);
            cr_assert_eq(n, 8, "%s", tc_listing(dir, &n));
        } else {
            cr_assert(same(dir, &before), "the old set is not back: %s", tc_listing(dir, &n));
        }
        drop(&before);
    }
    tc_rmtree(dir);
    free(dir);
}
