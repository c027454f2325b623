/* ninfer-inspect --provenance (docs/ninfer-inspect.md, "--provenance"; docs/provenance.md): what
 * a third party checks an artifact against -- the converter, the recipe's SHA-256, each source
 * with its hub repository and revision and its files' sizes and SHA-256.  The provenance is the
 * artifact's data, so each member is shown only when it has the type the converter writes (a
 * member of another type is said so, never guessed), and every name is escaped in text. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "inspect.h"

static const char *str_member(const json_t *o, const char *key)
{
    const json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool u64_member(const json_t *o, const char *key, uint64_t *out)
{
    const json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    if (!json_is_integer(v) || json_integer_value(v) < 0) return false;
    *out = (uint64_t)json_integer_value(v);
    return true;
}

/* A recorded digest: 64 lowercase hex digits, else NULL (shown as not recorded). */
static const char *digest_member(const json_t *o, const char *key)
{
    const char *s = str_member(o, key);
    if (!s || strlen(s) != 64) return NULL;
    for (size_t i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return NULL;
    return s;
}

static size_t recorded_objects(const json_t *prov)
{
    const json_t *objs = json_object_get(prov, "objects");
    return json_is_object(objs) ? json_object_size(objs) : 0;
}

static json_t *file_json(const json_t *f)
{
    uint64_t bytes = 0;
    json_t *o = json_object();
    const char *path = str_member(f, "path"), *sha = digest_member(f, "sha256");
    json_object_set_new(o, "path", path ? json_string(path) : json_null());
    json_object_set_new(o, "bytes", u64_member(f, "bytes", &bytes) ? json_integer((json_int_t)bytes) : json_null());
    json_object_set_new(o, "sha256", sha ? json_string(sha) : json_null());
    return o;
}

static json_t *source_json(const json_t *s)
{
    uint64_t bytes = 0;
    json_t *o = json_object();
    const char *path = str_member(s, "path");
    json_object_set_new(o, "path", path ? json_string(path) : json_null());
    json_object_set_new(o, "bytes", u64_member(s, "bytes", &bytes) ? json_integer((json_int_t)bytes) : json_null());
    const json_t *hub = json_object_get(s, "hub");
    const char *repo = str_member(hub, "repo"), *rev = str_member(hub, "revision"), *hp = str_member(hub, "path");
    if (repo && rev) {
        json_t *h = json_pack("{s:s,s:s}", "repo", repo, "revision", rev);
        if (h && hp) json_object_set_new(h, "path", json_string(hp));
        json_object_set_new(o, "hub", h);
    } else {
        json_object_set_new(o, "hub", json_null());
    }
    const json_t *files = json_object_get(s, "files");
    json_t *fl = json_is_array(files) ? json_array() : json_null();
    for (size_t i = 0; json_is_array(files) && i < json_array_size(files); i++)
        json_array_append_new(fl, file_json(json_array_get(files, i)));
    json_object_set_new(o, "files", fl);
    return o;
}

static json_t *provenance_json(const nf_artifact *a, const char *path)
{
    const json_t *prov = json_object_get(nf_artifact_directory(a), "provenance");
    char id[33];
    nf_artifact_id_hex(a, id);
    const char *conv = str_member(prov, "converter"), *rsha = digest_member(prov, "recipe_sha256");
    json_t *doc = json_pack("{s:o,s:s}", "artifact", nf_cli_json_cstr(path), "artifact_id", id);
    json_object_set_new(doc, "converter", conv ? json_string(conv) : json_null());
    json_object_set_new(doc, "recipe_sha256", rsha ? json_string(rsha) : json_null());
    const json_t *recipe = json_object_get(prov, "recipe");
    json_object_set_new(doc, "recipe", recipe ? json_deep_copy(recipe) : json_null());
    json_t *sources = json_object();
    const json_t *src = json_object_get(prov, "sources");
    const char *name;
    json_t *s;
    if (json_is_object(src))
        json_object_foreach((json_t *)src, name, s) json_object_set_new(sources, name, source_json(s));
    json_object_set_new(doc, "sources", sources);
    json_object_set_new(doc, "objects_recorded", json_integer((json_int_t)recorded_objects(prov)));
    return doc;
}

static void print_provenance(const json_t *doc)
{
    printf("artifact      %s\n", json_string_value(json_object_get(doc, "artifact_id")));
    const char *conv = str_member(doc, "converter"), *rsha = str_member(doc, "recipe_sha256");
    printf("converter     %s\n", conv ? nf_cli_name(conv).s : "(not recorded)");
    printf("recipe        %s\n",
           rsha ? rsha
                : (json_is_null(json_object_get(doc, "recipe")) ? "(not recorded)"
                                                                : "(no SHA-256: recorded as JSON only)"));
    const char *name;
    json_t *s;
    json_object_foreach(json_object_get(doc, "sources"), name, s)
    {
        const char *path = str_member(s, "path");
        printf("\nsource        %s\n", nf_cli_name(name).s);
        printf("path          %s\n", path ? nf_cli_name(path).s : "(not recorded)");
        const json_t *hub = json_object_get(s, "hub");
        if (json_is_object(hub)) {
            const char *hp = str_member(hub, "path");
            printf("hub           %s", nf_cli_name(str_member(hub, "repo")).s);
            printf(" revision %s", nf_cli_name(str_member(hub, "revision")).s);
            if (hp) printf(" folder %s", nf_cli_name(hp).s);
            printf("\n");
        }
        const json_t *files = json_object_get(s, "files");
        if (!json_is_array(files)) {
            printf("files         (not recorded)\n");
            continue;
        }
        printf("files         %zu\n", json_array_size(files));
        for (size_t i = 0; i < json_array_size(files); i++) {
            const json_t *f = json_array_get(files, i);
            const char *fp = str_member(f, "path"), *sha = str_member(f, "sha256");
            uint64_t bytes = 0;
            bool has_bytes = u64_member(f, "bytes", &bytes);
            char b[24];
            snprintf(b, sizeof b, "%" PRIu64, bytes);
            printf("  %-64s  %14s  %s\n", sha ? sha : "(no SHA-256 recorded)", has_bytes ? b : "?",
                   fp ? nf_cli_name(fp).s : "(no name)");
        }
    }
    printf("\nobjects       %" JSON_INTEGER_FORMAT " with a provenance record\n",
           json_integer_value(json_object_get(doc, "objects_recorded")));
}

int inspect_provenance(const nf_cli *cli, const nf_artifact *a, const char *path)
{
    json_t *doc = provenance_json(a, path);
    if (!doc) return nf_cli_error(cli, NF_ERR_NOMEM, "out of memory");
    int rc = NF_EXIT_OK;
    if (cli->json) rc = nf_cli_print_json(cli, doc);
    else print_provenance(doc);
    json_decref(doc);
    return rc;
}
