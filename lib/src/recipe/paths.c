/* What a recipe may publish (docs/recipes.md, "What a recipe may read"; docs/security.md 7.1, F2): a recipe is
 * someone else's file, so the files it has copied byte for byte into the artifact -- its
 * resources -- must stay inside its own directory, a source the command line gave (--source) or
 * a directory the command line allows (--allow-path).  (Its checkpoints and imatrix files are
 * read wherever they are: the strict readers accept nothing else.)  The test is made on
 * the real path, every symbolic link resolved, so a link cannot lead out either; a path that does
 * not exist is judged in its lexically normalized absolute form (then the open that follows
 * reports it missing, as it always did).  Paths the command line names itself are not confined.
 * A check and the open after it are two system calls: a file system changed between them by
 * someone else is outside what this defends (docs/security.md 1.2). */
#define _XOPEN_SOURCE 700 /* realpath (XSI) */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/fail.h"
#include "recipe/recipe_internal.h"

char *nf_recipe_lexical_abs(const char *path)
{
    nf_buf in = {0};
    if (path[0] != '/') {
        char *cwd = getcwd(NULL, 0);
        if (!cwd) return NULL;
        bool ok = nf_buf_append(&in, cwd, strlen(cwd)) && nf_buf_putc(&in, '/');
        free(cwd);
        if (!ok) {
            nf_buf_free(&in);
            return NULL;
        }
    }
    if (!nf_buf_append(&in, path, strlen(path)) || !nf_buf_putc(&in, '\0')) {
        nf_buf_free(&in);
        return NULL;
    }
    /* Components one by one into out: "" and "." vanish, ".." drops the last one (never above
     * the root). */
    size_t n = strlen(in.data);
    char *out = malloc(n + 2);
    if (!out) {
        nf_buf_free(&in);
        return NULL;
    }
    size_t len = 0;
    for (const char *c = in.data; *c;) {
        while (*c == '/') c++;
        const char *e = c;
        while (*e && *e != '/') e++;
        size_t k = (size_t)(e - c);
        if (k == 0 || (k == 1 && c[0] == '.')) {
        } else if (k == 2 && c[0] == '.' && c[1] == '.') {
            while (len > 0 && out[len - 1] != '/') len--;
            if (len > 0) len--;
        } else {
            out[len++] = '/';
            memcpy(out + len, c, k);
            len += k;
        }
        c = e;
    }
    if (len == 0) out[len++] = '/';
    out[len] = '\0';
    nf_buf_free(&in);
    return out;
}

nf_status nf_recipe_add_root(recipe_impl *impl, const char *path, const char *why, bool must_exist, nf_error *err)
{
    char *real = realpath(path, NULL);
    if (!real && must_exist) return nf_error_errno(err, errno, "--allow-path %s", path);
    char *lexical = nf_recipe_lexical_abs(path);
    recipe_root *grown = lexical ? realloc(impl->roots, (impl->nroots + 1) * sizeof *grown) : NULL;
    if (!grown) {
        free(real);
        free(lexical);
        return nf_common_nomem(err);
    }
    impl->roots = grown;
    impl->roots[impl->nroots++] = (recipe_root){real, lexical, why};
    return NF_OK;
}

void nf_recipe_free_roots(recipe_impl *impl)
{
    for (size_t i = 0; i < impl->nroots; i++) {
        free(impl->roots[i].real);
        free(impl->roots[i].lexical);
    }
    free(impl->roots);
    impl->roots = NULL;
    impl->nroots = 0;
}

/* Is p the root or below it ("/" holds everything; "/a" holds "/a/b", not "/ab")? */
static bool under(const char *p, const char *root)
{
    if (!root) return false;
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/') return true;
    return strncmp(p, root, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

nf_status nf_recipe_allow_path(nf_recipe *r, const char *path, nf_error *err)
{
    if (!r || !path || !path[0]) return nf_error_set(err, NF_ERR_USAGE, "--allow-path: missing path");
    nf_status st = nf_recipe_add_root((recipe_impl *)r, path, "--allow-path", true, err);
    if (st == NF_ERR_IO) err->status = st = NF_ERR_USAGE; /* a command-line mistake, not a system error */
    if (st == NF_OK) nf_recipe_note((recipe_impl *)r, &((recipe_impl *)r)->allow_paths, json_string(path));
    return st;
}

nf_status nf_recipe_check_path(const nf_recipe *r, const char *path, const char *key, nf_recipe_pos pos,
                               const char *written, nf_error *err)
{
    if (!r || !path) return nf_error_set(err, NF_ERR_USAGE, "nf_recipe_check_path: missing argument");
    const recipe_impl *impl = (const recipe_impl *)r;
    char *real = realpath(path, NULL);
    char *target = real ? real : nf_recipe_lexical_abs(path);
    if (!target) return nf_common_nomem_in(err, path);
    bool inside = false;
    for (size_t i = 0; i < impl->nroots && !inside; i++) {
        const recipe_root *root = &impl->roots[i];
        /* an existing path by its real path; a missing one as written, against either form */
        inside = real ? under(real, root->real) : under(target, root->real) || under(target, root->lexical);
    }
    if (inside) {
        free(target);
        return NF_OK;
    }
    /* what is allowed, briefly: the recipe's directory and how many command-line places */
    char allowed[512] = "";
    size_t ncli = 0;
    const char *dir = NULL;
    for (size_t i = 0; i < impl->nroots; i++) {
        const recipe_root *root = &impl->roots[i];
        if (strcmp(root->why, "the recipe's directory") == 0) dir = root->real ? root->real : root->lexical;
        else ncli++;
    }
    char more[96] = "";
    if (ncli) snprintf(more, sizeof more, ", and %zu path%s the command line gave", ncli, ncli == 1 ? "" : "s");
    if (dir) snprintf(allowed, sizeof allowed, "its own directory %s%s", dir, more);
    else snprintf(allowed, sizeof allowed, "no directory of its own (read from standard input)%s", more);
    char where[128] = "";
    if (pos.line > 0) snprintf(where, sizeof where, ":%d:%d", pos.line, pos.col);
    /* "resolves to" only when it says something: a link or a ".." on the way */
    char *as_written = nf_recipe_lexical_abs(path);
    bool same = as_written && strcmp(as_written, target) == 0 && !strstr(written ? written : path, "..");
    free(as_written);
    char resolved[4200] = "";
    if (!same) snprintf(resolved, sizeof resolved, " resolves to %s,", target);
    nf_status st = nf_error_set(err, NF_ERR_INVALID,
                                "%s%s: %s: '%s'%s outside what the recipe may read (%s); the command line allows more "
                                "with --allow-path DIR (docs/recipes.md, \"What a recipe may read\")",
                                r->path ? r->path : "<recipe>", where, key, written ? written : path,
                                same ? " is" : resolved, allowed);
    free(target);
    return st;
}
