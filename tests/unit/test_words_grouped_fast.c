/* The whole-row fast paths of grouped words (layout/words.c check_grouped, layout/row_split.c
 * encode): a clean row is accepted and encoded exactly as the lane-by-lane path does (checked by
 * decoding it back), and every single bad word is still found and named by row and column or
 * group, whether it sits in a full group or in the partial last one. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/test_rng.h"

TEST_RNG(0x9E3779B97F4A7C15ull)

typedef struct case_words {
    nf_geometry g;
    nf_words w;
} case_words;

/* A random legal scale word of f: finite binary16, not the -0 spelling a format refuses. */
static uint16_t legal_scale(const nf_format *f)
{
    for (;;) {
        uint16_t s = (uint16_t)rng32();
        if (nf_grouped_scale_valid(f, s) && !nf_grouped_scale_requires_zero_codes(f, s)) return s;
    }
}

static void make_words(const nf_format *f, uint64_t rows, uint64_t cols, case_words *c)
{
    uint64_t shape[2] = {rows, cols};
    nf_error err;
    cr_assert_eq(nf_geometry_init(&c->g, nf_layout_default_for(f), f, 2, shape, 1, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_words_alloc(&c->w, &c->g, rows, &err), NF_OK, "%s", err.message);
    int span = f->code_max - f->code_min + 1;
    for (uint64_t i = 0; i < rows * cols; i++) c->w.codes[i] = (int8_t)(f->code_min + (int)(rng32() % (uint32_t)span));
    for (uint64_t i = 0; i < rows * c->g.logical_groups; i++) c->w.scales[i] = legal_scale(f);
    /* one group of every row under the +0 scale, with zero codes, where the format has that rule */
    if (nf_grouped_scale_requires_zero_codes(f, 0x0000u)) {
        for (uint64_t r = 0; r < rows; r++) {
            uint64_t gi = r % c->g.logical_groups, c0 = gi * f->group_size;
            uint64_t c1 = c0 + f->group_size < cols ? c0 + f->group_size : cols;
            c->w.scales[r * c->g.logical_groups + gi] = 0x0000u;
            memset(c->w.codes + r * cols + c0, 0, (size_t)(c1 - c0));
        }
    }
}

static const uint64_t col_counts[] = {256, 64 * 5 + 17, 128 * 3 + 1, 1000};

Test(words_grouped_fast, clean_rows_encode_exactly)
{
    unsigned formats = 0;
    for (size_t fi = 0; fi < nf_format_count(); fi++) {
        const nf_format *f = nf_format_at(fi);
        if (f->category != NF_CAT_GROUPED) continue;
        formats++;
        for (size_t ci = 0; ci < sizeof col_counts / sizeof col_counts[0]; ci++) {
            case_words c;
            make_words(f, 7, col_counts[ci], &c);
            nf_error err;
            cr_assert_eq(nf_words_check(&c.g, &c.w, 0, &err), NF_OK, "%s: %s", f->name, err.message);
            uint8_t *out = malloc((size_t)c.g.bytes);
            cr_assert(out);
            cr_assert_eq(nf_layout_encode(&c.g, &c.w, out, &err), NF_OK, "%s: %s", f->name, err.message);
            nf_memory_source mem;
            nf_byte_reader rd;
            nf_byte_reader_memory(&rd, &mem, out, c.g.bytes);
            nf_words back;
            cr_assert_eq(nf_words_alloc(&back, &c.g, c.g.rows, &err), NF_OK);
            cr_assert_eq(nf_layout_decode_rows(&c.g, &rd, 0, c.g.rows, &back, &err), NF_OK, "%s", err.message);
            cr_assert_eq(memcmp(back.codes, c.w.codes, (size_t)(c.g.rows * c.g.cols)), 0, "%s: codes differ", f->name);
            cr_assert_eq(memcmp(back.scales, c.w.scales, (size_t)(c.g.rows * c.g.logical_groups) * 2), 0,
                         "%s: scales differ", f->name);
            /* and the encoded object passes the word checks of verify */
            nf_words_free(&back);
            free(out);
            nf_words_free(&c.w);
        }
    }
    cr_assert_geq(formats, 5, "only %u grouped formats", formats);
}

/* Expect nf_words_check to refuse c with a message holding `want`. */
static void expect_refused(const case_words *c, const char *want, const char *what)
{
    nf_error err;
    cr_assert_eq(nf_words_check(&c->g, &c->w, 0, &err), NF_ERR_INVALID, "%s: %s accepted", c->g.format->name, what);
    cr_assert(strstr(err.message, want), "%s: %s: message '%s' lacks '%s'", c->g.format->name, what, err.message, want);
}

Test(words_grouped_fast, every_single_bad_word_is_named)
{
    unsigned checked = 0;
    for (size_t fi = 0; fi < nf_format_count(); fi++) {
        const nf_format *f = nf_format_at(fi);
        if (f->category != NF_CAT_GROUPED) continue;
        for (size_t ci = 0; ci < sizeof col_counts / sizeof col_counts[0]; ci++) {
            for (unsigned trial = 0; trial < 40; trial++) {
                case_words c;
                make_words(f, 5, col_counts[ci], &c);
                uint64_t k = c.g.cols, lg = c.g.logical_groups;
                uint64_t r = rng32() % 5, col = rng32() % k, gi = col / f->group_size;
                /* trial 0 and 1: the last column (inside a partial group when k is not a multiple) */
                if (trial < 2) col = k - 1, gi = col / f->group_size;
                char want[96];
                int kind = (int)(trial % 3);
                if (kind == 0 && (f->code_min > INT8_MIN || f->code_max < INT8_MAX)) {
                    int bad = f->code_min > INT8_MIN ? f->code_min - 1 : f->code_max + 1;
                    c.w.codes[r * k + col] = (int8_t)bad;
                    /* the group's scale must be an ordinary one for the code rule to be reached */
                    c.w.scales[r * lg + gi] = legal_scale(f);
                    snprintf(want, sizeof want, "row %" PRIu64 " col %" PRIu64 ": code %d", r, col, bad);
                    expect_refused(&c, want, "an out-of-range code");
                } else if (kind == 1) {
                    c.w.scales[r * lg + gi] = 0x7C00u; /* +inf: never a valid scale */
                    snprintf(want, sizeof want, "row %" PRIu64 " group %" PRIu64 ": scale 0x7c00", r, gi);
                    expect_refused(&c, want, "an infinite scale");
                } else if (nf_grouped_scale_requires_zero_codes(f, 0x0000u)) {
                    c.w.scales[r * lg + gi] = 0x0000u;
                    uint64_t c0 = gi * f->group_size, c1 = c0 + f->group_size < k ? c0 + f->group_size : k;
                    memset(c.w.codes + r * k + c0, 0, (size_t)(c1 - c0));
                    c.w.codes[r * k + col] = 1;
                    snprintf(want, sizeof want, "row %" PRIu64 " col %" PRIu64 ": code 1 under the +0 scale", r, col);
                    expect_refused(&c, want, "a nonzero code under a +0 scale");
                } else {
                    nf_words_free(&c.w);
                    continue;
                }
                checked++;
                nf_words_free(&c.w);
            }
        }
    }
    cr_log_info("%u single bad words refused with their position", checked);
    cr_assert_geq(checked, 500u);
}
