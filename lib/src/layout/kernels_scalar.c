/* The portable scalar layout kernels (kernels.h) and the run-time choice among the variants.
 *
 * No per-element calls and no generic bit loops: each kernel is a straight loop over words with
 * the format's constants hoisted (one scale conversion per group, one divisor table per call). */
#include "layout/kernels.h"

#include "common/cpu.h"

const uint32_t nf_e4m3fn_bits[256] = {
    0x00000000u, 0x3B000000u, 0x3B800000u, 0x3BC00000u, 0x3C000000u, 0x3C200000u, 0x3C400000u, 0x3C600000u, 0x3C800000u,
    0x3C900000u, 0x3CA00000u, 0x3CB00000u, 0x3CC00000u, 0x3CD00000u, 0x3CE00000u, 0x3CF00000u, 0x3D000000u, 0x3D100000u,
    0x3D200000u, 0x3D300000u, 0x3D400000u, 0x3D500000u, 0x3D600000u, 0x3D700000u, 0x3D800000u, 0x3D900000u, 0x3DA00000u,
    0x3DB00000u, 0x3DC00000u, 0x3DD00000u, 0x3DE00000u, 0x3DF00000u, 0x3E000000u, 0x3E100000u, 0x3E200000u, 0x3E300000u,
    0x3E400000u, 0x3E500000u, 0x3E600000u, 0x3E700000u, 0x3E800000u, 0x3E900000u, 0x3EA00000u, 0x3EB00000u, 0x3EC00000u,
    0x3ED00000u, 0x3EE00000u, 0x3EF00000u, 0x3F000000u, 0x3F100000u, 0x3F200000u, 0x3F300000u, 0x3F400000u, 0x3F500000u,
    0x3F600000u, 0x3F700000u, 0x3F800000u, 0x3F900000u, 0x3FA00000u, 0x3FB00000u, 0x3FC00000u, 0x3FD00000u, 0x3FE00000u,
    0x3FF00000u, 0x40000000u, 0x40100000u, 0x40200000u, 0x40300000u, 0x40400000u, 0x40500000u, 0x40600000u, 0x40700000u,
    0x40800000u, 0x40900000u, 0x40A00000u, 0x40B00000u, 0x40C00000u, 0x40D00000u, 0x40E00000u, 0x40F00000u, 0x41000000u,
    0x41100000u, 0x41200000u, 0x41300000u, 0x41400000u, 0x41500000u, 0x41600000u, 0x41700000u, 0x41800000u, 0x41900000u,
    0x41A00000u, 0x41B00000u, 0x41C00000u, 0x41D00000u, 0x41E00000u, 0x41F00000u, 0x42000000u, 0x42100000u, 0x42200000u,
    0x42300000u, 0x42400000u, 0x42500000u, 0x42600000u, 0x42700000u, 0x42800000u, 0x42900000u, 0x42A00000u, 0x42B00000u,
    0x42C00000u, 0x42D00000u, 0x42E00000u, 0x42F00000u, 0x43000000u, 0x43100000u, 0x43200000u, 0x43300000u, 0x43400000u,
    0x43500000u, 0x43600000u, 0x43700000u, 0x43800000u, 0x43900000u, 0x43A00000u, 0x43B00000u, 0x43C00000u, 0x43D00000u,
    0x43E00000u, 0x7FC00000u, 0x80000000u, 0xBB000000u, 0xBB800000u, 0xBBC00000u, 0xBC000000u, 0xBC200000u, 0xBC400000u,
    0xBC600000u, 0xBC800000u, 0xBC900000u, 0xBCA00000u, 0xBCB00000u, 0xBCC00000u, 0xBCD00000u, 0xBCE00000u, 0xBCF00000u,
    0xBD000000u, 0xBD100000u, 0xBD200000u, 0xBD300000u, 0xBD400000u, 0xBD500000u, 0xBD600000u, 0xBD700000u, 0xBD800000u,
    0xBD900000u, 0xBDA00000u, 0xBDB00000u, 0xBDC00000u, 0xBDD00000u, 0xBDE00000u, 0xBDF00000u, 0xBE000000u, 0xBE100000u,
    0xBE200000u, 0xBE300000u, 0xBE400000u, 0xBE500000u, 0xBE600000u, 0xBE700000u, 0xBE800000u, 0xBE900000u, 0xBEA00000u,
    0xBEB00000u, 0xBEC00000u, 0xBED00000u, 0xBEE00000u, 0xBEF00000u, 0xBF000000u, 0xBF100000u, 0xBF200000u, 0xBF300000u,
    0xBF400000u, 0xBF500000u, 0xBF600000u, 0xBF700000u, 0xBF800000u, 0xBF900000u, 0xBFA00000u, 0xBFB00000u, 0xBFC00000u,
    0xBFD00000u, 0xBFE00000u, 0xBFF00000u, 0xC0000000u, 0xC0100000u, 0xC0200000u, 0xC0300000u, 0xC0400000u, 0xC0500000u,
    0xC0600000u, 0xC0700000u, 0xC0800000u, 0xC0900000u, 0xC0A00000u, 0xC0B00000u, 0xC0C00000u, 0xC0D00000u, 0xC0E00000u,
    0xC0F00000u, 0xC1000000u, 0xC1100000u, 0xC1200000u, 0xC1300000u, 0xC1400000u, 0xC1500000u, 0xC1600000u, 0xC1700000u,
    0xC1800000u, 0xC1900000u, 0xC1A00000u, 0xC1B00000u, 0xC1C00000u, 0xC1D00000u, 0xC1E00000u, 0xC1F00000u, 0xC2000000u,
    0xC2100000u, 0xC2200000u, 0xC2300000u, 0xC2400000u, 0xC2500000u, 0xC2600000u, 0xC2700000u, 0xC2800000u, 0xC2900000u,
    0xC2A00000u, 0xC2B00000u, 0xC2C00000u, 0xC2D00000u, 0xC2E00000u, 0xC2F00000u, 0xC3000000u, 0xC3100000u, 0xC3200000u,
    0xC3300000u, 0xC3400000u, 0xC3500000u, 0xC3600000u, 0xC3700000u, 0xC3800000u, 0xC3900000u, 0xC3A00000u, 0xC3B00000u,
    0xC3C00000u, 0xC3D00000u, 0xC3E00000u, 0xFFC00000u,
};

/* E2M1 word -> binary32 word (nf_e2m1_to_f32). */
const uint32_t nf_e2m1_bits[16] = {
    0x00000000u, 0x3F000000u, 0x3F800000u, 0x3FC00000u, 0x40000000u, 0x40400000u, 0x40800000u, 0x40C00000u,
    0x80000000u, 0xBF000000u, 0xBF800000u, 0xBFC00000u, 0xC0000000u, 0xC0400000u, 0xC0800000u, 0xC0C00000u,
};

static void bf16_f32_scalar(const uint16_t *w, size_t n, float *out)
{
    for (size_t i = 0; i < n; i++) out[i] = nf_k_f32((uint32_t)w[i] << 16);
}

/* nf_int32_value: two's complement to binary32, rounded to nearest even on integers. */
static inline float int32_value(uint32_t word)
{
    uint32_t sign = word & 0x80000000u, neg = 0u - (word >> 31), mag = (word ^ neg) - neg;
    if (mag <= 0x01000000u) { /* |v| <= 2^24: exact, whatever the rounding mode */
        int32_t v;
        memcpy(&v, &word, sizeof v);
        return (float)v;
    }
#if defined(__GNUC__)
    unsigned top = 31u - (unsigned)__builtin_clz(mag);
#else
    unsigned top = 31;
    while (!(mag >> top)) top--;
#endif
    unsigned drop = top - 23u; /* >= 1 */
    uint32_t sig = mag >> drop, rest = mag & ((1u << drop) - 1u), half = 1u << (drop - 1u);
    sig += rest + (sig & 1u) > half; /* up when above half, or at half with an odd sig */
    /* sig in [2^23, 2^24]: adding the fraction field lets 2^24 carry into the exponent */
    return nf_k_f32(sign | (((top + 127u) << 23) + (sig - 0x00800000u)));
}

static void int32_f32_scalar(const uint32_t *w, size_t n, float *out)
{
    for (size_t i = 0; i < n; i++) out[i] = int32_value(w[i]);
}

static void grouped_row_scalar(const int8_t *codes, const uint16_t *scales, size_t k, unsigned gs, float *out)
{
    for (size_t c0 = 0, gi = 0; c0 < k; c0 += gs, gi++) {
        const float s = nf_k_f16(scales[gi]);
        size_t c1 = k - c0 < gs ? k : c0 + gs;
        for (size_t c = c0; c < c1; c++) out[c] = s * (float)codes[c];
    }
}

static void fp8_row_scalar(const uint8_t *codes, size_t k, float s32, float *out)
{
    for (size_t c = 0; c < k; c++) {
        /* a NaN code gives its own NaN whatever the scale (nf_fp8_row_value) */
        const float v = nf_k_f32(nf_e4m3fn_bits[codes[c]]);
        out[c] = (codes[c] & 0x7Fu) == 0x7Fu ? v : v * s32;
    }
}

void nf_nvfp4_table_scalar(uint32_t divisor_bits, float *table)
{
    const float d = nf_k_f32(divisor_bits);
    float e2m1[16], e4m3[256];
    nf_k_opaque_f32(nf_e2m1_bits, e2m1, 16);
    nf_k_opaque_f32(nf_e4m3fn_bits, e4m3, 256);
    for (unsigned s = 0; s < 256; s++) {
        const float sv = e4m3[s];
        for (unsigned c = 0; c < 16; c++) {
            const float product = e2m1[c] * sv;
            table[s * 16 + c] = product / d;
        }
    }
}

static void nvfp4_row_scalar(const uint8_t *codes, const uint8_t *scales, size_t k, const float *table, float *out)
{
    for (size_t g = 0; g < k / 16; g++) {
        const float *t = table + (size_t)scales[g] * 16;
        for (size_t c = 16 * g; c < 16 * g + 16; c++) out[c] = t[codes[c] & 15u];
    }
}

/* Codes [c0, c1) of a row, one at a time; lane c of the row lives at base bit c*b' (b' = 2, 4 or 8
 * stored bits) and, for Q5/Q6, high bit c*(b-4) (docs/layouts.md 4: groups are contiguous in both
 * planes). */
static void rs_unpack_lanes(const nf_rs_params *p, const uint8_t *base, const uint8_t *high, size_t c0, size_t c1,
                            int8_t *codes)
{
    for (size_t c = c0; c < c1; c++) {
        unsigned u;
        if (p->bits == 8) u = base[c];
        else if (p->bits == 2) u = ((unsigned)base[c >> 2] >> (2u * (c & 3u))) & 3u;
        else u = ((unsigned)base[c >> 1] >> (4u * (c & 1u))) & 15u;
        if (p->bits == 5) u |= (((unsigned)high[c >> 3] >> (c & 7u)) & 1u) << 4;
        if (p->bits == 6) u |= (((unsigned)high[c >> 2] >> (2u * (c & 3u))) & 3u) << 4;
        int sign = 1 << (p->bits - 1);
        codes[c] = (int8_t)(p->bias ? (int)u - p->bias : (int)(u ^ (unsigned)sign) - sign);
    }
}

/* Eight codes from 4 base bytes: low nibble first; hi[i] already holds lane i's bits above 3. */
static inline void nibbles8(const uint8_t *base, const unsigned *hi, int sign, int8_t *codes)
{
    for (unsigned i = 0; i < 8; i++) {
        unsigned u = (((unsigned)base[i >> 1] >> (4u * (i & 1u))) & 15u) | hi[i];
        codes[i] = (int8_t)((int)(u ^ (unsigned)sign) - sign);
    }
}

/* Codes [c0, c1) of a row (c0 a multiple of 8): whole bytes (and high-plane bytes) at a time,
 * then the remaining lanes one by one. */
void nf_rs_unpack_scalar(const nf_rs_params *p, const uint8_t *base, const uint8_t *high, size_t c0, size_t c1,
                         int8_t *codes)
{
    size_t c = c0;
    if (c0 % 8 == 0) switch (p->bits) {
        case 8:
            if (c1 > c0) memcpy(codes + c0, base + c0, c1 - c0);
            return;
        case 2: {
            int8_t lut[4];
            for (int u = 0; u < 4; u++) lut[u] = (int8_t)(p->bias ? u - p->bias : (u ^ 2) - 2);
            for (; c + 4 <= c1; c += 4) {
                const unsigned x = base[c >> 2];
                codes[c] = lut[x & 3u];
                codes[c + 1] = lut[(x >> 2) & 3u];
                codes[c + 2] = lut[(x >> 4) & 3u];
                codes[c + 3] = lut[x >> 6];
            }
            break;
        }
        case 4:
            /* 4 bytes -> 8 codes: nibbles sign-extended in place (bit 3 spread to bits 4-7), the
             * low and high nibbles spread apart and interleaved */
            for (; c + 8 <= c1; c += 8) {
                const uint8_t *q = base + (c >> 1);
                uint32_t x = (uint32_t)q[0] | ((uint32_t)q[1] << 8) | ((uint32_t)q[2] << 16) | ((uint32_t)q[3] << 24);
                uint64_t v = ((uint64_t)(x & 0x0F0F0F0Fu)) | ((uint64_t)((x >> 4) & 0x0F0F0F0Fu) << 32);
                v |= ((v >> 3) & 0x0101010101010101ull) * 0xF0u;
                uint64_t lo = v & 0xFFFFFFFFu, hi = v >> 32;
                lo = (lo | (lo << 16)) & 0x0000FFFF0000FFFFull;
                lo = (lo | (lo << 8)) & 0x00FF00FF00FF00FFull;
                hi = (hi | (hi << 16)) & 0x0000FFFF0000FFFFull;
                hi = (hi | (hi << 8)) & 0x00FF00FF00FF00FFull;
                uint64_t out = lo | (hi << 8);
                for (unsigned i = 0; i < 8; i++) codes[c + i] = (int8_t)(uint8_t)(out >> (8 * i));
            }
            for (; c + 2 <= c1; c += 2) {
                const unsigned x = base[c >> 1];
                codes[c] = (int8_t)((int)((x & 15u) ^ 8u) - 8);
                codes[c + 1] = (int8_t)((int)((x >> 4) ^ 8u) - 8);
            }
            break;
        case 5:
            for (; c + 8 <= c1; c += 8) {
                const unsigned h = high[c >> 3];
                unsigned hi[8];
                for (unsigned i = 0; i < 8; i++) hi[i] = ((h >> i) & 1u) << 4;
                nibbles8(base + (c >> 1), hi, 16, codes + c);
            }
            break;
        case 6:
            for (; c + 8 <= c1; c += 8) {
                const unsigned h = (unsigned)high[c >> 2] | ((unsigned)high[(c >> 2) + 1] << 8);
                unsigned hi[8];
                for (unsigned i = 0; i < 8; i++) hi[i] = ((h >> (2u * i)) & 3u) << 4;
                nibbles8(base + (c >> 1), hi, 32, codes + c);
            }
            break;
        default: break;
        }
    rs_unpack_lanes(p, base, high, c, c1, codes);
}

static void rs_unpack_row_scalar(const nf_rs_params *p, const uint8_t *base, const uint8_t *high, size_t k,
                                 int8_t *codes)
{
    nf_rs_unpack_scalar(p, base, high, 0, k, codes);
}

static void nibbles_scalar(const uint8_t *in, size_t nbytes, uint8_t *out)
{
    for (size_t j = 0; j < nbytes; j++) {
        out[2 * j] = in[j] & 15u;
        out[2 * j + 1] = (uint8_t)(in[j] >> 4);
    }
}

/* ---------------------------------------------------------------- encode side */
bool nf_codes_within_scalar(const int8_t *codes, size_t n, int lo, int hi)
{
    /* one min/max pass without early exit (a branch per code would cost more than it saves on
     * the clean rows that are the rule) */
    int8_t mn = INT8_MAX, mx = INT8_MIN;
    for (size_t i = 0; i < n; i++) {
        const int8_t v = codes[i];
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
    }
    return n == 0 || (mn >= lo && mx <= hi);
}

unsigned nf_grouped_scales_scalar(const nf_grouped_rules *r, const uint16_t *scales, size_t n)
{
    unsigned nonfinite = 0, neg_zero = 0, zero = 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned h = scales[i];
        nonfinite |= (h & 0x7C00u) == 0x7C00u;
        neg_zero |= h == 0x8000u;
        zero |= h == 0u;
    }
    unsigned out = 0;
    if (nonfinite || (neg_zero && !r->neg_zero_ok)) out |= NF_SCALES_INVALID;
    if (zero && r->zero_scale_zero_codes) out |= NF_SCALES_ZERO_RULE;
    return out;
}

/* Lanes c..c+7 of a row as a 64-bit word, lane i in byte i (whatever the host's byte order). */
static inline uint64_t lanes8(const int8_t *q)
{
    uint64_t x = 0;
    for (unsigned i = 0; i < 8; i++) x |= (uint64_t)(uint8_t)q[i] << (8 * i);
    return x;
}

/* Four 2-bit fields in bytes 0-3 of x (each byte < 4) -> the byte f0 | f1 << 2 | f2 << 4 | f3 << 6.
 * The multiply moves field i from bit 8i to bit 24 + 2i (by 24 - 6i); the copies it makes
 * elsewhere land on distinct bit pairs (8i - 6j differ for distinct (i, j) and are all even),
 * so nothing carries into bits 24-31. */
static inline uint8_t quartet(uint32_t x) { return (uint8_t)(((uint64_t)x * 0x01041040u) >> 24); }

/* Eight 1-bit fields at bits 0, 8, ..., 56 of x -> one byte, field i at bit i: the multiply
 * moves bit 8i to bit 56 + i (by 56 - 7i), the other copies land on distinct bits below 56. */
static inline uint8_t octet(uint64_t x) { return (uint8_t)((x * 0x0102040810204080ull) >> 56); }

/* Eight lanes (x = lanes8) of a 2-bit format -> base bytes b[0], b[1]. */
static inline void pack8_2(uint64_t x, uint64_t add, uint8_t *b)
{
    const uint64_t u = ((x & 0x0303030303030303ull) + add) & 0x0303030303030303ull; /* (q + bias) mod 4 */
    b[0] = quartet((uint32_t)u);
    b[1] = quartet((uint32_t)(u >> 32));
}

/* Eight lanes of Q4/Q5/Q6 -> base bytes b[0..3]: low nibbles of lane pairs, the even lane low. */
static inline void pack8_4(uint64_t x, uint8_t *b)
{
    uint64_t v = x & 0x0F0F0F0F0F0F0F0Full;
    v = (v | (v >> 4)) & 0x00FF00FF00FF00FFull; /* byte 2j: lane 2j | lane 2j+1 << 4 */
    v = (v | (v >> 8)) & 0x0000FFFF0000FFFFull;
    v = (v | (v >> 16)) & 0xFFFFFFFFull;
    for (unsigned i = 0; i < 4; i++) b[i] = (uint8_t)(v >> (8 * i));
}

/* Eight lanes of Q5 -> high byte h[0]; of Q6 -> high bytes h[0], h[1] (bits 4 and up of u are
 * those of the two's complement code). */
static inline void pack8_high(unsigned bits, uint64_t x, uint8_t *h)
{
    if (bits == 5) {
        h[0] = octet((x >> 4) & 0x0101010101010101ull);
    } else {
        const uint64_t t = (x >> 4) & 0x0303030303030303ull;
        h[0] = quartet((uint32_t)t);
        h[1] = quartet((uint32_t)(t >> 32));
    }
}

/* The scalar packer (docs/layouts.md 4.3-4.5), eight lanes at a time as 64-bit words: lane c of the
 * row (code 0 from k on) has the stored word u = (q + bias) mod 2^b; base byte j holds lanes
 * j*n .. j*n + n - 1 (n = 8 / b' lanes per byte, the lowest lane in the lowest bits); for Q5/Q6
 * the bits of u above bit 3 go to the high plane the same way, b - 4 bits per lane.  The range
 * check is a min/max pass of its own (padding lanes are code 0, inside [lo, hi]). */
static bool rs_pack_row_scalar(const nf_rs_params *p, const int8_t *codes, size_t k, size_t lanes, int lo, int hi,
                               uint8_t *base, uint8_t *high)
{
    const bool ok = nf_codes_within_scalar(codes, k, lo, hi);
    if (p->bits == 8) { /* u = q mod 256: the code bytes themselves */
        if (k) memcpy(base, codes, k);
        memset(base + k, 0, lanes - k);
        return ok;
    }
    const uint64_t add = (uint64_t)(unsigned)p->bias * 0x0101010101010101ull;
    const int8_t zeros[8] = {0};
    int8_t pad[8];
    for (size_t c = 0; c < lanes; c += 8) {
        const int8_t *q = codes + c;
        if (c + 8 > k) { /* the unit holding k, or past it: code 0 in the padding lanes */
            memset(pad, 0, sizeof pad);
            if (c < k) memcpy(pad, codes + c, k - c);
            q = c < k ? pad : zeros;
        }
        const uint64_t x = lanes8(q);
        if (p->bits == 2) {
            pack8_2(x, add, base + c / 4);
            continue;
        }
        pack8_4(x, base + c / 2);
        if (p->bits != 4) pack8_high(p->bits, x, high + c * (p->bits - 4) / 8);
    }
    return ok;
}

/* The scalar level has no direct row_split decoder: nf_rs_row_f32 unpacks and converts block by
 * block with the entries above, which is what it does for the formats the vector decoders
 * decline too. */
static bool rs_row_f32_scalar(const nf_rs_params *p, const uint8_t *base, const uint8_t *high, const uint8_t *scales_le,
                              size_t k, float *out)
{
    (void)p, (void)base, (void)high, (void)scales_le, (void)k, (void)out;
    return false;
}

const nf_layout_kernels nf_layout_kernels_scalar = {
    .name = "scalar",
    .bf16_f32 = bf16_f32_scalar,
    .int32_f32 = int32_f32_scalar,
    .grouped_row = grouped_row_scalar,
    .fp8_row = fp8_row_scalar,
    .nvfp4_table = nf_nvfp4_table_scalar,
    .nvfp4_row = nvfp4_row_scalar,
    .rs_unpack_row = rs_unpack_row_scalar,
    .nibbles = nibbles_scalar,
    .rs_row_f32 = rs_row_f32_scalar,
    .codes_within = nf_codes_within_scalar,
    .grouped_scales = nf_grouped_scales_scalar,
    .rs_pack_row = rs_pack_row_scalar,
};

NF_SIMD_SELECTOR(nf_layout_kernels, nf_layout_kernels, nf_layout_kernels_scalar, nf_layout_kernels_avx2,
                 nf_layout_kernels_avx512, nf_layout_kernels_neon)
