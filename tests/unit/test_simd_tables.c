/* The one SIMD dispatch structure (common/cpu.h): for every module's kernels table and every
 * level, the selector returns a table whose entries are all set, the active table follows
 * nf_simd_force, and a level out of range falls back to scalar.  The bit-for-bit agreement of the
 * levels is the business of each module's own tests (test_stats, test_layout_simd, ...). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/cpu.h"
#include "dialect/simd/unpack_simd.h"
#include "format/ggml.h"
#include "layout/kernels.h"
#include "method/simd/absmax_simd.h"
#include "method/simd/fp8_simd.h"
#include "method/simd/nvfp4_simd.h"
#include "method/simd/ggml_iq2_simd.h"
#include "method/simd/ggml_simd.h"
#include "method/simd/search_simd.h"
#include "common/sha256.h"
#include "stats/stats.h"

/* The name a module's table of `level` carries: the level's where this build has kernels of it
 * (every module has them for every level of its machine: docs/portability.md, "Kernels on
 * aarch64"), else "scalar" (the other machine's levels). */
static const char *table_name(nf_simd_level level)
{
    if (nf_simd_rank(level) <= 0) return "scalar";
    return nf_simd_level_name(level);
}

/* Every function pointer of a table (all its members but the name) is set. */
#define ENTRY(t, field) cr_assert((t)->field != NULL, "%s: %s has no " #field, what, (t)->name)

static void check_level(nf_simd_level level)
{
    const char *what = nf_simd_level_name(level);

    const nf_dialect_unpack_kernels *up = nf_dialect_unpack_kernels_for(level);
    cr_assert(up != NULL);
    ENTRY(up, packed_run);
    ENTRY(up, nibble_run);
    ENTRY(up, e2m1_run);

    const nf_sha256_kernels *sh = nf_sha256_kernels_for(level);
    cr_assert(sh != NULL);
    ENTRY(sh, blocks);

    const nf_stats_kernels *st = nf_stats_kernels_for(level);
    cr_assert(st != NULL);
    ENTRY(st, row_f32);
    ENTRY(st, row_grouped);

    const nf_layout_kernels *ly = nf_layout_kernels_for(level);
    cr_assert(ly != NULL);
    ENTRY(ly, bf16_f32);
    ENTRY(ly, int32_f32);
    ENTRY(ly, grouped_row);
    ENTRY(ly, fp8_row);
    ENTRY(ly, nvfp4_table);
    ENTRY(ly, nvfp4_row);
    ENTRY(ly, rs_unpack_row);
    ENTRY(ly, nibbles);
    ENTRY(ly, rs_row_f32);
    ENTRY(ly, codes_within);
    ENTRY(ly, grouped_scales);
    ENTRY(ly, rs_pack_row);

    const nf_ggml_kernels *gg = nf_ggml_kernels_for(level);
    cr_assert(gg != NULL);
    ENTRY(gg, q2_k);
    ENTRY(gg, q3_k);
    ENTRY(gg, q4_k);
    ENTRY(gg, q5_k);
    ENTRY(gg, q6_k);

    const nf_absmax_kernels *ab = nf_absmax_kernels_for(level);
    cr_assert(ab != NULL);
    ENTRY(ab, row);

    const nf_gq_kernels *gq = nf_gq_kernels_for(level);
    cr_assert(gq != NULL);
    ENTRY(gq, fit_min);
    ENTRY(gq, fit_signed);
    ENTRY(gq, fit_q3);
    ENTRY(gq, iq4_scales);
    ENTRY(gq, requant);
    ENTRY(gq, plain_blocks);
    ENTRY(gq, sqrt_weights);
    ENTRY(gq, iq3_trials);
    ENTRY(gq, iq1s_split);
    ENTRY(gq, iq1m_split);
    ENTRY(gq, iq1_nearest);
    ENTRY(gq, codes_q2_0);
    ENTRY(gq, iq1_order);

    const nf_fp8_kernels *f8 = nf_fp8_kernels_for(level);
    cr_assert(f8 != NULL);
    ENTRY(f8, row);

    const nf_nvfp4_kernels *n4 = nf_nvfp4_kernels_for(level);
    cr_assert(n4 != NULL);
    ENTRY(n4, groups);
    ENTRY(n4, search);

    const nf_search_kernels *se = nf_search_kernels_for(level);
    cr_assert(se != NULL);
    ENTRY(se, batch);
    ENTRY(se, extreme);
    ENTRY(se, load);
    cr_assert(se->lanes > 0);

    const nf_iq2_kernels *i2 = nf_iq2_kernels_for(level);
    cr_assert(i2 != NULL);
    ENTRY(i2, trials);
    ENTRY(i2, nearest);
    ENTRY(i2, weights);
    ENTRY(i2, signs);

    /* each table names its level (scalar where the build lacks the level's kernels) */
    cr_assert_str_eq(st->name, table_name(level), "stats at %s", what);
    cr_assert_str_eq(f8->name, table_name(level), "fp8 at %s", what);
    cr_assert_str_eq(ab->name, table_name(level), "absmax at %s", what);
    cr_assert_str_eq(up->name, table_name(level), "dialect unpacking at %s", what);
    cr_assert_str_eq(n4->name, table_name(level), "nvfp4 at %s", what);
    cr_assert_str_eq(gg->name, table_name(level), "ggml dequantization at %s", what);
    cr_assert_str_eq(ly->name, table_name(level), "layout at %s", what);
    /* SHA-256's instructions are a feature of their own beside the level (common/sha256.h) */
    const char *sha = "scalar";
    if (nf_simd_has_sha() && NF_X86_KERNELS && (level == NF_SIMD_AVX2 || level == NF_SIMD_AVX512)) sha = "sha-ni";
    if (nf_simd_has_sha() && NF_ARM_KERNELS && level == NF_SIMD_NEON) sha = "armv8-sha2";
    cr_assert_str_eq(sh->name, sha, "sha256 at %s", what);
    cr_assert_str_eq(gq->name, table_name(level), "ggml_quantize searches at %s", what);
    cr_assert_str_eq(i2->name, table_name(level), "ggml_quantize IQ2 searches at %s", what);
    cr_assert_str_eq(se->name, table_name(level), "grouped_search at %s", what);
}

Test(simd_tables, every_level_complete)
{
    nf_simd_level before = nf_simd_active();
    for (int lv = 0; lv < NF_SIMD_LEVEL_COUNT; lv++) {
        nf_simd_level level = (nf_simd_level)lv;
        check_level(level);
        if (!nf_simd_supported(level)) continue;
        /* the active tables are those of the forced level */
        cr_assert_eq(nf_simd_force(level), level);
        cr_assert_eq(nf_dialect_unpack_kernels_active(), nf_dialect_unpack_kernels_for(level));
        cr_assert_eq(nf_stats_kernels_active(), nf_stats_kernels_for(level));
        cr_assert_eq(nf_layout_kernels_active(), nf_layout_kernels_for(level));
        cr_assert_eq(nf_ggml_kernels_active(), nf_ggml_kernels_for(level));
        cr_assert_eq(nf_absmax_kernels_active(), nf_absmax_kernels_for(level));
        cr_assert_eq(nf_fp8_kernels_active(), nf_fp8_kernels_for(level));
        cr_assert_eq(nf_nvfp4_kernels_active(), nf_nvfp4_kernels_for(level));
        cr_assert_eq(nf_search_kernels_active(), nf_search_kernels_for(level));
        cr_assert_eq(nf_gq_kernels_active(), nf_gq_kernels_for(level));
        cr_assert_eq(nf_sha256_kernels_active(), nf_sha256_kernels_for(level));
    }
    nf_simd_force(before);
}

Test(simd_tables, out_of_range_is_scalar)
{
    nf_simd_level bad = NF_SIMD_LEVEL_COUNT;
    cr_assert_eq(nf_stats_kernels_for(bad), &nf_stats_kernels_scalar);
    cr_assert_eq(nf_layout_kernels_for(bad), &nf_layout_kernels_scalar);
    cr_assert_eq(nf_ggml_kernels_for(bad), &nf_ggml_kernels_scalar);
    cr_assert_eq(nf_absmax_kernels_for(bad), &nf_absmax_kernels_scalar);
    cr_assert_eq(nf_fp8_kernels_for(bad), &nf_fp8_kernels_scalar);
    cr_assert_eq(nf_nvfp4_kernels_for(bad), &nf_nvfp4_kernels_scalar);
    cr_assert_eq(nf_search_kernels_for(bad), &nf_search_kernels_scalar);
    cr_assert_eq(nf_gq_kernels_for(bad), &nf_gq_kernels_scalar);
    cr_assert_eq(nf_sha256_kernels_for(bad), &nf_sha256_kernels_scalar);
    cr_assert_eq(nf_stats_kernels_for((nf_simd_level)-1), &nf_stats_kernels_scalar);
}
