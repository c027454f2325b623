/* Recipe files: reading from disk and stdin, .zst recipes, paths relative to the recipe's
 * directory, SOURCE/file resources against a source that is a file or a directory, --source
 * overrides, and the I/O errors. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <ninfer/ninfer.h>

#include "common/io.h"

static char tmp[256];

static void make_tmp(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/nf_recipe_test.XXXXXX");
    cr_assert_not_null(mkdtemp(tmp));
}

static void remove_tree(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static char *path_in(const char *name)
{
    static char buf[4][512];
    static int k;
    char *p = buf[k++ % 4];
    snprintf(p, 512, "%s/%s", tmp, name);
    return p;
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

static const char recipe_text[] = "recipe: 1\n"
                                  "sources:\n"
                                  "  base: ./ckpt\n"
                                  "  gg: model.gguf\n"
                                  "  abs: /nonexistent/x\n"
                                  "components:\n"
                                  "  text:\n"
                                  "    config: {from: base}\n"
                                  "    resources:\n"
                                  "      tokenizer.json: base/tokenizer.json\n"
                                  "      vocab: gg/vocab.txt\n"
                                  "      local: ./extra.json\n"
                                  "rules:\n"
                                  "  - {match: \"*\", format: fp32}\n";

static void check_loaded(const nf_recipe *r, const char *dir)
{
    char want[512];
    cr_assert_eq(r->nsources, 3);
    snprintf(want, sizeof want, "%s/ckpt", dir);
    cr_assert_str_eq(r->sources[0].path, want);
    snprintf(want, sizeof want, "%s/model.gguf", dir);
    cr_assert_str_eq(r->sources[1].path, want);
    cr_assert_str_eq(r->sources[2].path, "/nonexistent/x");
    const nf_recipe_resource *res = r->components[0].resources;
    /* a directory source: files inside it */
    snprintf(want, sizeof want, "%s/ckpt/tokenizer.json", dir);
    cr_assert_str_eq(res[0].path, want);
    /* a file source: files beside it */
    snprintf(want, sizeof want, "%s/vocab.txt", dir);
    cr_assert_str_eq(res[1].path, want);
    cr_assert_str_eq(res[1].source, "gg");
    snprintf(want, sizeof want, "%s/extra.json", dir);
    cr_assert_str_eq(res[2].path, want);
    cr_assert_null(res[2].source);
    cr_assert_str_eq(r->rules[0].format, "fp32");
}

static void make_layout(void)
{
    make_tmp();
    cr_assert_eq(mkdir(path_in("ckpt"), 0700), 0);
    write_file(path_in("model.gguf"), "GGUF", 4);
}

Test(recipe_load, relative_paths_against_the_recipe_directory)
{
    make_layout();
    write_file(path_in("recipe.yaml"), recipe_text, strlen(recipe_text));
    nf_recipe *r = NULL;
    nf_error e = {0};
    cr_assert_eq(nf_recipe_load(path_in("recipe.yaml"), &r, &e), NF_OK, "%s", e.message);
    cr_assert_str_eq(r->path, path_in("recipe.yaml"));
    cr_assert_str_eq(r->dir, tmp);
    check_loaded(r, tmp);
    nf_recipe_free(r);
    remove_tree(tmp);
}

Test(recipe_load, relative_recipe_path)
{
    make_layout();
    write_file(path_in("recipe.yaml"), recipe_text, strlen(recipe_text));
    cr_assert_eq(chdir("/tmp"), 0);
    const char *rel = tmp + strlen("/tmp/");
    char rpath[512];
    snprintf(rpath, sizeof rpath, "%s/recipe.yaml", rel);
    nf_recipe *r = NULL;
    nf_error e = {0};
    cr_assert_eq(nf_recipe_load(rpath, &r, &e), NF_OK, "%s", e.message);
    cr_assert_str_eq(r->dir, rel);
    check_loaded(r, rel);
    nf_recipe_free(r);
    /* a recipe in the current directory: paths stay relative to it */
    cr_assert_eq(chdir(tmp), 0);
    cr_assert_eq(nf_recipe_load("recipe.yaml", &r, &e), NF_OK, "%s", e.message);
    cr_assert_str_eq(r->dir, ".");
    cr_assert_str_eq(r->sources[0].path, "./ckpt");
    cr_assert_str_eq(r->components[0].resources[0].path, "./ckpt/tokenizer.json");
    cr_assert_str_eq(r->components[0].resources[1].path, "vocab.txt");
    nf_recipe_free(r);
    cr_assert_eq(chdir("/"), 0);
    remove_tree(tmp);
}

Test(recipe_load, zstd_recipe)
{
    make_layout();
    size_t bound = ZSTD_compressBound(sizeof recipe_text);
    void *z = malloc(bound);
    size_t zlen = ZSTD_compress(z, bound, recipe_text, strlen(recipe_text), 3);
    cr_assert_not(ZSTD_isError(zlen));
    write_file(path_in("recipe.yaml.zst"), z, zlen);
    nf_recipe *r = NULL;
    nf_error e = {0};
    cr_assert_eq(nf_recipe_load(path_in("recipe.yaml.zst"), &r, &e), NF_OK, "%s", e.message);
    cr_assert_str_eq(r->path, path_in("recipe.yaml.zst"));
    check_loaded(r, tmp);
    nf_recipe_free(r);

    /* truncated stream */
    write_file(path_in("cut.yaml.zst"), z, zlen - 3);
    cr_assert_eq(nf_recipe_load(path_in("cut.yaml.zst"), &r, &e), NF_ERR_INVALID);
    cr_assert(strstr(e.message, "cut.yaml.zst: truncated zstd stream"), "%s", e.message);
    /* not zstd at all */
    write_file(path_in("plain.yaml.zst"), recipe_text, strlen(recipe_text));
    cr_assert_eq(nf_recipe_load(path_in("plain.yaml.zst"), &r, &e), NF_ERR_INVALID);
    cr_assert(strstr(e.message, "plain.yaml.zst: not a valid zstd stream"), "%s", e.message);
    free(z);

    /* errors inside a compressed recipe name the .zst file with positions in the text */
    const char bad[] = "recipe: 1\nbogus: 1\n";
    bound = ZSTD_compressBound(sizeof bad);
    z = malloc(bound);
    zlen = ZSTD_compress(z, bound, bad, strlen(bad), 3);
    write_file(path_in("bad.yaml.zst"), z, zlen);
    cr_assert_eq(nf_recipe_load(path_in("bad.yaml.zst"), &r, &e), NF_ERR_INVALID);
    char want[600];
    snprintf(want, sizeof want, "%s:2:1: unknown top-level key 'bogus'", path_in("bad.yaml.zst"));
    cr_assert(!strncmp(e.message, want, strlen(want)), "%s", e.message);
    free(z);
    remove_tree(tmp);
}

Test(recipe_load, zstd_bomb_is_capped)
{
    make_tmp();
    size_t n = NF_RECIPE_MAX_BYTES + 4096u;
    char *text = malloc(n);
    memset(text, '#', n);
    text[n - 1] = '\n';
    size_t bound = ZSTD_compressBound(n);
    void *z = malloc(bound);
    size_t zlen = ZSTD_compress(z, bound, text, n, 1);
    cr_assert_not(ZSTD_isError(zlen));
    cr_assert_lt(zlen, 100000u);
    write_file(path_in("bomb.yaml.zst"), z, zlen);
    nf_recipe *r = NULL;
    nf_error e = {0};
    cr_assert_eq(nf_recipe_load(path_in("bomb.yaml.zst"), &r, &e), NF_ERR_INVALID);
    cr_assert(strstr(e.message, "larger than the 16777216-byte cap"), "%s", e.message);
    /* the same uncompressed */
    write_file(path_in("big.yaml"), text, n);
    cr_assert_eq(nf_recipe_load(path_in("big.yaml"), &r, &e), NF_ERR_INVALID);
    cr_assert(strstr(e.message, "big.yaml: recipe larger than the 16777216-byte cap"), "%s", e.message);
    free(text);
    free(z);
    remove_tree(tmp);
}

Test(recipe_load, stdin)
{
    make_layout();
    write_file(path_in("recipe.yaml"), recipe_text, strlen(recipe_text));
    int fd = open(path_in("recipe.yaml"), O_RDONLY);
    cr_assert_geq(fd, 0);
    cr_assert_eq(dup2(fd, STDIN_FILENO), STDIN_FILENO);
    close(fd);
    nf_recipe *r = NULL;
    nf_error e = {0};
    cr_assert_eq(nf_recipe_load("-", &r, &e), NF_OK, "%s", e.message);
    cr_assert_str_eq(r->path, "<stdin>");
    cr_assert_str_eq(r->dir, ".");
    cr_assert_str_eq(r->sources[0].path, "./ckpt");
    nf_recipe_free(r);

    const char bad[] = "recipe: 1\noutput: {name: [x]}\n";
    write_file(path_in("bad.yaml"), bad, strlen(bad));
    fd = open(path_in("bad.yaml"), O_RDONLY);
    cr_assert_eq(dup2(fd, STDIN_FILENO), STDIN_FILENO);
    close(fd);
    cr_assert_eq(nf_recipe_load("-", &r, &e), NF_ERR_INVALID);
    cr_assert(!strncmp(e.message, "<stdin>:2:16: output.name: expected a string", 44), "%s", e.message);
    remove_tree(tmp);
}

Test(recipe_load, io_errors_name_the_path)
{
    make_tmp();
    nf_recipe *r = NULL;
    nf_error e = {0};
    cr_assert_eq(nf_recipe_load(path_in("missing.yaml"), &r, &e), NF_ERR_IO);
    cr_assert_null(r);
    char want[600];
    snprintf(want, sizeof want, "cannot read %s: %s", path_in("missing.yaml"), strerror(ENOENT));
    cr_assert_str_eq(e.message, want);
    /* a directory */
    cr_assert_eq(nf_recipe_load(tmp, &r, &e), NF_ERR_IO);
    cr_assert(strstr(e.message, tmp), "%s", e.message);
    /* an unreadable file (root reads anything: only when not root) */
    if (geteuid() != 0) {
        write_file(path_in("locked.yaml"), "recipe: 1\n", 10);
        cr_assert_eq(chmod(path_in("locked.yaml"), 0), 0);
        cr_assert_eq(nf_recipe_load(path_in("locked.yaml"), &r, &e), NF_ERR_IO);
        cr_assert(strstr(e.message, "locked.yaml"), "%s", e.message);
    }
    remove_tree(tmp);
}

Test(recipe_load, errors_carry_the_file_path)
{
    make_tmp();
    const char bad[] = "recipe: 1\nrules:\n  - match: a\n    skip: maybe\n";
    write_file(path_in("r.yaml"), bad, strlen(bad));
    nf_recipe *r = NULL;
    nf_error e = {0};
    cr_assert_eq(nf_recipe_load(path_in("r.yaml"), &r, &e), NF_ERR_INVALID);
    char want[600];
    snprintf(want, sizeof want, "%s:4:11: rules[0].skip: expected true or false, got the string 'maybe'",
             path_in("r.yaml"));
    cr_assert_str_eq(e.message, want);
    remove_tree(tmp);
}

Test(recipe_load, source_override_moves_resources)
{
    make_layout();
    write_file(path_in("recipe.yaml"), recipe_text, strlen(recipe_text));
    cr_assert_eq(mkdir(path_in("other"), 0700), 0);
    write_file(path_in("other/m.gguf"), "GGUF", 4);
    nf_recipe *r = NULL;
    nf_error e = {0};
    cr_assert_eq(nf_recipe_load(path_in("recipe.yaml"), &r, &e), NF_OK, "%s", e.message);
    /* base becomes a file: its resources now live beside it */
    cr_assert_eq(nf_recipe_set_source(r, "base", path_in("other/m.gguf"), &e), NF_OK, "%s", e.message);
    cr_assert_str_eq(nf_recipe_find_source(r, "base")->path, path_in("other/m.gguf"));
    cr_assert_str_eq(r->components[0].resources[0].path, path_in("other/tokenizer.json"));
    /* gg becomes a directory */
    cr_assert_eq(nf_recipe_set_source(r, "gg", path_in("other"), &e), NF_OK, "%s", e.message);
    cr_assert_str_eq(r->components[0].resources[1].path, path_in("other/vocab.txt"));
    /* the plain path does not move */
    cr_assert_str_eq(r->components[0].resources[2].path, path_in("extra.json"));
    nf_recipe_free(r);
    remove_tree(tmp);
}

Test(recipe_load, pipe_path_is_read_as_a_stream)
{
    /* "-r <(generate)" hands over /dev/fd/N: a pipe, which cannot be pread */
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    const char text[] = "recipe: 1\nsources: {base: /m}\n";
    cr_assert_eq(write(fds[1], text, strlen(text)), (ssize_t)strlen(text));
    close(fds[1]);
    char path[64];
    snprintf(path, sizeof path, "/dev/fd/%d", fds[0]);
    nf_recipe *r = NULL;
    nf_error e = {0};
    cr_assert_eq(nf_recipe_load(path, &r, &e), NF_OK, "%s", e.message);
    cr_assert_str_eq(r->sources[0].path, "/m");
    cr_assert_str_eq(r->dir, "/dev/fd");
    nf_recipe_free(r);
    close(fds[0]);
}

Test(recipe_load, injected_io_faults)
{
    make_tmp();
    write_file(path_in("r.yaml"), "recipe: 1\n", 10);
    nf_recipe *r = NULL;
    nf_error e = {0};
    nf_io_fault_arm(NF_IO_OPEN, 1, EACCES);
    cr_assert_eq(nf_recipe_load(path_in("r.yaml"), &r, &e), NF_ERR_IO);
    cr_assert(strstr(e.message, "cannot read ") && strstr(e.message, "r.yaml: Permission denied"), "%s", e.message);
    nf_io_fault_arm(NF_IO_READ, 1, EIO);
    cr_assert_eq(nf_recipe_load(path_in("r.yaml"), &r, &e), NF_ERR_IO);
    cr_assert(strstr(e.message, "r.yaml: Input/output error"), "%s", e.message);
    nf_io_fault_reset();
    cr_assert_eq(nf_recipe_load(path_in("r.yaml"), &r, &e), NF_OK, "%s", e.message);
    nf_recipe_free(r);
    remove_tree(tmp);
}
