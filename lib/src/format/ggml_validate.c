/* Non-finite scales of ggml blocks (ggml.h).  Every d and dmin field of the 18 gguf_* block
 * types is a binary16 (docs/formats.md 8.3); one that is NaN or infinite makes the block's
 * values NaN or infinite, which is how quantized checkpoints most often ship broken, and ggml's
 * own ggml_validate_row_data refuses such a block.  The import refuses them and ninfer-verify
 * reports them as invalid words (docs/formats.md 8.1).
 *
 * Where the fields are (ggml-common.h block structs; docs/formats.md 8): d at byte 0 of Q8_0, Q4_0, Q5_0,
 * Q2_0 and of every IQ type but IQ1_M; d and dmin at 0 and 2 of Q4_K and Q5_K, at 80 and 82 of
 * Q2_K; d at 108 of Q3_K and at 208 of Q6_K; IQ1_M's d is the top nibbles of its four scale
 * words at 48..55.  The sub-block scales are small integers and cannot be non-finite.
 *
 * Speed: verify scans words at several GB/s, so runs of blocks are first tested without a
 * branch, a field (or the d/dmin pair, one 32-bit load) at a time with a carry trick: for a
 * binary16 h, ((h & 0x7C00) + 0x0400) & 0x8000 is set exactly when the exponent is all ones
 * (infinity or NaN), and the two halves of a pair cannot carry into each other.  Only a run
 * where that finds something is scanned again block by block, for the exact block and field. */
#include "format/ggml.h"


typedef struct scale_layout {
    int off; /* d (and dmin at off + 2 when pair) */
    bool pair;
    bool iq1m; /* d gathered from the scale words at 48 */
} scale_layout;

static bool layout_of(const nf_format *fmt, scale_layout *l)
{
    if (!fmt || fmt->category != NF_CAT_GGUF) return false;
    *l = (scale_layout){0, false, false};
    switch (fmt->id) {
    case NF_FMT_GGUF_Q2_K:
        l->off = 80;
        l->pair = true;
        break;
    case NF_FMT_GGUF_Q4_K:
    case NF_FMT_GGUF_Q5_K: l->pair = true; break;
    case NF_FMT_GGUF_Q3_K: l->off = 108; break;
    case NF_FMT_GGUF_Q6_K: l->off = 208; break;
    case NF_FMT_GGUF_IQ1_M:
        l->iq1m = true;
        l->off = 48;
        break;
    default: break; /* d at 0 */
    }
    return true;
}

static inline uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

/* IQ1_M: h = nibble 3 of w0 | nibble 3 of w1 << 4 | ... (ggml's dequantize_row_iq1_m). */
static inline uint32_t iq1m_d(const uint8_t *b)
{
    return (le16(b + 48) >> 12) | (le16(b + 50) >> 12) << 4 | (le16(b + 52) >> 12) << 8 | (le16(b + 54) >> 12) << 12;
}

/* The scale field word(s) of one block: d in the low half, dmin (pair types) in the high one. */
static inline uint32_t scale_words(const scale_layout *l, const uint8_t *b)
{
    if (l->iq1m) return iq1m_d(b);
    uint32_t w = le16(b + l->off);
    if (l->pair) w |= le16(b + l->off + 2) << 16;
    return w;
}

/* Nonzero when some block of the run has a non-finite field (no branch in the loop). */
static uint32_t any_nonfinite(const scale_layout *l, const uint8_t *b, uint64_t n, size_t bb)
{
    uint32_t acc = 0;
    if (l->iq1m) {
        for (uint64_t i = 0; i < n; i++, b += bb) acc |= (iq1m_d(b) & 0x7C00u) + 0x0400u;
    } else if (l->pair) {
        for (uint64_t i = 0; i < n; i++, b += bb) acc |= (scale_words(l, b) & 0x7C007C00u) + 0x04000400u;
    } else {
        for (uint64_t i = 0; i < n; i++, b += bb) acc |= (le16(b + l->off) & 0x7C00u) + 0x0400u;
    }
    return acc & 0x80008000u;
}

const char *nf_ggml_block_name(const nf_format *fmt)
{
    switch (fmt ? fmt->id : NF_FMT_COUNT) {
    case NF_FMT_GGUF_Q8_0: return "Q8_0";
    case NF_FMT_GGUF_Q4_0: return "Q4_0";
    case NF_FMT_GGUF_Q5_0: return "Q5_0";
    case NF_FMT_GGUF_Q2_0: return "Q2_0";
    case NF_FMT_GGUF_Q2_K: return "Q2_K";
    case NF_FMT_GGUF_Q3_K: return "Q3_K";
    case NF_FMT_GGUF_Q4_K: return "Q4_K";
    case NF_FMT_GGUF_Q5_K: return "Q5_K";
    case NF_FMT_GGUF_Q6_K: return "Q6_K";
    case NF_FMT_GGUF_IQ2_XXS: return "IQ2_XXS";
    case NF_FMT_GGUF_IQ2_XS: return "IQ2_XS";
    case NF_FMT_GGUF_IQ3_XXS: return "IQ3_XXS";
    case NF_FMT_GGUF_IQ1_S: return "IQ1_S";
    case NF_FMT_GGUF_IQ4_NL: return "IQ4_NL";
    case NF_FMT_GGUF_IQ3_S: return "IQ3_S";
    case NF_FMT_GGUF_IQ2_S: return "IQ2_S";
    case NF_FMT_GGUF_IQ4_XS: return "IQ4_XS";
    case NF_FMT_GGUF_IQ1_M: return "IQ1_M";
    default: return "?";
    }
}

const char *nf_ggml_f16_nonfinite_name(uint16_t h)
{
    if ((h & 0x7C00u) != 0x7C00u) return NULL;
    if (h & 0x03FFu) return "NaN";
    return (h & 0x8000u) ? "-infinity" : "+infinity";
}

bool nf_ggml_find_nonfinite_scale(const nf_format *fmt, const uint8_t *blocks, uint64_t from, uint64_t n,
                                  nf_ggml_bad_scale *bad)
{
    scale_layout l;
    if (!layout_of(fmt, &l) || from >= n) return false;
    size_t bb = fmt->block_bytes;
    enum { RUN = 256 };
    for (uint64_t b0 = from; b0 < n; b0 += RUN) {
        uint64_t m = n - b0 < RUN ? n - b0 : RUN;
        const uint8_t *run = blocks + b0 * bb;
        if (nf_ggml_scan_fast && !any_nonfinite(&l, run, m, bb)) continue;
        for (uint64_t i = 0; i < m; i++) {
            uint32_t w = scale_words(&l, run + i * bb);
            for (int half = 0; half < (l.pair ? 2 : 1); half++) {
                uint16_t h = (uint16_t)(w >> (16 * half));
                if ((h & 0x7C00u) != 0x7C00u) continue;
                *bad = (nf_ggml_bad_scale){b0 + i, half ? "dmin" : "d", (unsigned)(l.off + 2 * half), h};
                return true;
            }
        }
    }
    return false;
}

bool nf_ggml_scan_fast = true;
