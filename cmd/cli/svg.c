/* The report page's SVG writer (svg.h). */
#include "svg.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

bool nf_svg_printf(nf_buf *b, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return false;
    if ((size_t)n < sizeof small) return nf_buf_append(b, small, (size_t)n);
    char *big = malloc((size_t)n + 1);
    if (!big) return false;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    bool ok = nf_buf_append(b, big, (size_t)n);
    free(big);
    return ok;
}

bool nf_svg_text(nf_buf *b, const char *s)
{
    nf_cli_text t = nf_cli_name(s ? s : "");
    bool ok = true;
    for (const char *c = t.s; *c && ok; c++) {
        switch (*c) {
        case '&': ok = nf_buf_append(b, "&amp;", 5); break;
        case '<': ok = nf_buf_append(b, "&lt;", 4); break;
        case '>': ok = nf_buf_append(b, "&gt;", 4); break;
        case '"': ok = nf_buf_append(b, "&quot;", 6); break;
        case '\'': ok = nf_buf_append(b, "&#39;", 5); break;
        default: ok = nf_buf_putc(b, *c);
        }
    }
    return ok;
}

double nf_svg_at(const nf_svg_scale *s, double v)
{
    double a = s->log ? log10(s->lo) : s->lo, z = s->log ? log10(s->hi) : s->hi, x = s->log ? log10(v) : v;
    return s->p0 + (x - a) / (z - a) * (s->p1 - s->p0);
}

double nf_svg_scale_nice(nf_svg_scale *s, double lo, double hi, bool log, double p0, double p1)
{
    s->p0 = p0;
    s->p1 = p1;
    s->log = log && lo > 0 && hi > 0;
    if (s->log) {
        s->lo = pow(10, floor(log10(lo)));
        s->hi = pow(10, ceil(log10(hi)));
        if (s->hi <= s->lo) s->hi = s->lo * 10;
        return 10;
    }
    if (!isfinite(lo) || !isfinite(hi)) lo = hi = 0;
    if (!(hi > lo)) { /* one value, or none: a unit around it (or a tenth of its size) */
        double half = lo != 0 ? fabs(lo) / 20 : 0.5;
        lo -= half;
        hi += half;
    }
    double raw = (hi - lo) / 5, mag = pow(10, floor(log10(raw))), step = mag;
    if (raw / mag > 5) step = 10 * mag;
    else if (raw / mag > 2) step = 5 * mag;
    else if (raw / mag > 1) step = 2 * mag;
    s->lo = floor(lo / step) * step;
    s->hi = ceil(hi / step) * step;
    return step;
}

/* A tick's label: few digits, no "-0" (a value within a thousandth of a step of 0 is 0). */
static void tick_text(double v, double step, char *out, size_t n)
{
    if (fabs(v) < step * 1e-3) v = 0;
    snprintf(out, n, "%.4g", v);
}

static bool ticks(nf_buf *b, const nf_svg_scale *s, double at, bool x)
{
    double step = s->log ? 10 : 0;
    if (!s->log) {
        nf_svg_scale t = *s;
        step = nf_svg_scale_nice(&t, s->lo, s->hi, false, s->p0, s->p1);
    }
    bool ok = true;
    for (int i = 0; ok && i <= 64; i++) {
        double v = s->log ? s->lo * pow(10, i) : s->lo + step * i;
        if (s->log ? v > s->hi * (1 + 1e-9) : v > s->hi + step * 1e-6) break;
        double p = nf_svg_at(s, v);
        char label[32];
        tick_text(v, s->log ? 0 : step, label, sizeof label);
        if (x)
            ok = nf_svg_printf(b,
                               "<line class=\"tick\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                               "<text class=\"tl\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                               p, at, p, at + 5, p, at + 18, label);
        else
            ok = nf_svg_printf(b,
                               "<line class=\"tick\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                               "<text class=\"tl\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                               at - 5, p, at, p, at - 8, p + 4, label);
    }
    return ok;
}

bool nf_svg_axis_x(nf_buf *b, const nf_svg_scale *s, double at, const char *title)
{
    bool ok = nf_svg_printf(b, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", s->p0, at,
                            s->p1, at);
    ok = ok && ticks(b, s, at, true);
    ok = ok && nf_svg_printf(b, "<text class=\"at\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (s->p0 + s->p1) / 2,
                             at + 38);
    return ok && nf_svg_text(b, title) && nf_svg_printf(b, "</text>\n");
}

bool nf_svg_axis_y(nf_buf *b, const nf_svg_scale *s, double at, const char *title)
{
    bool ok = nf_svg_printf(b, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", at, s->p0,
                            at, s->p1);
    ok = ok && ticks(b, s, at, false);
    double mid = (s->p0 + s->p1) / 2;
    ok = ok && nf_svg_printf(b,
                             "<text class=\"at\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                             "transform=\"rotate(-90 %.1f %.1f)\">",
                             at - 52, mid, at - 52, mid);
    return ok && nf_svg_text(b, title) && nf_svg_printf(b, "</text>\n");
}

void nf_svg_colour(double t, char out[8])
{
    /* five stops of a perceptually ordered palette (viridis' ends and quartiles) */
    static const unsigned char stops[5][3] = {{68, 1, 84},
                                              {59, 82, 139},
                                              {33, 145, 140},
                                              {94, 201, 98},
                                              {253, 231, 37}};
    if (!(t > 0)) t = 0; /* NaN too */
    if (t > 1) t = 1;
    double x = t * 4;
    int i = x >= 4 ? 3 : (int)x;
    double f = x - i;
    unsigned c[3];
    for (int k = 0; k < 3; k++) c[k] = (unsigned)lround(stops[i][k] + f * (stops[i + 1][k] - stops[i][k]));
    snprintf(out, 8, "#%02x%02x%02x", c[0] & 0xff, c[1] & 0xff, c[2] & 0xff);
}
