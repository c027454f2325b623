/* The files of an execution (exec_impl.h): the inputs it reads (never an output), the outputs'
 * checks before a byte is written, and the writer planned from the plan's objects, with the
 * resources and tails it writes first. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#include "common/io.h"
#include "convert/convert_impl.h"
#include "convert/exec_impl.h"
#include "outputs/out_names.h"
#include "outputs/out_publish.h"
#include "stats/stats.h"

/* A path as messages show it: shortened in the middle when long (common/io.h, docs/security.md 7.1, M8). */
#define MP(path) nf_io_msg_path((path), (char[NF_IO_MSG_PATH + 1]){0})

/* ---------------------------------------------------------------- inputs and outputs */

static void add_input(input_set *in, const char *path, const char *what)
{
    struct stat sb;
    if (!path || stat(path, &sb) != 0) return; /* not a file (stdin, "(quick mode)"): nothing to protect */
    if (in->n == in->cap) {
        size_t cap = in->cap ? in->cap * 2 : 16;
        input_file *v = realloc(in->v, cap * sizeof *v);
        if (!v) {
            in->nomem = true;
            return;
        }
        in->v = v;
        in->cap = cap;
    }
    input_file *f = &in->v[in->n++];
    f->dev = sb.st_dev;
    f->ino = sb.st_ino;
    snprintf(f->what, sizeof f->what, "%s", what);
}

nf_status nf_convert_collect_inputs(const nf_plan *p, input_set *in, nf_error *err)
{
    char what[160];
    add_input(in, p->recipe->path, "the recipe");
    for (size_t i = 0; i < p->nsources; i++) {
        const char *name = p->sources[i].name;
        snprintf(what, sizeof what, "source '%s'", name);
        add_input(in, p->sources[i].path, what);
        const nf_source *s = p->sources[i].src;
        snprintf(what, sizeof what, "a file of source '%s'", name);
        for (size_t f = 0; s && f < nf_source_file_count(s); f++) add_input(in, nf_source_file_path(s, f), what);
        snprintf(what, sizeof what, "the index of source '%s'", name);
        add_input(in, s ? nf_source_index_path(s) : NULL, what);
        for (size_t c = 0; s && c < nf_source_companion_count(s); c++) {
            const char *cname = NULL, *cpath = nf_source_companion_at(s, c, &cname);
            snprintf(what, sizeof what, "%s of source '%s'", cname ? cname : "a companion file", name);
            add_input(in, cpath, what);
        }
    }
    for (size_t i = 0; i < p->nobjects; i++)
        if (p->objects[i].kind == NF_OBJECT_RESOURCE) add_input(in, p->objects[i].path, "a resource file");
    if (in->nomem) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    return NF_OK;
}

const input_file *nf_convert_input_of(const input_set *in, const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return NULL;
    for (size_t i = 0; i < in->n; i++)
        if (in->v[i].dev == sb.st_dev && in->v[i].ino == sb.st_ino) return &in->v[i];
    return NULL;
}

/* A name the run to OUT touches (nf_outputs_each_role) that is an input: refused. */
typedef struct refusal {
    const input_set *in;
    const char *output;
} refusal;

static nf_status refuse_input(void *ctx, const char *path, const char *role, nf_error *err)
{
    const refusal *r = ctx;
    const input_file *f = nf_convert_input_of(r->in, path);
    if (f && strcmp(role, "the artifact") == 0)
        return nf_error_set(err, NF_ERR_USAGE, "%s is %s: refusing to overwrite an input", MP(path), f->what);
    if (f)
        return nf_error_set(err, NF_ERR_USAGE,
                            "%s is %s: refusing to overwrite an input (a conversion to %s "
                            "writes, replaces or removes %s)",
                            MP(path), f->what, MP(r->output), role);
    return NF_OK;
}

/* No input is ever replaced, --force or not (docs/security.md 1.3, docs/security.md 7.1, F1): no file the run creates,
 * replaces or removes for OUT (every name nf_outputs_role knows, found in OUT's directory) may be an
 * input, by its name or as another link to the same file. */
nf_status nf_convert_refuse_inputs(const input_set *in, const char *output, bool report, nf_error *err)
{
    refusal r = {in, output};
    return nf_outputs_each_role(output, report, refuse_input, &r, err);
}

/* A file published by rename beside the artifact (`what`: the report, the statement): no special
 * file (docs/security.md 1.3: never replaced), nor an existing file without force. */
static nf_status check_beside(const char *path, const char *what, const char *advice, bool force, nf_error *err)
{
    struct stat sb;
    int e = nf_io_lstat(path, &sb);
    if (e == 0 && !S_ISREG(sb.st_mode))
        return nf_error_set(err, NF_ERR_USAGE,
                            "%s is %s, not a regular file: %s is published by rename, which would "
                            "replace it%s",
                            MP(path), nf_io_kind_name(sb.st_mode), what, advice);
    if (e == 0 && !force) return nf_error_set(err, NF_ERR_IO, "%s exists (use --force to replace it)", MP(path));
    if (e != 0 && e != ENOENT) return nf_error_errno(err, e, "%s", MP(path));
    return NF_OK;
}

/* The directory of path, as it is (its device and inode): false when there is none. */
static bool parent_of(const char *path, struct stat *sb)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    int n = slash ? snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path)
                  : snprintf(dir, sizeof dir, ".");
    return n > 0 && (size_t)n < sizeof dir && stat(dir, sb) == 0 && S_ISDIR(sb->st_mode);
}

/* --attest's file: published with the artifact, so never an input, nor a name the run to OUT
 * writes, replaces or removes (the artifact, its report, a part, a temp or lock file: the same
 * directory is told by identity, not by how the path is spelled), nor a special file, nor an
 * existing file without force; and its directory must exist (found now, not after the run). */
static nf_status check_statement(const input_set *in, const nf_convert_options *opt, nf_error *err)
{
    const char *path = opt->attest;
    const input_file *f = nf_convert_input_of(in, path);
    if (f) return nf_error_set(err, NF_ERR_USAGE, "%s is %s: refusing to overwrite an input", MP(path), f->what);
    struct stat pd, od;
    if (!parent_of(path, &pd))
        return nf_error_set(err, NF_ERR_IO, "--attest %s: its directory does not exist", MP(path));
    const char *slash = strrchr(opt->output, '/'), *aslash = strrchr(path, '/');
    const char *role = nf_outputs_role(aslash ? aslash + 1 : path, slash ? slash + 1 : opt->output, true);
    if (role && parent_of(opt->output, &od) && od.st_dev == pd.st_dev && od.st_ino == pd.st_ino)
        return nf_error_set(err, NF_ERR_USAGE, "--attest %s: that is %s of this conversion; give another name",
                            MP(path), role);
    return check_beside(path, "the statement", "", opt->force, err);
}

/* Before anything is written: no output is an input, and the report and the statement (when
 * there are) fit check_beside. */
nf_status nf_convert_prepare_outputs(const input_set *in, const nf_convert_options *opt, const char *report_path,
                                     nf_error *err)
{
    NF_TRY(nf_convert_refuse_inputs(in, opt->output, opt->report, err));
    if (opt->attest) NF_TRY(check_statement(in, opt, err));
    if (!opt->report) return NF_OK;
    return check_beside(report_path, "the report", "; give another output name, or --no-report", opt->force, err);
}

nf_status nf_convert_write_resources(nf_plan *p, nf_writer *w, nf_error *err)
{
    uint8_t buf[65536];
    for (size_t i = 0; i < p->nobjects; i++) {
        const plan_object *o = &p->objects[i];
        if (o->kind != NF_OBJECT_RESOURCE || !nf_writer_object_selected(w, o->writer_index)) continue;
        if (o->data) { /* made by the plan */
            NF_TRY(nf_writer_write(w, o->writer_index, 0, o->data, (size_t)o->bytes, err));
            continue;
        }
        int fd = nf_io_open(o->path, O_RDONLY, 0);
        if (fd < 0) return nf_error_errno(err, errno, "cannot open %s", MP(o->path));
        struct stat sb;
        int e = nf_io_fstat(fd, &sb);
        nf_status st = e ? nf_error_errno(err, e, "cannot stat %s", MP(o->path)) : NF_OK;
        if (st == NF_OK && (uint64_t)sb.st_size != o->bytes)
            st = nf_error_set(err, NF_ERR_IO, "%s changed size while converting", MP(o->path));
        for (uint64_t pos = 0; st == NF_OK && pos < o->bytes;) {
            size_t n = o->bytes - pos < sizeof buf ? (size_t)(o->bytes - pos) : sizeof buf;
            if ((e = nf_io_pread_full(fd, buf, n, pos)) != 0)
                st = nf_error_errno(err, e, "cannot read %s", MP(o->path));
            else st = nf_writer_write(w, o->writer_index, pos, buf, n, err);
            pos += n;
        }
        nf_io_close(fd);
        if (st != NF_OK) return st;
    }
    return NF_OK;
}

nf_status nf_convert_write_tails(nf_plan *p, nf_writer *w, nf_error *err)
{
    for (size_t i = 0; i < p->nobjects; i++) {
        const plan_object *o = &p->objects[i];
        if (o->kind != NF_OBJECT_TENSOR || !nf_writer_object_selected(w, o->writer_index)) continue;
        nf_words words;
        NF_TRY(nf_words_alloc(&words, &o->g, 0, err));
        if (o->divisors && words.divisors)
            memcpy(words.divisors, o->divisors, (size_t)o->g.divisors * sizeof *o->divisors);
        nf_writer_sink ws = {w, o->writer_index};
        nf_status st = nf_layout_encode_tail(&o->g, &words, false, nf_writer_sink_write, &ws, err);
        nf_words_free(&words);
        if (st != NF_OK) return nf_error_forward(err, st, "object '%s'", o->id);
    }
    return NF_OK;
}

/* The writer of p's artifact: every object planned, the directory members set (not laid out). */
nf_status nf_convert_plan_writer(nf_plan *p, const nf_convert_options *opt, nf_writer **out, nf_error *err)
{
    nf_writer_options wo = {opt->has_max_file_bytes ? opt->max_file_bytes : p->recipe->max_file_bytes, opt->artifact_id,
                            opt->force, true};
    nf_writer *w = NULL;
    NF_TRY(nf_writer_create(opt->output, &wo, &w, err));
    nf_status st = NF_OK;
    for (size_t i = 0; st == NF_OK && i < p->nobjects; i++) {
        plan_object *o = &p->objects[i];
        st = o->kind == NF_OBJECT_TENSOR ? nf_writer_add_tensor(w, o->id, &o->g, &o->writer_index, err)
                                         : nf_writer_add_resource(w, o->id, o->bytes, &o->writer_index, err);
    }
    if (st == NF_OK) st = nf_writer_set_member(w, "components", json_incref(p->components), err);
    p->binding_records = (nf_plan_records){p, 0, 0};
    p->provenance_records = (nf_plan_records){p, 0, 0};
    if (st == NF_OK)
        st = nf_writer_set_member_records(w, "bindings", NULL, NULL, nf_plan_binding_record, &p->binding_records, err);
    if (st == NF_OK) st = nf_writer_set_member(w, "metadata", json_deep_copy(p->metadata), err);
    if (st == NF_OK)
        st = nf_writer_set_member_records(w, "provenance",
                                          json_incref(p->provenance_laid ? p->provenance_laid : p->provenance),
                                          "objects", nf_plan_provenance_record, &p->provenance_records, err);
    if (st != NF_OK) {
        nf_writer_free(w);
        return st;
    }
    *out = w;
    return NF_OK;
}

nf_status nf_convert_check_outputs(const nf_plan *p, const nf_convert_options *opt, nf_error *err)
{
    char *report_path = nf_outputs_report_name(opt->output);
    if (!report_path) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    input_set in = {0};
    nf_status st = nf_convert_collect_inputs(p, &in, err);
    if (st == NF_OK) st = nf_convert_prepare_outputs(&in, opt, report_path, err);
    free(in.v);
    free(report_path);
    struct stat sb;
    if (st == NF_OK && nf_io_lstat(opt->output, &sb) == 0)
        st = nf_error_errno(err, EEXIST,
                            "%s: the tasks of a plan write an output that does not exist yet; remove it "
                            "first",
                            MP(opt->output));
    return st;
}

nf_status nf_convert_writer(nf_plan *p, const nf_convert_options *opt, const char *fingerprint, nf_writer **out,
                            nf_error *err)
{
    nf_writer *w = NULL;
    NF_TRY(nf_convert_plan_writer(p, opt, &w, err));
    nf_status st = nf_writer_layout_known(w, fingerprint, err);
    if (st != NF_OK) {
        nf_writer_free(w);
        return st;
    }
    *out = w;
    return NF_OK;
}
