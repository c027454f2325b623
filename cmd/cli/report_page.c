/* The report page (report_page.h): its HTML, its three charts and its table. */
#include "report_page.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "outputs/out_file.h"
#include "svg.h"

#define P nf_svg_printf

/* ---------------------------------------------------------------- layers and roles */
long nf_page_layer(const char *name, char *role, size_t size)
{
    static const char *const marks[] = {"layers.", "blk.", "h.", "layer."};
    long layer = -1;
    const char *rest = name;
    for (size_t m = 0; m < sizeof marks / sizeof marks[0] && layer < 0; m++) {
        size_t ml = strlen(marks[m]);
        for (const char *s = strstr(name, marks[m]); s; s = strstr(s + 1, marks[m])) {
            if (s != name && s[-1] != '.') continue; /* a whole part of the name */
            const char *d = s + ml;
            if (!isdigit((unsigned char)*d)) continue;
            char *end;
            long v = strtol(d, &end, 10);
            if (*end != '.' || v < 0 || v > 1000000) continue;
            layer = v;
            rest = end + 1;
            break;
        }
    }
    /* an expert's index: experts.E. -> experts.*. (the role of every expert of the layer) */
    size_t k = 0;
    for (const char *c = rest; *c && k + 1 < size;) {
        if (!strncmp(c, "experts.", 8) && isdigit((unsigned char)c[8])) {
            const char *e = c + 8;
            while (isdigit((unsigned char)*e)) e++;
            if (*e == '.' && k + 10 < size) {
                memcpy(role + k, "experts.*", 9);
                k += 9;
                c = e;
                continue;
            }
        }
        role[k++] = *c++;
    }
    if (size) role[k < size ? k : size - 1] = '\0';
    return layer;
}

/* The heatmap's bounds: a page stays a few megabytes whatever the report names. */
#define PAGE_MAX_ROLES 64
#define PAGE_MAX_LAYERS 2048
/* Points of the size-against-error chart that get a label (the others their tooltip). */
#define PAGE_MAX_LABELS 200

/* ---------------------------------------------------------------- the page's rows */
typedef struct row_info {
    long layer;
    size_t role; /* index into the roles */
} row_info;

typedef struct page_data {
    const nf_page *p;
    row_info *info;
    char **roles;
    size_t nroles;
    long *layers; /* distinct, ascending */
    size_t nlayers;
    bool too_many; /* more roles or layers than a heatmap shows */
} page_data;

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static bool page_data_init(page_data *d, const nf_page *p)
{
    memset(d, 0, sizeof *d);
    d->p = p;
    size_t n = p->nrows ? p->nrows : 1;
    d->info = calloc(n, sizeof *d->info);
    d->roles = calloc(n, sizeof *d->roles);
    d->layers = calloc(n, sizeof *d->layers);
    if (!d->info || !d->roles || !d->layers) return false;
    char role[1024];
    for (size_t i = 0; i < p->nrows; i++) {
        const char *name = p->rows[i].layer_name ? p->rows[i].layer_name : p->rows[i].name;
        d->info[i].layer = nf_page_layer(name, role, sizeof role);
        size_t r = 0;
        while (r < d->nroles && strcmp(d->roles[r], role) != 0) r++; /* at most PAGE_MAX_ROLES: a scan */
        if (r == d->nroles && d->info[i].layer >= 0) {
            if (d->nroles == PAGE_MAX_ROLES) { /* too many for a heatmap: the table has them */
                d->too_many = true;
                r = SIZE_MAX;
            } else if (!(d->roles[r] = strdup(role))) {
                return false;
            } else {
                d->nroles++;
            }
        }
        d->info[i].role = r;
        if (d->info[i].layer >= 0) d->layers[d->nlayers++] = d->info[i].layer;
    }
    qsort(d->layers, d->nlayers, sizeof *d->layers, cmp_long);
    size_t m = 0;
    for (size_t i = 0; i < d->nlayers; i++)
        if (!m || d->layers[m - 1] != d->layers[i]) d->layers[m++] = d->layers[i];
    d->nlayers = m;
    if (d->nlayers > PAGE_MAX_LAYERS) d->too_many = true;
    return true;
}

static void page_data_free(page_data *d)
{
    for (size_t i = 0; i < d->nroles; i++) free(d->roles[i]);
    free(d->roles);
    free(d->info);
    free(d->layers);
}

static size_t layer_index(const page_data *d, long layer)
{
    size_t lo = 0, hi = d->nlayers;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->layers[mid] < layer) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* ---------------------------------------------------------------- the heatmap */
/* A cell's sums: a role of a layer may hold several tensors (its experts). */
typedef struct cell {
    double sse, ssx;
    bool any, exact;
} cell;

static bool heatmap(nf_buf *b, const page_data *d)
{
    const nf_page *p = d->p;
    if (!d->nlayers || !d->nroles)
        return P(b, "<p class=\"none\">No tensor name carries a layer number (model.layers.N, blk.N): no "
                    "heatmap.</p>\n");
    if (d->too_many)
        return P(b,
                 "<p class=\"none\">More than %d tensor roles or %d layers: no heatmap (the table below has "
                 "every tensor).</p>\n",
                 PAGE_MAX_ROLES, PAGE_MAX_LAYERS);
    cell *cells = calloc(d->nlayers * d->nroles, sizeof *cells);
    if (!cells) return false;
    for (size_t i = 0; i < p->nrows; i++) {
        const nf_page_row *r = &p->rows[i];
        if (d->info[i].layer < 0 || !r->stats || !r->count) continue;
        cell *c = &cells[layer_index(d, d->info[i].layer) * d->nroles + d->info[i].role];
        double sse = r->rmse * r->rmse * (double)r->count;
        c->any = true;
        if (sse == 0 || isinf(r->snr_db)) {
            c->exact = c->exact || c->sse == 0;
            continue;
        }
        c->exact = false;
        c->sse += sse;
        if (isfinite(r->snr_db)) c->ssx += sse * pow(10, r->snr_db / 10);
    }
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < d->nlayers * d->nroles; i++) {
        const cell *c = &cells[i];
        if (!c->any || c->sse == 0 || c->ssx == 0) continue;
        double v = 10 * log10(c->ssx / c->sse);
        if (v < lo) lo = v;
        if (v > hi) hi = v;
    }
    /* room above the cells for the longest role name, written at 40 degrees */
    size_t longest = 0;
    for (size_t r = 0; r < d->nroles; r++)
        if (strlen(d->roles[r]) > longest) longest = strlen(d->roles[r]);
    const double cw = 64, ch = 22, left = 70, top = 40 + 4.2 * (double)(longest < 48 ? longest : 48);
    double w = fmax(left + cw * (double)d->nroles + 60, 640), h = top + ch * (double)d->nlayers + 70;
    bool ok = P(b,
                "<svg class=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                "viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"SNR per layer and tensor role\">\n",
                w, h, w, h);
    ok = ok && P(b, "<text class=\"at\" x=\"8\" y=\"%.1f\">layer</text>\n", top - 6);
    for (size_t r = 0; ok && r < d->nroles; r++) {
        double x = left + cw * (double)r + cw / 2;
        ok = P(b, "<text class=\"tl\" transform=\"translate(%.1f %.1f) rotate(-40)\">", x, top - 6) &&
             nf_svg_text(b, d->roles[r]) && P(b, "</text>\n");
    }
    for (size_t l = 0; ok && l < d->nlayers; l++) {
        double y = top + ch * (double)l;
        ok = P(b, "<text class=\"tl\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%ld</text>\n", left - 6, y + 15,
               d->layers[l]);
        for (size_t r = 0; ok && r < d->nroles; r++) {
            const cell *c = &cells[l * d->nroles + r];
            double x = left + cw * (double)r;
            char colour[8] = "#dddddd", text[32] = "";
            if (c->any && (c->exact || c->sse == 0)) {
                nf_svg_colour(1, colour);
                snprintf(text, sizeof text, "exact");
            } else if (c->any && c->ssx > 0) {
                double v = 10 * log10(c->ssx / c->sse);
                nf_svg_colour(hi > lo ? (v - lo) / (hi - lo) : 1, colour);
                snprintf(text, sizeof text, "%.1f", v);
            } else if (c->any) {
                snprintf(text, sizeof text, "-");
            }
            ok = P(b, "<rect class=\"cell\" x=\"%.1f\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" fill=\"%s\"><title>",
                   x, y, cw - 2, ch - 2, colour) &&
                 P(b, "layer %ld, ", d->layers[l]) && nf_svg_text(b, d->roles[r]) &&
                 P(b, ": %s</title></rect>\n", c->any ? (text[0] ? text : "-") : "no tensor");
            if (ok && text[0])
                ok = P(b, "<text class=\"cv%s\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                       colour[1] >= 'c' || !strcmp(text, "exact") ? " dark" : "", x + cw / 2 - 1, y + 15, text);
        }
    }
    /* the legend: the palette from the lowest SNR to the highest */
    double ly = top + ch * (double)d->nlayers + 18;
    for (int i = 0; ok && i < 20; i++) {
        char colour[8];
        nf_svg_colour(i / 19.0, colour);
        ok = P(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"12\" fill=\"%s\"/>", left + 10.0 * i, ly, colour);
    }
    if (ok && lo <= hi)
        ok = P(b,
               "\n<text class=\"tl\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.1f</text>"
               "<text class=\"tl\" x=\"%.1f\" y=\"%.1f\">%.1f</text>\n",
               left - 4, ly + 10, lo, left + 204, ly + 10, hi);
    ok = ok && P(b,
                 "<text class=\"at\" x=\"%.1f\" y=\"%.1f\">SNR (dB): higher is closer to the source; grey: no "
                 "tensor</text>\n</svg>\n",
                 left, ly + 34);
    free(cells);
    return ok;
}

/* ---------------------------------------------------------------- size against error */
static bool scatter(nf_buf *b, const nf_page *p)
{
    if (!p->npoints)
        return P(b, "<p class=\"none\">No budget figures: the size-against-error chart needs a report of a recipe "
                    "with a budget (docs/recipes.md, \"Budgets\").</p>\n");
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (size_t i = 0; i < p->npoints; i++) {
        const nf_page_point *q = &p->points[i];
        if (!isfinite(q->bpw) || !isfinite(q->error)) continue;
        xlo = fmin(xlo, q->bpw);
        xhi = fmax(xhi, q->bpw);
        if (q->error > 0) ylo = fmin(ylo, q->error);
        yhi = fmax(yhi, q->error);
    }
    if (!(xlo <= xhi)) return P(b, "<p class=\"none\">No finite budget figures.</p>\n");
    bool log = ylo > 0 && yhi / ylo > 20;
    size_t hidden = 0; /* points of error 0, which a log axis cannot show */
    for (size_t i = 0; log && i < p->npoints; i++)
        if (isfinite(p->points[i].bpw) && p->points[i].error <= 0) hidden++;
    const double left = 90, right = 700, top = 20, bottom = 330;
    nf_svg_scale sx, sy;
    nf_svg_scale_nice(&sx, xlo, xhi, false, left, right);
    nf_svg_scale_nice(&sy, log ? ylo : fmin(0, ylo), yhi, log, bottom, top);
    bool ok = P(b, "<svg class=\"scatter\" xmlns=\"http://www.w3.org/2000/svg\" width=\"960\" height=\"390\" "
                   "viewBox=\"0 0 960 390\" role=\"img\" aria-label=\"size against error\">\n");
    ok = ok && nf_svg_axis_x(b, &sx, bottom, "bits per weight (the budget's tensors)");
    ok = ok && nf_svg_axis_y(b, &sy, left, log ? "estimated weighted squared error (log)" : p->error_title);
    /* labels placed greedily where they overlap no label placed before (about 5.6 px a
     * character, 11 px a line): a candidate's label moves down or up a line at a time */
    double(*boxes)[3] = calloc(p->npoints ? p->npoints : 1, sizeof *boxes);
    size_t nboxes = 0;
    if (!boxes) return false;
    for (size_t i = 0; ok && i < p->npoints; i++) {
        const nf_page_point *q = &p->points[i];
        if (!isfinite(q->bpw) || !isfinite(q->error) || (log && q->error <= 0)) continue;
        double x = nf_svg_at(&sx, q->bpw), y = nf_svg_at(&sy, q->error);
        double lw = 5.6 * (double)strlen(q->label), ly = y - 4;
        bool label = q->chosen || nboxes < PAGE_MAX_LABELS;
        for (int t = 0; label && t < 40; t++) {
            double cand = y - 4 + (t % 2 ? 1 : -1) * 11.0 * ((t + 1) / 2);
            bool clear = true;
            for (size_t k = 0; clear && k < nboxes; k++)
                clear = !(fabs(boxes[k][1] - cand) < 11 && x + 8 < boxes[k][0] + boxes[k][2] &&
                          boxes[k][0] < x + 8 + lw);
            if (clear) {
                ly = cand;
                break;
            }
        }
        if (label) {
            boxes[nboxes][0] = x + 8;
            boxes[nboxes][1] = ly;
            boxes[nboxes++][2] = lw;
        }
        if (q->chosen) ok = P(b, "<path class=\"chosen\" d=\"M%.1f %.1fl7 7l-7 7l-7 -7z\"><title>", x, y - 7);
        else ok = P(b, "<circle class=\"cand\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\"><title>", x, y);
        ok = ok && nf_svg_text(b, q->label) &&
             P(b, ": %.4g bits per weight, error %.4g</title></%s>\n", q->bpw, q->error, q->chosen ? "path" : "circle");
        if (!label) continue;
        if (ok && fabs(ly - (y - 4)) > 1) /* a leader from a moved label to its point */
            ok = P(b, "<line class=\"lead\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x + 3, y, x + 8,
                   ly - 3);
        ok = ok && P(b, "<text class=\"pl%s\" x=\"%.1f\" y=\"%.1f\">", q->chosen ? " strong" : "", x + 8, ly) &&
             nf_svg_text(b, q->label) && P(b, "</text>\n");
    }
    /* the legend */
    ok = ok && P(b, "<circle class=\"cand\" cx=\"730\" cy=\"30\" r=\"4\"/><text class=\"tl\" x=\"742\" y=\"34\">"
                    "every tensor in one candidate</text>\n"
                    "<path class=\"chosen\" d=\"M730 46l7 7l-7 7l-7 -7z\"/><text class=\"tl\" x=\"742\" y=\"57\">"
                    "the chosen allocation</text>\n");
    if (ok && hidden)
        ok = P(b, "<text class=\"tl\" x=\"730\" y=\"80\">%zu point%s of error 0 not on the log axis</text>\n", hidden,
               hidden == 1 ? "" : "s");
    ok = ok && P(b, "</svg>\n");
    free(boxes);
    return ok;
}

/* ---------------------------------------------------------------- bits per weight per layer */
static bool bars(nf_buf *b, const page_data *d)
{
    const nf_page *p = d->p;
    size_t n = d->nlayers + 1; /* the layers, then the tensors of no layer */
    double *bits = calloc(n, sizeof *bits), *vals = calloc(n, sizeof *vals);
    if (!bits || !vals) {
        free(bits);
        free(vals);
        return false;
    }
    for (size_t i = 0; i < p->nrows; i++) {
        const nf_page_row *r = &p->rows[i];
        if (!isfinite(r->bpw) || !r->values) continue;
        size_t k = d->info[i].layer >= 0 ? layer_index(d, d->info[i].layer) : d->nlayers;
        bits[k] += r->bpw * (double)r->values;
        vals[k] += (double)r->values;
    }
    double hi = 0;
    for (size_t k = 0; k < n; k++)
        if (vals[k] > 0) hi = fmax(hi, bits[k] / vals[k]);
    const double left = 90, top = 20, bottom = 280;
    double bw = n > 64 ? 8 : 18, right = left + bw * (double)n + 20, width = fmax(right + 20, 640);
    nf_svg_scale sy;
    nf_svg_scale_nice(&sy, 0, hi > 0 ? hi : 1, false, bottom, top);
    bool ok = P(b,
                "<svg class=\"bars\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"340\" "
                "viewBox=\"0 0 %.0f 340\" role=\"img\" aria-label=\"bits per weight per layer\">\n",
                width, width);
    ok = ok && nf_svg_axis_y(b, &sy, left, "bits per weight");
    ok = ok &&
         P(b, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", left, bottom, right, bottom);
    for (size_t k = 0; ok && k < n; k++) {
        if (!(vals[k] > 0)) continue;
        double v = bits[k] / vals[k], x = left + 4 + bw * (double)k, y = nf_svg_at(&sy, v);
        char name[32];
        if (k < d->nlayers) snprintf(name, sizeof name, "layer %ld", d->layers[k]);
        else snprintf(name, sizeof name, "no layer");
        ok = P(b,
               "<rect class=\"bar%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>%s: %.3f bits per "
               "weight</title></rect>\n",
               k < d->nlayers ? "" : " other", x, y, bw - 3, bottom - y, name, v);
        if (ok && (n <= 64 || k % 8 == 0 || k == d->nlayers))
            ok = P(b, "<text class=\"tl\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", x + (bw - 3) / 2,
                   bottom + 16, k < d->nlayers ? name + 6 : "-");
    }
    ok = ok && P(b,
                 "<text class=\"at\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">layer (-: tensors of no layer: "
                 "embeddings, output, final norm)</text>\n</svg>\n",
                 width / 2, bottom + 40);
    free(bits);
    free(vals);
    return ok;
}

/* ---------------------------------------------------------------- the table */
enum { KEY_NAME, KEY_LAYER, KEY_BPW, KEY_MAX, KEY_RMSE, KEY_SNR, KEY_W, NKEYS };
static const char *const key_titles[NKEYS] = {"name", "layer",    "bits/weight",   "max |error|",
                                              "RMSE", "SNR (dB)", "weighted error"};

/* key k of row i, for the sorts; NaN: not given (last either way) */
static double key_value(const page_data *d, size_t i, int k)
{
    const nf_page_row *r = &d->p->rows[i];
    switch (k) {
    case KEY_LAYER: return d->info[i].layer >= 0 ? (double)d->info[i].layer : NAN;
    case KEY_BPW: return r->bpw;
    case KEY_MAX: return r->stats ? r->max_abs : NAN;
    case KEY_RMSE: return r->stats ? r->rmse : NAN;
    case KEY_SNR: return r->stats ? r->snr_db : NAN;
    default: return r->stats ? r->weighted : NAN;
    }
}

/* a stable merge sort of the row indices by key k (descending when desc) */
static int compare_rows(const page_data *d, size_t a, size_t b, int k, bool desc)
{
    if (k == KEY_NAME) {
        int c = strcmp(d->p->rows[a].name, d->p->rows[b].name);
        return desc ? -c : c;
    }
    double x = key_value(d, a, k), y = key_value(d, b, k);
    if (isnan(x) || isnan(y)) return isnan(x) - isnan(y);
    int c = (x > y) - (x < y);
    return desc ? -c : c;
}

static void merge_sort(const page_data *d, size_t *v, size_t *tmp, size_t n, int k, bool desc)
{
    if (n < 2) return;
    size_t h = n / 2;
    merge_sort(d, v, tmp, h, k, desc);
    merge_sort(d, v + h, tmp, n - h, k, desc);
    size_t i = 0, j = h, o = 0;
    while (i < h && j < n) tmp[o++] = compare_rows(d, v[j], v[i], k, desc) < 0 ? v[j++] : v[i++];
    while (i < h) tmp[o++] = v[i++];
    while (j < n) tmp[o++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

/* a figure of the table: `digits` significant (0: three decimals), "-" when not given */
static void figure(char *out, size_t n, double v, int digits)
{
    if (isnan(v)) snprintf(out, n, "-");
    else if (digits) snprintf(out, n, "%.*g", digits, v);
    else snprintf(out, n, "%.3f", v);
}

static bool table(nf_buf *b, const page_data *d)
{
    const nf_page *p = d->p;
    size_t n = p->nrows;
    /* order[k][dir][i]: row i's place when sorted by key k up (0) or down (1) */
    size_t *order = malloc((n ? n : 1) * NKEYS * 2 * sizeof *order), *v = malloc((n ? n : 1) * sizeof *v),
           *tmp = malloc((n ? n : 1) * sizeof *tmp);
    bool ok = order && v && tmp;
    for (int k = 0; ok && k < NKEYS; k++)
        for (int dir = 0; dir < 2; dir++) {
            for (size_t i = 0; i < n; i++) v[i] = i;
            merge_sort(d, v, tmp, n, k, dir == 1);
            for (size_t i = 0; i < n; i++) order[((size_t)k * 2 + (size_t)dir) * n + v[i]] = i;
        }
    /* the sort controls: radio buttons, siblings before the table, whose :checked state orders
     * the rows through CSS (no script) */
    ok = ok && P(b, "<div class=\"sorts\"><span>sort by</span>\n");
    for (int k = 0; ok && k < NKEYS; k++)
        ok = P(b,
               "<input type=\"radio\" name=\"sort\" id=\"k%da\"><label for=\"k%da\">%s &#8593;</label>"
               "<input type=\"radio\" name=\"sort\" id=\"k%dd\"><label for=\"k%dd\">&#8595;</label>\n",
               k, k, key_titles[k], k, k);
    ok = ok && P(b, "<input type=\"radio\" name=\"sort\" id=\"k-\" checked><label for=\"k-\">as listed</label>\n"
                    "<table class=\"t\"><thead><tr><th>tensor</th><th>format</th>");
    for (int k = 1; ok && k < NKEYS; k++) ok = P(b, "<th>%s</th>", key_titles[k]);
    ok = ok && P(b, "</tr></thead>\n<tbody>\n");
    for (size_t i = 0; ok && i < n; i++) {
        const nf_page_row *r = &p->rows[i];
        ok = P(b, "<tr style=\"");
        for (int k = 0; ok && k < NKEYS; k++)
            ok = P(b, "--a%d:%zu;--d%d:%zu;", k, order[((size_t)k * 2) * n + i], k, order[((size_t)k * 2 + 1) * n + i]);
        char layer[24], bpw[32], mx[32], rmse[32], snr[32], w[32];
        if (d->info[i].layer >= 0) snprintf(layer, sizeof layer, "%ld", d->info[i].layer);
        else snprintf(layer, sizeof layer, "-");
        figure(bpw, sizeof bpw, r->bpw, 0);
        figure(mx, sizeof mx, r->stats ? r->max_abs : NAN, 4);
        figure(rmse, sizeof rmse, r->stats ? r->rmse : NAN, 4);
        if (r->stats && isinf(r->snr_db)) snprintf(snr, sizeof snr, "exact");
        else if (r->stats && !isnan(r->snr_db)) snprintf(snr, sizeof snr, "%.1f", r->snr_db);
        else snprintf(snr, sizeof snr, "-");
        figure(w, sizeof w, r->stats ? r->weighted : NAN, 4);
        ok = ok && P(b, "\"><td>") && nf_svg_text(b, r->name) && P(b, "</td><td>") &&
             nf_svg_text(b, r->format ? r->format : "-") &&
             P(b, "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", layer, bpw, mx,
               rmse, snr, w);
    }
    ok = ok && P(b, "</tbody></table></div>\n");
    free(order);
    free(v);
    free(tmp);
    return ok;
}

/* ---------------------------------------------------------------- the page */
static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}\n"
    "h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}.about,.none,footer{color:#555}\n"
    "svg{display:block;max-width:100%;height:auto}svg text{font:11px system-ui,sans-serif;fill:#222}\n"
    "svg .at{font-size:12px;font-weight:600}.axis{stroke:#444}.tick{stroke:#888}.cell{stroke:none}\n"
    "svg .cv{font-size:10px;fill:#fff}svg .cv.dark{fill:#111}.cand{fill:#3b528b}.chosen{fill:#d62728}\n"
    "svg .pl{font-size:10px;fill:#444}svg .pl.strong{font-weight:700;fill:#d62728}.bar{fill:#21918c}"
    ".bar.other{fill:#999}.lead{stroke:#aaa}\n"
    ".sorts{margin:.5em 0}.sorts span{font-weight:600;margin-right:.5em}.sorts label{margin-right:.6em}\n"
    "table.t{border-collapse:collapse;width:100%}table.t tbody{display:flex;flex-direction:column}\n"
    "table.t tr{display:grid;grid-template-columns:minmax(14em,4fr) minmax(7em,1.5fr) 4em repeat(5,minmax(6em,1fr))}\n"
    "table.t th,table.t td{padding:2px 6px;border-bottom:1px solid #ddd;overflow-wrap:anywhere;text-align:right}\n"
    "table.t th:first-child,table.t td:first-child,table.t td:nth-child(2),table.t th:nth-child(2)"
    "{text-align:left}\n";

bool nf_page_html(const nf_page *p, nf_buf *out)
{
    page_data d;
    bool ok = page_data_init(&d, p);
    ok = ok && P(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                      "style-src 'unsafe-inline'\">\n"
                      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
    ok = ok && nf_svg_text(out, p->title) && P(out, "</title>\n<style>\n%s", style);
    for (int k = 0; ok && k < NKEYS; k++)
        ok = P(out,
               "#k%da:checked~table.t tbody tr{order:var(--a%d)}#k%dd:checked~table.t tbody tr{order:var(--d%d)}\n", k,
               k, k, k);
    ok = ok && P(out, "</style>\n</head>\n<body>\n<h1>") && nf_svg_text(out, p->title) && P(out, "</h1>\n");
    if (ok && p->about) ok = P(out, "<p class=\"about\">") && nf_svg_text(out, p->about) && P(out, "</p>\n");
    ok = ok && P(out, "<h2>Error per layer and tensor role</h2>\n") && heatmap(out, &d);
    ok = ok && P(out, "<h2>Size against error</h2>\n") && scatter(out, p);
    ok = ok && P(out, "<h2>Bits per weight per layer</h2>\n") && bars(out, &d);
    ok = ok && P(out, "<h2>Every tensor (%zu)</h2>\n", p->nrows) && table(out, &d);
    ok = ok && P(out, "<footer><p>Written by ") && nf_svg_text(out, p->generator) &&
         P(out, "; no script, nothing fetched.</p></footer>\n</body>\n</html>\n");
    page_data_free(&d);
    return ok;
}

int nf_page_write(const nf_cli *cli, const nf_page *p, const char *path)
{
    nf_buf b = {0};
    if (!nf_page_html(p, &b)) {
        nf_buf_free(&b);
        return nf_cli_error(cli, NF_ERR_NOMEM, "out of memory");
    }
    nf_out *out;
    nf_error err;
    nf_status st = nf_out_open(path, 0, &out, &err);
    if (st == NF_OK && (st = nf_out_write(out, b.data, b.len, &err)) != NF_OK) nf_out_abort(out);
    else if (st == NF_OK) st = nf_out_commit(out, &err);
    nf_buf_free(&b);
    return st == NF_OK ? NF_EXIT_OK : nf_cli_report(cli, &err);
}
