/* A small SVG writer for the report page (report_page.h, docs/ninfer-inspect.md "The report
 * page"): text appended to a growable buffer, every name escaped for HTML and SVG, numbers in a
 * fixed notation (the page is the same bytes for the same report on every machine), and the axes
 * of a chart with their ticks.  No plotting dependency. */
#ifndef NINFER_CLI_SVG_H
#define NINFER_CLI_SVG_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"

/* Text appended to b: the printf family's; false when out of memory (b then holds what fitted). */
bool nf_svg_printf(nf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A name from a file, as text or an attribute value: escaped as the programs escape names
 * (docs/ninfer-inspect.md, "Names from files": control bytes, invalid UTF-8, bidi controls) and
 * then & < > " ' as character references. */
bool nf_svg_text(nf_buf *b, const char *s);

/* A chart's scale: data [lo, hi] onto pixels [p0, p1], linear or log10 (lo > 0). */
typedef struct nf_svg_scale {
    double lo, hi, p0, p1;
    bool log;
} nf_svg_scale;

/* Round [lo, hi] out to ticks (1, 2, 5 x 10^k; a log scale to powers of ten) and fill the scale;
 * lo == hi is widened.  Returns the tick step (linear) or 10 (log). */
double nf_svg_scale_nice(nf_svg_scale *s, double lo, double hi, bool log, double p0, double p1);
double nf_svg_at(const nf_svg_scale *s, double v);

/* The x axis along y = `at` and the y axis along x = `at` of a plot area, with ticks, their
 * labels and the axis title (with its unit). */
bool nf_svg_axis_x(nf_buf *b, const nf_svg_scale *s, double at, const char *title);
bool nf_svg_axis_y(nf_buf *b, const nf_svg_scale *s, double at, const char *title);

/* A colour of the sequential palette (dark violet to yellow, readable in grey) for t in [0, 1],
 * as "#rrggbb" into out[8]. */
void nf_svg_colour(double t, char out[8]);

#endif
