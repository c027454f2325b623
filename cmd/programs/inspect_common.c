/* What ninfer-inspect's artifact and checkpoint views share (inspect.h): shapes as JSON and text,
 * and the value statistics of --tensor --stats. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "inspect.h"
#include "numtext.h"

json_t *dims_json(const uint64_t *dims, uint32_t rank)
{
    json_t *a = json_array();
    for (uint32_t i = 0; i < rank; i++) json_array_append_new(a, json_integer((json_int_t)dims[i]));
    return a;
}

void dims_text(const uint64_t *dims, uint32_t rank, bool reversed, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (uint32_t i = 0; i < rank && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%" PRIu64, i ? "," : "",
                                 dims[reversed ? rank - 1 - i : i]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

void stats_init(value_stats *s)
{
    memset(s, 0, sizeof *s);
    s->min = INFINITY;
    s->max = -INFINITY;
}

void stats_add(value_stats *s, const float *values, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        double v = values[i];
        if (isnan(v)) {
            s->nans++;
            continue;
        }
        if (isinf(v)) {
            s->infs++;
            continue;
        }
        s->count++;
        if (v == 0.0) s->zeros++;
        if (v < s->min) s->min = v;
        if (v > s->max) s->max = v;
        if (fabs(v) > s->abs_max) s->abs_max = fabs(v);
        s->sum += v;
        s->sum_sq += v * v;
    }
}

double stats_mean(const value_stats *s) { return s->count ? s->sum / (double)s->count : 0.0; }
double stats_rms(const value_stats *s) { return s->count ? sqrt(s->sum_sq / (double)s->count) : 0.0; }

json_t *stats_json(const value_stats *s)
{
    return json_pack("{s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f}", "finite", (json_int_t)s->count, "zeros",
                     (json_int_t)s->zeros, "nan", (json_int_t)s->nans, "inf", (json_int_t)s->infs, "min",
                     s->count ? s->min : 0.0, "max", s->count ? s->max : 0.0, "mean", stats_mean(s), "rms",
                     stats_rms(s), "abs_max", s->abs_max);
}

void print_stats(const value_stats *s)
{
    printf("stats\n  finite %" PRIu64 "  zeros %" PRIu64 "  nan %" PRIu64 "  inf %" PRIu64 "\n", s->count, s->zeros,
           s->nans, s->infs);
    /* min, max and abs max are values of the tensor (binary32): the shortest decimal that reads
     * back to each; mean and rms are binary64 sums, shown to 9 digits */
    char mn[NF_NUM_TEXT], mx[NF_NUM_TEXT], am[NF_NUM_TEXT];
    if (s->count)
        printf("  min %s  max %s  mean %.9g  rms %.9g  abs max %s\n", nf_num_shortest_f32((float)s->min, mn, sizeof mn),
               nf_num_shortest_f32((float)s->max, mx, sizeof mx), stats_mean(s), stats_rms(s),
               nf_num_shortest_f32((float)s->abs_max, am, sizeof am));
}


/* A row longer than a chunk is decoded span by span (ninfer/layout.h nf_colspan, docs/layouts.md
 * "Spans of a row"), so memory stays bounded whatever the row's length. */
