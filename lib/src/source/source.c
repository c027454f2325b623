/* Opening a source: what a path names (directory, index, GGUF, safetensors), the sharded index
 * and its cross-checks, companion files, and the accessors shared by both formats.
 *
 * Status classes: a path that cannot be opened or read is NF_ERR_IO; anything wrong with the
 * bytes, and a shard that an index names but that does not exist (the checkpoint is incomplete,
 * like a missing container part), is NF_ERR_INVALID. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "common/checked.h"
#include "common/fail.h"
#include "common/open_regular.h"
#include "common/io.h"
#include "common/json_prescan.h"
#include "source/gguf_parse.h"
#include "source/inflate.h"
#include "source/safetensors.h"
#include "source/torch.h"
#include "source/store.h"

/* ---------------------------------------------------------------- paths */
static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* dir + "/" + name (no doubled slash); malloc'ed. */
static char *join_path(const char *dir, size_t dir_len, const char *name)
{
    bool slash = dir_len > 0 && dir[dir_len - 1] != '/';
    size_t n = dir_len + (slash ? 1 : 0) + strlen(name) + 1;
    char *p = malloc(n);
    if (!p) return NULL;
    snprintf(p, n, "%.*s%s%s", (int)dir_len, dir, slash ? "/" : "", name);
    return p;
}

/* Length of the directory part of path (up to and including the last '/'; 0 when none). */
static size_t dir_len_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? (size_t)(slash - path) + 1 : 0;
}

static nf_status add_file(nf_source *s, const char *path, int fd, uint64_t size, nf_error *err)
{
    if (s->nfiles >= NF_SOURCE_MAX_FILES) {
        if (fd >= 0) nf_io_close(fd);
        return nf_error_set(err, NF_ERR_INVALID, "%s: more than %u files (the reader's cap)", s->path,
                            NF_SOURCE_MAX_FILES);
    }
    src_file *f = realloc(s->files, (s->nfiles + 1) * sizeof *f);
    if (!f) {
        if (fd >= 0) nf_io_close(fd);
        return nf_common_nomem_in(err, path);
    }
    s->files = f;
    f = &s->files[s->nfiles];
    memset(f, 0, sizeof *f);
    f->path = strdup(path);
    if (!f->path || !nf_common_fd_cache_grow(s->fds, s->nfiles + 1)) {
        if (fd >= 0) nf_io_close(fd);
        free(f->path);
        return nf_common_nomem_in(err, path);
    }
    f->size = size;
    f->owner = s;
    s->nfiles++;
    /* the cache records the file it is (device, inode) and keeps fd while there is room */
    int e = fd >= 0 ? nf_common_fd_cache_adopt(s->fds, s->nfiles - 1, fd) : 0;
    if (e) return nf_error_errno(err, e, "%s: cannot stat", path);
    return NF_OK;
}

/* Open a regular file for reading and record it.  missing_invalid: a missing file makes the
 * checkpoint invalid (a shard named by the index) rather than being a system error. */
static nf_status open_file(nf_source *s, const char *path, bool missing_invalid, const char *referrer, nf_error *err)
{
    /* (a FIFO named as a checkpoint is refused, not waited for: common/open_regular.h) */
    int fd;
    struct stat st;
    nf_status rc = nf_common_open_regular(path, path, NF_ERR_INVALID, &fd, &st, err);
    if (rc != NF_OK && missing_invalid && (errno == ENOENT || errno == ENOTDIR))
        return nf_error_set(err, NF_ERR_INVALID, "%s: shard %s is missing", referrer, path);
    if (rc != NF_OK) return rc;
    /* A hint only (its result is ignored): conversion reads each tensor once, front to back in
     * chunks, so a larger kernel readahead window helps cold files on slow disks. */
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    /* (add_file owns fd from here: it closes it on failure) */
    return add_file(s, path, fd, (uint64_t)st.st_size, err);
}

/* ---------------------------------------------------------------- companions */
static const char *const companion_list[] = {
    "config.json",
    "generation_config.json",
    "hf_quant_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "tokenizer.model",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "chat_template.jinja",
    "chat_template.json",
    "preprocessor_config.json",
};
#define NCOMPANIONS (sizeof companion_list / sizeof companion_list[0])

/* Record the companion files present in the directory `dir` (length dir_len). */
static nf_status scan_companions(nf_source *s, const char *dir, size_t dir_len, nf_error *err)
{
    s->companion_names = nf_source_arena_alloc(&s->arena, NCOMPANIONS * sizeof(char *));
    s->companion_paths = nf_source_arena_alloc(&s->arena, NCOMPANIONS * sizeof(char *));
    if (!s->companion_names || !s->companion_paths) return nf_common_nomem_in(err, s->path);
    for (size_t i = 0; i < NCOMPANIONS; i++) {
        char *p = join_path(dir, dir_len, companion_list[i]);
        if (!p) return nf_common_nomem_in(err, s->path);
        struct stat st;
        /* stat, not lstat: Hugging Face cache snapshots are symbolic links into blobs/. */
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
            const char *copy = nf_source_arena_strndup(&s->arena, p, strlen(p));
            if (!copy) {
                free(p);
                return nf_common_nomem_in(err, s->path);
            }
            s->companion_names[s->ncompanions] = companion_list[i];
            s->companion_paths[s->ncompanions] = copy;
            s->ncompanions++;
        }
        free(p);
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- sharded index */
static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* A shard name must stay in the index's directory: a bare file name, no separators, not "." or
 * "..", so a crafted index cannot make the reader open arbitrary paths. */
static bool shard_name_ok(const char *name)
{
    return name[0] != '\0' && strchr(name, '/') == NULL && strchr(name, '\\') == NULL && strcmp(name, ".") != 0 &&
           strcmp(name, "..") != 0;
}

/* The text of a JSON file named by a checkpoint (its index, its config.json): opened without
 * blocking (see open_file), a regular file of at most `cap` bytes (checked before anything is
 * read; `what` names the kind of file in the message), NUL-terminated. */
static nf_status read_json_text(const char *path, uint64_t cap, const char *what, char **text, size_t *len,
                                nf_error *err)
{
    *text = NULL;
    int fd, e;
    struct stat st;
    NF_TRY(nf_common_open_regular(path, path, NF_ERR_INVALID, &fd, &st, err));
    nf_status rc = NF_OK;
    if ((uint64_t)st.st_size > cap) {
        rc = nf_error_set(err, NF_ERR_INVALID, "%s: %s is %llu bytes, more than the reader's cap of %llu", path, what,
                          (unsigned long long)st.st_size, (unsigned long long)cap);
    } else {
        size_t n = (size_t)st.st_size;
        *text = malloc(n + 1);
        if (!*text) {
            rc = nf_common_nomem_in(err, path);
        } else if ((e = nf_io_pread_full(fd, *text, n, 0)) != 0) {
            rc = nf_error_errno(err, e, "%s: cannot read", path);
        } else {
            (*text)[n] = '\0';
            *len = n;
        }
    }
    nf_io_close(fd);
    if (rc != NF_OK) {
        free(*text);
        *text = NULL;
    }
    return rc;
}

/* A real index is {"metadata": {...}, "weight_map": {name: shard}}: a few containers and one
 * value per tensor (a 64 MiB index of "[{},{},...]" under "metadata" used to cost 5 GB). */
static nf_status index_load(const char *path, const char *text, size_t len, json_t **root, nf_error *err)
{
    static const nf_json_caps caps = {NF_ST_INDEX_MAX_DEPTH, NF_ST_INDEX_MAX_CONTAINERS, NF_ST_INDEX_MAX_VALUES};
    char detail[64];
    snprintf(detail, sizeof detail, ": %u tensors plus metadata", NF_SOURCE_MAX_TENSORS);
    return nf_json_load_checked(path, text, len, &caps, "an index", detail, root, err);
}

/* ---------------------------------------------------------------- config.json */
/* The converter publishes a checkpoint's config.json as the config of a component, and it used
 * to be read by jansson with no cap at all: 125 MB of "[]," cost 5.6 GB and 14 s, even for
 * --dry-run (docs/security.md 7.1, F14).  Same treatment as the index: a size cap, then the pre-scan. */
nf_status nf_source_parse_config(const void *text, size_t len, const char *name, json_t **out, nf_error *err)
{
    static const nf_json_caps caps = {NF_SOURCE_CONFIG_MAX_DEPTH, NF_SOURCE_CONFIG_MAX_CONTAINERS,
                                      NF_SOURCE_CONFIG_MAX_VALUES};
    if (!out || (!text && len)) return nf_error_set(err, NF_ERR_USAGE, "nf_source_parse_config: NULL argument");
    *out = NULL;
    if (!name) name = "config.json";
    if (!text) text = "";
    if (len > NF_SOURCE_MAX_CONFIG_BYTES)
        return nf_error_set(err, NF_ERR_INVALID, "%s: config.json is %zu bytes, more than the reader's cap of %u", name,
                            len, NF_SOURCE_MAX_CONFIG_BYTES);
    json_t *cfg = NULL;
    NF_TRY(nf_json_load_checked(name, text, len, &caps, "a config.json", "", &cfg, err));
    if (!json_is_object(cfg)) {
        json_decref(cfg);
        return nf_error_set(err, NF_ERR_INVALID, "%s: not a JSON object", name);
    }
    *out = cfg;
    return NF_OK;
}

nf_status nf_source_read_config(const char *path, json_t **out, nf_error *err)
{
    if (!path || !out) return nf_error_set(err, NF_ERR_USAGE, "nf_source_read_config: NULL argument");
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    NF_TRY(read_json_text(path, NF_SOURCE_MAX_CONFIG_BYTES, "config.json", &text, &len, err));
    nf_status rc = nf_source_parse_config(text, len, path, out, err);
    free(text);
    return rc;
}

/* One shard of an index: safetensors, or torch.save's zip (pytorch_model.bin.index.json), which
 * its first bytes tell; every shard of the index of the same kind as the first. */
static nf_status parse_shard(nf_source *s, size_t fi, nf_error *err)
{
    uint8_t magic[4] = {0};
    const size_t n = s->files[fi].size < 4 ? (size_t)s->files[fi].size : 4;
    NF_TRY(nf_source_file_read(&s->files[fi], 0, magic, n, err));
    const nf_source_kind k = (n == 4 && memcmp(magic, "PK\3\4", 4) == 0) || nf_source_torch_legacy_magic(magic, n)
                                 ? NF_SOURCE_TORCH
                                 : NF_SOURCE_SAFETENSORS;
    if (fi == 0) s->kind = k;
    else if (k != s->kind)
        return nf_error_set(err, NF_ERR_INVALID, "%s: a %s shard among %s shards", s->files[fi].path,
                            k == NF_SOURCE_TORCH ? "PyTorch" : "safetensors",
                            s->kind == NF_SOURCE_TORCH ? "PyTorch" : "safetensors");
    return k == NF_SOURCE_TORCH ? nf_source_torch_parse(s, fi, err) : nf_source_st_parse(s, fi, err);
}

static nf_status open_index(nf_source *s, const char *path, nf_error *err)
{
    s->index_path = strdup(path);
    if (!s->index_path) return nf_common_nomem_in(err, path);
    char *text;
    size_t len = 0;
    NF_TRY(read_json_text(path, NF_ST_MAX_INDEX_BYTES, "index", &text, &len, err));
    json_t *root = NULL;
    nf_status pre = index_load(path, text, len, &root, err);
    free(text);
    NF_TRY(pre);
    nf_status rc = NF_OK;
    const char **shards = NULL;
    json_t *map = json_is_object(root) ? json_object_get(root, "weight_map") : NULL;
    if (!json_is_object(root)) {
        rc = nf_error_set(err, NF_ERR_INVALID, "%s: the index is not a JSON object", path);
    } else if (!json_is_object(map)) {
        rc = nf_error_set(err, NF_ERR_INVALID, "%s: %s", path,
                          map ? "\"weight_map\" is not an object" : "no \"weight_map\" member");
    } else if (json_object_size(map) == 0) {
        rc = nf_error_set(err, NF_ERR_INVALID, "%s: \"weight_map\" lists no tensors", path);
    } else if (json_object_size(map) > NF_SOURCE_MAX_TENSORS) {
        rc = nf_error_set(err, NF_ERR_INVALID, "%s: \"weight_map\" lists %zu tensors, more than the reader's cap of %u",
                          path, json_object_size(map), NF_SOURCE_MAX_TENSORS);
    }
    size_t nmap = rc == NF_OK ? json_object_size(map) : 0;
    if (rc == NF_OK) {
        shards = malloc(nmap * sizeof *shards);
        if (!shards) rc = nf_common_nomem_in(err, path);
    }
    size_t nshards = 0;
    if (rc == NF_OK) {
        const char *name;
        json_t *v;
        json_object_foreach(map, name, v)
        {
            if (!json_is_string(v)) {
                rc = nf_error_set(err, NF_ERR_INVALID, "%s: weight_map[\"%s\"] is not a string", path, name);
                break;
            }
            const char *shard = json_string_value(v);
            if (!shard_name_ok(shard)) {
                rc = nf_error_set(err, NF_ERR_INVALID,
                                  "%s: weight_map[\"%s\"] = \"%s\" is not a file name in the index's directory", path,
                                  name, shard);
                break;
            }
            shards[nshards++] = shard;
        }
    }
    if (rc == NF_OK) {
        /* Distinct shard names, sorted: the file order of the source. */
        qsort(shards, nshards, sizeof *shards, cmp_str);
        size_t u = 0;
        for (size_t i = 0; i < nshards; i++)
            if (u == 0 || strcmp(shards[u - 1], shards[i]) != 0) shards[u++] = shards[i];
        nshards = u;
        size_t dlen = dir_len_of(path);
        for (size_t i = 0; i < nshards && rc == NF_OK; i++) {
            char *p = join_path(path, dlen, shards[i]);
            if (!p) {
                rc = nf_common_nomem_in(err, path);
                break;
            }
            rc = open_file(s, p, true, path, err);
            free(p);
            if (rc == NF_OK) rc = parse_shard(s, s->nfiles - 1, err);
        }
    }
    if (rc == NF_OK) rc = nf_source_index_names(s, err); /* a name in two shards is caught here */
    if (rc == NF_OK) {
        /* Every shard tensor is listed, under its own shard. */
        for (size_t i = 0; i < s->ntensors && rc == NF_OK; i++) {
            const nf_source_tensor *t = &s->tensors[i].pub;
            const char *shard_path = s->files[t->file].path;
            const char *shard = shard_path + dir_len_of(shard_path);
            json_t *v = json_object_get(map, t->name);
            if (!v)
                rc = nf_error_set(err, NF_ERR_INVALID, "%s: tensor '%s' of shard %s is not listed in weight_map", path,
                                  t->name, shard);
            else if (strcmp(json_string_value(v), shard) != 0)
                rc = nf_error_set(err, NF_ERR_INVALID,
                                  "%s: tensor '%s' is listed in weight_map under shard %s but is stored in %s", path,
                                  t->name, json_string_value(v), shard);
        }
    }
    if (rc == NF_OK && s->ntensors != nmap) {
        /* Some listed tensor is in no shard: name the first one. */
        const char *name;
        json_t *v;
        json_object_foreach(map, name, v)
        {
            if (!nf_source_find(s, name)) {
                rc = nf_error_set(err, NF_ERR_INVALID,
                                  "%s: tensor '%s' is listed in weight_map under shard %s, "
                                  "which does not hold it",
                                  path, name, json_string_value(v));
                break;
            }
        }
        if (rc == NF_OK) /* unreachable when every check above holds; kept as a guard */
            rc = nf_error_set(err, NF_ERR_INVALID, "%s: weight_map lists %zu tensors, the shards hold %zu", path, nmap,
                              s->ntensors);
    }
    free(shards);
    json_decref(root);
    return rc;
}

/* ---------------------------------------------------------------- directory */
static nf_status open_directory(nf_source *s, const char *dir, nf_error *err)
{
    DIR *d = opendir(dir);
    if (!d) return nf_error_errno(err, errno, "%s: cannot list the directory", dir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    nf_status rc = NF_OK;
    bool has_model_index = false, has_bin_index = false, has_bin = false;
    size_t nbin = 0;
    char *first_bin = NULL;
    struct dirent *de;
    errno = 0;
    while ((de = readdir(d)) != NULL) {
        const char *nm = de->d_name;
        if (nm[0] == '.') continue;
        if (strcmp(nm, "model.safetensors.index.json") == 0) has_model_index = true;
        /* PyTorch's files, read when the directory holds no safetensors */
        if (strcmp(nm, "pytorch_model.bin.index.json") == 0) has_bin_index = true;
        if (strcmp(nm, "pytorch_model.bin") == 0) has_bin = true;
        /* the Trainer's pickled arguments beside the weights are not weights */
        if (ends_with(nm, ".bin") && strcmp(nm, "training_args.bin") != 0 && nbin++ == 0 && !(first_bin = strdup(nm))) {
            rc = nf_common_nomem_in(err, dir);
            break;
        }
        if (!ends_with(nm, ".safetensors") && !ends_with(nm, ".safetensors.index.json")) continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            if (nc > NF_SOURCE_MAX_FILES * 2u) {
                rc = nf_error_set(err, NF_ERR_INVALID, "%s: more than %u safetensors files", dir, NF_SOURCE_MAX_FILES);
                break;
            }
            char **p = realloc(names, nc * sizeof *p);
            if (!p) {
                rc = nf_common_nomem_in(err, dir);
                break;
            }
            names = p;
            cap = nc;
        }
        names[n] = strdup(nm);
        if (!names[n]) {
            rc = nf_common_nomem_in(err, dir);
            break;
        }
        n++;
    }
    if (rc == NF_OK && errno != 0) rc = nf_error_errno(err, errno, "%s: cannot list the directory", dir);
    closedir(d);
    size_t dlen = strlen(dir);
    if (rc == NF_OK) {
        if (n > 1) qsort(names, n, sizeof *names, cmp_str);
        size_t nindex = 0, nst = 0;
        const char *index = NULL, *single = NULL;
        for (size_t i = 0; i < n; i++) {
            if (ends_with(names[i], ".safetensors.index.json")) {
                nindex++;
                if (!index) index = names[i];
            } else {
                nst++;
                if (!single) single = names[i];
            }
        }
        if (has_model_index) index = "model.safetensors.index.json";
        char *p = NULL;
        if (has_model_index || nindex == 1) {
            p = join_path(dir, dlen, index);
            if (!p) rc = nf_common_nomem_in(err, dir);
            else rc = open_index(s, p, err);
        } else if (nindex > 1) {
            rc = nf_error_set(err, NF_ERR_INVALID,
                              "%s: %zu *.safetensors.index.json files and no "
                              "model.safetensors.index.json: open one of them",
                              dir, nindex);
        } else if (nst == 1) {
            p = join_path(dir, dlen, single);
            if (!p) rc = nf_common_nomem_in(err, dir);
            else if ((rc = open_file(s, p, false, NULL, err)) == NF_OK) rc = nf_source_st_parse(s, 0, err);
            if (rc == NF_OK) rc = nf_source_index_names(s, err);
        } else if (nst == 0 && has_bin_index) {
            p = join_path(dir, dlen, "pytorch_model.bin.index.json");
            if (!p) rc = nf_common_nomem_in(err, dir);
            else rc = open_index(s, p, err);
        } else if (nst == 0 && (has_bin || nbin == 1)) {
            p = join_path(dir, dlen, has_bin ? "pytorch_model.bin" : first_bin);
            if (!p) rc = nf_common_nomem_in(err, dir);
            else if ((rc = open_file(s, p, false, NULL, err)) == NF_OK) rc = nf_source_torch_parse(s, 0, err);
            s->kind = NF_SOURCE_TORCH;
            if (rc == NF_OK) rc = nf_source_index_names(s, err);
        } else if (nst == 0 && nbin > 1) {
            rc = nf_error_set(err, NF_ERR_INVALID,
                              "%s: %zu *.bin files (%s, ...) and no pytorch_model.bin.index.json to say how they fit "
                              "together",
                              dir, nbin, first_bin);
        } else if (nst == 0) {
            rc = nf_error_set(err, NF_ERR_INVALID,
                              "%s: no *.safetensors file, no model.safetensors.index.json, no pytorch_model.bin and no "
                              "pytorch_model.bin.index.json",
                              dir);
        } else {
            rc = nf_error_set(err, NF_ERR_INVALID,
                              "%s: %zu *.safetensors files (%s, ...) and no "
                              "model.safetensors.index.json to say how they fit together",
                              dir, nst, single);
        }
        free(p);
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    free(first_bin);
    if (rc == NF_OK) rc = scan_companions(s, dir, dlen, err);
    return rc;
}

/* ---------------------------------------------------------------- open / close */
static nf_source *source_new(const char *path)
{
    nf_source *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->path = strdup(path);
    s->fds = nf_source_fd_cache_new(s);
    if (!s->path || !s->fds) {
        nf_common_fd_cache_free(s->fds);
        free(s->path);
        free(s);
        return NULL;
    }
    return s;
}

void nf_source_close(nf_source *s)
{
    if (!s) return;
    nf_common_fd_cache_free(s->fds);
    nf_source_inflate_free(s->inflate);
    for (size_t i = 0; i < s->nfiles; i++) free(s->files[i].path);
    free(s->files);
    free(s->tensors);
    free(s->by_name);
    free(s->kvs);
    free(s->kv_by_key);
    free(s->index_path);
    free(s->path);
    nf_source_arena_free(&s->arena);
    free(s);
}

/* The magic decides for memory images and for files with an unknown extension. */
static nf_source_kind sniff(const uint8_t *p, size_t n)
{
    if (n >= 4 && memcmp(p, "GGUF", 4) == 0) return NF_SOURCE_GGUF;
    if ((n >= 4 && memcmp(p, "PK\3\4", 4) == 0) || nf_source_torch_legacy_magic(p, n)) return NF_SOURCE_TORCH;
    return NF_SOURCE_SAFETENSORS;
}

static nf_status parse_single(nf_source *s, nf_error *err)
{
    if (s->kind == NF_SOURCE_GGUF) NF_TRY(nf_source_gguf_parse(s, err));
    else if (s->kind == NF_SOURCE_TORCH) NF_TRY(nf_source_torch_parse(s, 0, err));
    else NF_TRY(nf_source_st_parse(s, 0, err));
    return nf_source_index_names(s, err);
}

nf_status nf_source_open(const char *path, nf_source **out, nf_error *err)
{
    if (!path || !out) return nf_error_set(err, NF_ERR_USAGE, "nf_source_open: NULL argument");
    *out = NULL;
    nf_source *s = source_new(path);
    if (!s) return nf_common_nomem_in(err, path);
    nf_status rc = NF_OK;
    struct stat st;
    if (stat(path, &st) != 0) {
        rc = nf_error_errno(err, errno, "%s: cannot open", path);
    } else if (S_ISDIR(st.st_mode)) {
        s->kind = NF_SOURCE_SAFETENSORS;
        rc = open_directory(s, path, err);
    } else if (ends_with(path, ".json")) {
        s->kind = NF_SOURCE_SAFETENSORS;
        rc = open_index(s, path, err);
        if (rc == NF_OK) rc = scan_companions(s, path, dir_len_of(path), err);
    } else {
        rc = open_file(s, path, false, NULL, err);
        if (rc == NF_OK) {
            if (ends_with(path, ".gguf")) {
                s->kind = NF_SOURCE_GGUF;
            } else if (ends_with(path, ".safetensors")) {
                s->kind = NF_SOURCE_SAFETENSORS;
            } else {
                uint8_t magic[4];
                size_t n = s->files[0].size < 4 ? (size_t)s->files[0].size : 4;
                rc = nf_source_file_read(&s->files[0], 0, magic, n, err);
                s->kind = sniff(magic, n);
            }
        }
        if (rc == NF_OK) rc = parse_single(s, err);
        if (rc == NF_OK && s->kind != NF_SOURCE_GGUF) rc = scan_companions(s, path, dir_len_of(path), err);
    }
    if (rc != NF_OK) {
        nf_source_close(s);
        return rc;
    }
    *out = s;
    return NF_OK;
}

nf_status nf_source_open_memory(const void *data, size_t len, nf_source_kind kind, const char *name, nf_source **out,
                                nf_error *err)
{
    if (!out || (!data && len > 0)) return nf_error_set(err, NF_ERR_USAGE, "nf_source_open_memory: NULL argument");
    *out = NULL;
    if (!name) name = "<memory>";
    if (kind != NF_SOURCE_AUTO && kind != NF_SOURCE_SAFETENSORS && kind != NF_SOURCE_GGUF && kind != NF_SOURCE_TORCH)
        return nf_error_set(err, NF_ERR_USAGE, "nf_source_open_memory: bad kind %d", (int)kind);
    nf_source *s = source_new(name);
    if (!s) return nf_common_nomem_in(err, name);
    static const uint8_t empty[1] = {0};
    nf_status rc = add_file(s, name, -1, len, err);
    if (rc == NF_OK) {
        s->files[0].mem = data ? data : empty;
        s->kind = kind == NF_SOURCE_AUTO ? sniff(s->files[0].mem, len) : kind;
        rc = parse_single(s, err);
    }
    if (rc != NF_OK) {
        nf_source_close(s);
        return rc;
    }
    *out = s;
    return NF_OK;
}

/* ---------------------------------------------------------------- accessors */
nf_source_kind nf_source_kind_of(const nf_source *s) { return s->kind; }
const char *nf_source_path(const nf_source *s) { return s->path; }
const char *nf_source_index_path(const nf_source *s) { return s->index_path; }
size_t nf_source_file_count(const nf_source *s) { return s->nfiles; }

const char *nf_source_file_path(const nf_source *s, size_t file)
{
    return file < s->nfiles ? s->files[file].path : NULL;
}

uint64_t nf_source_file_size(const nf_source *s, size_t file) { return file < s->nfiles ? s->files[file].size : 0; }

size_t nf_source_tensor_count(const nf_source *s) { return s->ntensors; }

const nf_source_tensor *nf_source_tensor_at(const nf_source *s, size_t index)
{
    return index < s->ntensors ? &s->tensors[index].pub : NULL;
}

size_t nf_source_tensor_index(const nf_source *s, const nf_source_tensor *t)
{
    if (!s || !t || s->ntensors == 0) return SIZE_MAX;
    uintptr_t base = (uintptr_t)s->tensors, p = (uintptr_t)t;
    if (p < base || p >= base + s->ntensors * sizeof(src_tensor) || (p - base) % sizeof(src_tensor) != 0)
        return SIZE_MAX;
    return (size_t)((p - base) / sizeof(src_tensor));
}

const nf_source_tensor *nf_source_find(const nf_source *s, const char *name)
{
    if (!name || !s->by_name) return NULL;
    size_t lo = 0, hi = s->ntensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->by_name[mid]->pub.name, name);
        if (c == 0) return &s->by_name[mid]->pub;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const char *nf_source_companion(const nf_source *s, const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < s->ncompanions; i++)
        if (strcmp(s->companion_names[i], name) == 0) return s->companion_paths[i];
    return NULL;
}

size_t nf_source_companion_count(const nf_source *s) { return s->ncompanions; }

const char *nf_source_companion_at(const nf_source *s, size_t index, const char **name)
{
    if (index >= s->ncompanions) return NULL;
    if (name) *name = s->companion_names[index];
    return s->companion_paths[index];
}

size_t nf_source_st_metadata_count(const nf_source *s, size_t file)
{
    return file < s->nfiles ? s->files[file].nmeta : 0;
}

bool nf_source_st_metadata_at(const nf_source *s, size_t file, size_t index, const char **key, const char **value)
{
    if (file >= s->nfiles || index >= s->files[file].nmeta) return false;
    if (key) *key = s->files[file].meta_keys[index];
    if (value) *value = s->files[file].meta_values[index];
    return true;
}

const char *nf_source_st_metadata(const nf_source *s, size_t file, const char *key)
{
    if (!key || file >= s->nfiles) return NULL;
    const src_file *f = &s->files[file];
    for (size_t i = 0; i < f->nmeta; i++)
        if (strcmp(f->meta_keys[i], key) == 0) return f->meta_values[i];
    return NULL;
}
