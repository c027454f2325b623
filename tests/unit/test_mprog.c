/* Method programs' pieces below the protocol (lib/src/mprog, docs/method-programs.md): SHA-256
 * against FIPS 180-4's examples, COMMAND's word splitting, the answer sizes, the name rule, and a
 * running program driven through the pipes -- cat echoing 3 MiB while it is still being sent
 * (neither side may block the other), a program that exits, one that hangs past its timeout. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <ninfer/ninfer.h>

#include "common/hex.h"
#include "common/sha256.h"
#include "mprog/mprog_module.h"

static void sha_hex(const void *data, size_t n, size_t piece, char out[65])
{
    nf_sha256 h;
    nf_sha256_init(&h);
    const uint8_t *p = data;
    for (size_t i = 0; i < n; i += piece) nf_sha256_update(&h, p + i, n - i < piece ? n - i : piece);
    uint8_t d[32];
    nf_sha256_final(&h, d);
    nf_hex_bytes(d, 32, out);
}

Test(sha256, fips_examples)
{
    char hex[65];
    sha_hex("", 0, 1, hex);
    cr_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha_hex("abc", 3, 3, hex);
    cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 448 bits: a second block */
    sha_hex(two, strlen(two), 7, hex);
    cr_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char *million = malloc(1000000);
    cr_assert_not_null(million);
    memset(million, 'a', 1000000);
    for (size_t piece = 1; piece <= 1000000; piece *= 1000) { /* any cut of the input, the same digest */
        sha_hex(million, 1000000, piece == 1 ? 63 : piece, hex);
        cr_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    }
    free(million);
}

/* Every length from 0 to 130 (each padding case around the 56- and 64-byte boundaries), whole or
 * a byte at a time: the same digest. */
Test(sha256, cuts_do_not_matter)
{
    uint8_t buf[130];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)(i * 37 + 1);
    for (size_t n = 0; n <= sizeof buf; n++) {
        char a[65], b[65];
        sha_hex(buf, n, n ? n : 1, a);
        sha_hex(buf, n, 1, b);
        cr_assert_str_eq(a, b, "length %zu", n);
    }
}

static void expect_words(const char *command, const char *const *want, size_t n)
{
    char **argv = NULL;
    size_t argc = 0;
    nf_error err = {0};
    cr_assert_eq(nf_mprog_split(command, &argv, &argc, &err), NF_OK, "%s: %s", command, err.message);
    cr_assert_eq(argc, n, "%s: %zu words", command, argc);
    for (size_t i = 0; i < n; i++) cr_assert_str_eq(argv[i], want[i], "%s: word %zu", command, i);
    cr_assert_null(argv[n]);
    for (size_t i = 0; i < argc; i++) free(argv[i]);
    free(argv);
}

Test(mprog, split)
{
    expect_words("python3 m.py", (const char *[]){"python3", "m.py"}, 2);
    expect_words("  a\t b\n", (const char *[]){"a", "b"}, 2);
    expect_words("a 'b c' \"d e\"", (const char *[]){"a", "b c", "d e"}, 3);
    expect_words("x'y z'w", (const char *[]){"xy zw"}, 1);
    expect_words("a\\ b", (const char *[]){"a b"}, 1);
    expect_words("\"q\\\"\\\\ \\n\"", (const char *[]){"q\"\\ \\n"}, 1);
    expect_words("'\\' \"\"", (const char *[]){"\\", ""}, 2);
    expect_words("$HOME *.py >out |", (const char *[]){"$HOME", "*.py", ">out", "|"}, 4); /* nothing is special */
    char **argv = NULL;
    size_t argc = 0;
    nf_error err = {0};
    cr_assert_eq(nf_mprog_split("a 'b", &argv, &argc, &err), NF_ERR_USAGE);
    cr_assert(strstr(err.message, "unterminated ' quote"), "%s", err.message);
    cr_assert_eq(nf_mprog_split("a \"b", &argv, &argc, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_mprog_split("  ", &argv, &argc, &err), NF_ERR_USAGE);
    cr_assert(strstr(err.message, "no command"), "%s", err.message);
    cr_assert_null(argv);
}

Test(mprog, names)
{
    nf_error err = {0};
    cr_assert_eq(nf_method_program_check_name("my_gptq-2.v1", &err), NF_OK);
    cr_assert_eq(nf_method_program_check_name("", &err), NF_ERR_USAGE);
    cr_assert_eq(nf_method_program_check_name("a/b", &err), NF_ERR_USAGE);
    cr_assert(strstr(err.message, "byte 0x2f at offset 1"), "%s", err.message);
    cr_assert_eq(nf_method_program_check_name("grouped_absmax", &err), NF_ERR_USAGE);
    cr_assert_eq(nf_method_program_check_name("budget", &err), NF_ERR_USAGE);
}

Test(mprog, words_bytes)
{
    bool ok;
    cr_assert_eq(nf_mprog_words_bytes(nf_format_lookup("q4_g64_fp16"), 3, 200, &ok), 3 * 200 + 3 * 4 * 2);
    cr_assert(ok);
    cr_assert_eq(nf_mprog_words_bytes(nf_format_lookup("q8_g32_fp16"), 2, 64, &ok), 2 * 64 + 2 * 2 * 2);
    cr_assert_eq(nf_mprog_words_bytes(nf_format_lookup("fp8_e4m3fn_row_bf16"), 5, 64, &ok), 5 * 64 + 5 * 2);
    cr_assert_eq(nf_mprog_words_bytes(nf_format_lookup("nvfp4"), 128, 64, &ok), 128 * 64 + 128 * 4);
    cr_assert_eq(nf_mprog_words_bytes(nf_format_lookup("gguf_q4_k"), 2, 512, &ok), 2 * 2 * 144);
    cr_assert_eq(nf_mprog_words_bytes(nf_format_lookup("bf16"), 2, 3, &ok), 12);
    cr_assert_eq(nf_mprog_words_bytes(nf_format_lookup("fp32"), 2, 3, &ok), 24);
    nf_mprog_words_bytes(nf_format_lookup("q4_g64_fp16"), UINT64_MAX / 2, 1 << 20, &ok);
    cr_assert(!ok);
}

static nf_mprog_spec spec_of(const char *command, unsigned timeout)
{
    nf_method_program m = {"t", command, timeout};
    nf_mprog_spec s;
    nf_error err = {0};
    cr_assert_eq(nf_mprog_spec_init(&s, &m, &err), NF_OK, "%s", err.message);
    return s;
}

Test(mprog, spec)
{
    nf_mprog_spec s = spec_of("sh -c 'exit 0'", 0);
    cr_assert_eq(s.argc, 3);
    cr_assert_eq(s.exe[0], '/'); /* found in PATH, resolved */
    cr_assert_eq(s.nfiles, 1);
    cr_assert_eq(s.timeout_ms, NF_METHOD_PROGRAM_TIMEOUT * 1000u);
    cr_assert_eq(strlen(s.digest), 64);
    nf_mprog_spec t = spec_of("sh -c 'exit 1'", 0); /* other words: another digest */
    cr_assert_str_neq(s.digest, t.digest);
    nf_mprog_spec_free(&s);
    nf_mprog_spec_free(&t);
    nf_method_program m = {"t", "no-such-program-xyz a", 0};
    nf_error err = {0};
    cr_assert_eq(nf_mprog_spec_init(&s, &m, &err), NF_ERR_USAGE);
    cr_assert(strstr(err.message, "'no-such-program-xyz' is not an executable file in PATH"), "%s", err.message);
    nf_mprog_spec_free(&s);
}

/* cat echoes 3 MiB: the answer comes back while the request is still being written, which only a
 * loop that reads and writes together survives (the pipes hold far less). */
Test(mprog, exchange_both_ways)
{
    nf_mprog_spec s = spec_of("cat", 20);
    nf_mprog_proc *p = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_mprog_proc_start(&s, NULL, NULL, &p, &err), NF_OK, "%s", err.message);
    const size_t n = (size_t)3 << 20;
    uint8_t *out = malloc(n), *in = malloc(n);
    cr_assert(out && in);
    for (size_t i = 0; i < n; i++) out[i] = (uint8_t)(i * 7 + (i >> 13));
    nf_mprog_proc_arm(p);
    cr_assert_eq(nf_mprog_proc_exchange(p, out, n, in, n, "the echo", &err), NF_OK, "%s", err.message);
    cr_assert_eq(memcmp(in, out, n), 0);
    cr_assert_eq(nf_mprog_proc_finish(p, &err), NF_OK, "%s", err.message); /* cat exits 0 at EOF */
    free(out);
    free(in);
    nf_mprog_spec_free(&s);
}

Test(mprog, exits_early)
{
    nf_mprog_spec s = spec_of("sh -c 'exit 7'", 20);
    nf_mprog_proc *p = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_mprog_proc_start(&s, NULL, NULL, &p, &err), NF_OK, "%s", err.message);
    uint8_t b[16];
    nf_mprog_proc_arm(p);
    cr_assert_eq(nf_mprog_proc_exchange(p, NULL, 0, b, sizeof b, "the answer", &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "closed its standard output before the answer: it exited with status 7"), "%s",
              err.message);
    nf_mprog_proc_kill(p);
    nf_mprog_spec_free(&s);
}

Test(mprog, timeout_then_killed)
{
    nf_mprog_spec s = spec_of("sleep 30", 1);
    nf_mprog_proc *p = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_mprog_proc_start(&s, NULL, NULL, &p, &err), NF_OK, "%s", err.message);
    const long pid = nf_mprog_proc_pid(p);
    uint8_t b[16];
    nf_mprog_proc_arm(p);
    cr_assert_eq(nf_mprog_proc_exchange(p, NULL, 0, b, sizeof b, "the answer", &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "the answer did not come within 1 s"), "%s", err.message);
    nf_mprog_proc_kill(p);
    cr_assert_eq(kill((pid_t)pid, 0), -1, "process %ld still there after kill", pid); /* reaped: gone */
    nf_mprog_spec_free(&s);
}

static bool stop_now(void *ctx)
{
    (void)ctx;
    return true;
}

Test(mprog, stop_interrupts_a_wait)
{
    nf_mprog_spec s = spec_of("sleep 30", 60);
    nf_mprog_proc *p = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_mprog_proc_start(&s, stop_now, NULL, &p, &err), NF_OK, "%s", err.message);
    uint8_t b[16];
    nf_mprog_proc_arm(p);
    cr_assert_eq(nf_mprog_proc_exchange(p, NULL, 0, b, sizeof b, "the answer", &err), NF_ERR_IO);
    cr_assert_str_eq(err.message, "interrupted");
    nf_mprog_proc_kill(p);
    nf_mprog_spec_free(&s);
}
