/* ninfer-convert's --dry-run output (docs/ninfer-convert.md): the plan and the budget as tables,
 * and the warning when the plan re-encodes tensors that are already encoded (convert.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#include "common/utf8.h"

#include "cli.h"
#include "convert.h"
#include "table.h"

/* ---------------------------------------------------------------- dry run */
/* The budget's candidates that a tensor cannot take, and why (docs/recipes.md, "Budgets"): a
 * line per tensor and reason, the candidates named in order. */
static int print_budget_excluded(const json_t *b)
{
    size_t i, k, j;
    json_t *a, *x, *y;
    bool title = false;
    json_array_foreach(json_object_get(b, "allocation"), i, a)
    {
        const json_t *out = json_object_get(a, "not_candidates");
        json_array_foreach(out, k, x)
        {
            const char *why = json_string_value(json_object_get(x, "why"));
            bool seen = false; /* a reason already printed with an earlier candidate */
            for (j = 0; j < k && !seen; j++)
                seen = !strcmp(why, json_string_value(json_object_get(json_array_get(out, j), "why")));
            if (seen) continue;
            if (!title) printf("not candidates:\n");
            title = true;
            printf("  %s:", nf_cli_name(json_string_value(json_object_get(a, "tensor"))).s);
            const char *sep = " ";
            json_array_foreach(out, j, y) if (j >= k && !strcmp(why, json_string_value(json_object_get(y, "why"))))
            {
                printf("%s%s (%s)", sep, json_string_value(json_object_get(y, "format")),
                       json_string_value(json_object_get(y, "method")));
                sep = ", ";
            }
            printf(": %s\n", nf_cli_name(why).s);
        }
    }
    return NF_EXIT_OK;
}

/* The budget's allocation (docs/recipes.md, "Budgets"): per tensor its pick and the runner-up,
 * then what the budget used. */
static int print_budget(const nf_cli *cli, const json_t *b)
{
    nf_table t;
    nf_table_init(&t, "", "lllrrrllrr",
                  (const char *[]){"tensor", "format", "method", "bytes", "est. error", "rows", "runner-up", "method",
                                   "bytes", "est. error"});
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(b, "allocation"), i, a)
    {
        nf_table_cell(&t, "%s", nf_cli_name(json_string_value(json_object_get(a, "tensor"))).s);
        nf_table_cell(&t, "%s", json_string_value(json_object_get(a, "format")));
        nf_table_cell(&t, "%s", json_string_value(json_object_get(a, "method")));
        nf_table_cell(&t, "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(a, "bytes")));
        nf_table_cell(&t, "%.6g", json_real_value(json_object_get(a, "estimated_error")));
        nf_table_cell(&t, "%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT,
                      json_integer_value(json_object_get(a, "rows_measured")),
                      json_integer_value(json_object_get(a, "rows")));
        const json_t *r = json_object_get(a, "runner_up");
        if (json_is_object(r)) {
            nf_table_cell(&t, "%s", json_string_value(json_object_get(r, "format")));
            nf_table_cell(&t, "%s", json_string_value(json_object_get(r, "method")));
            nf_table_cell(&t, "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(r, "bytes")));
            nf_table_cell(&t, "%.6g", json_real_value(json_object_get(r, "estimated_error")));
        } else {
            for (int k = 0; k < 4; k++) nf_table_cell(&t, "-");
        }
    }
    printf("\nbudget allocation:\n");
    bool printed = nf_table_print(&t, stdout);
    nf_table_free(&t);
    if (!printed) return nf_cli_error(cli, NF_ERR_NOMEM, "out of memory for the budget's table");
    const json_t *lim = json_object_get(b, "budget");
    const json_t *bpw = json_object_get(lim, "bits_per_weight");
    char given[64];
    if (bpw) snprintf(given, sizeof given, "%g bits per weight", json_real_value(bpw));
    else
        snprintf(given, sizeof given, "%" JSON_INTEGER_FORMAT " bytes",
                 json_integer_value(json_object_get(lim, "bytes")));
    const json_t *w = json_object_get(b, "weights");
    printf("budget: %s; used %" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT " bytes over %" JSON_INTEGER_FORMAT
           " tensors (%.4f bits per weight; all tensors %" JSON_INTEGER_FORMAT " bytes)\n",
           given, json_integer_value(json_object_get(b, "used_bytes")),
           json_integer_value(json_object_get(b, "capacity_bytes")), json_integer_value(json_object_get(b, "tensors")),
           json_real_value(json_object_get(b, "bits_per_weight")),
           json_integer_value(json_object_get(b, "tensor_bytes")));
    double est = json_real_value(json_object_get(b, "estimated_error"));
    double lb = json_real_value(json_object_get(b, "lower_bound"));
    const json_t *objective = json_object_get(b, "objective"); /* with a sensitivity file */
    const char *what = objective ? "objective (each tensor's estimated error times its sensitivity)"
                                 : "estimated weighted squared error";
    double val = objective ? json_real_value(objective) : est;
    if (objective)
        printf("estimated weighted squared error %.6g; sensitivity factors from source '%s'\n", est,
               nf_cli_name(json_string_value(json_object_get(b, "sensitivity"))).s);
    if (json_is_true(json_object_get(b, "optimal")))
        printf("%s %.6g: the least of any allocation within the budget\n", what, val);
    else printf("%s %.6g: at most %.3g above the least (search stopped at its node limit)\n", what, val, val - lb);
    json_int_t rows = json_integer_value(json_object_get(json_object_get(b, "sampling"), "rows_per_tensor"));
    char rule[64] = "every row";
    if (rows) snprintf(rule, sizeof rule, "at most %" JSON_INTEGER_FORMAT " rows a tensor, evenly spaced", rows);
    char weights[160] = "uniform";
    if (!json_is_string(w))
        snprintf(weights, sizeof weights, "the importance of imatrix '%.120s'",
                 nf_cli_name(json_string_value(json_object_get(w, "imatrix"))).s);
    printf("weights: %s; measured on %s\n", weights, rule);
    return print_budget_excluded(b);
}

/* Every column as wide as its widest cell (table.h): ids, dtypes (a GGUF's IQ2_XXS) and
 * shapes have no bound, and fixed widths let a long one push the rest of its line out of line. */
int convert_print_plan(const nf_cli *cli, const json_t *plan)
{
    const json_t *objs = json_object_get(plan, "objects");
    nf_table t;
    nf_table_init(
        &t, "", "llllllrrl",
        (const char *[]){"object", "shape", "dtype", "format", "layout", "method", "bytes", "bits/w", "note"});
    size_t i;
    json_t *o;
    json_array_foreach((json_t *)objs, i, o)
    {
        nf_table_cell(&t, "%s", nf_cli_name(json_string_value(json_object_get(o, "id"))).s);
        if (strcmp(json_string_value(json_object_get(o, "kind")), "resource") == 0) {
            nf_table_cell(&t, "-");
            nf_table_cell(&t, "-");
            nf_table_cell(&t, "(resource)");
            nf_table_cell(&t, "raw_bytes_v1");
            nf_table_cell(&t, "-");
            nf_table_cell(&t, "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(o, "bytes")));
            nf_table_cell(&t, "-");
            nf_table_cell(&t, "%s", "");
            continue;
        }
        char shape[64] = "[";
        size_t k;
        json_t *d;
        json_array_foreach(json_object_get(o, "shape"), k, d)
        {
            char part[24];
            snprintf(part, sizeof part, "%s%" JSON_INTEGER_FORMAT, k ? "," : "", json_integer_value(d));
            strncat(shape, part, sizeof shape - strlen(shape) - 2);
        }
        strcat(shape, "]");
        const char *note = json_string_value(json_object_get(o, "note"));
        nf_table_cell(&t, "%s", shape);
        nf_table_cell(&t, "%s", nf_cli_name(json_string_value(json_object_get(o, "source_dtype"))).s);
        nf_table_cell(&t, "%s", nf_cli_name(json_string_value(json_object_get(o, "format"))).s);
        nf_table_cell(&t, "%s", nf_cli_name(json_string_value(json_object_get(o, "layout"))).s);
        nf_table_cell(&t, "%s", nf_cli_name(json_string_value(json_object_get(o, "method"))).s);
        nf_table_cell(&t, "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(o, "bytes")));
        nf_table_cell(&t, "%.3f", json_real_value(json_object_get(o, "bits_per_weight")));
        nf_table_cell(&t, "%s", note ? nf_cli_line(note).s : "");
    }
    bool printed = nf_table_print(&t, stdout);
    nf_table_free(&t);
    if (!printed) return nf_cli_error(cli, NF_ERR_NOMEM, "out of memory for the plan's table");
    const json_t *tot = json_object_get(plan, "totals");
    printf("total: %" JSON_INTEGER_FORMAT " objects, %" JSON_INTEGER_FORMAT " elements, %" JSON_INTEGER_FORMAT
           " bytes\n",
           json_integer_value(json_object_get(tot, "objects")), json_integer_value(json_object_get(tot, "elements")),
           json_integer_value(json_object_get(tot, "bytes")));
    /* each method program the plan starts, its command and its files' digests */
    json_t *mp;
    json_array_foreach(json_object_get(plan, "method_programs"), i, mp)
    {
        printf("method program %s:", nf_cli_name(json_string_value(json_object_get(mp, "name"))).s);
        size_t k;
        json_t *w;
        json_array_foreach(json_object_get(mp, "command"), k, w) printf(" %s", nf_cli_line(json_string_value(w)).s);
        printf("\n");
        json_array_foreach(json_object_get(mp, "files"), k, w)
            printf("  sha256 %s  %s\n", json_string_value(json_object_get(w, "sha256")),
                   nf_cli_line(json_string_value(json_object_get(w, "path"))).s);
    }
    const json_t *budget = json_object_get(plan, "budget");
    return budget ? print_budget(cli, budget) : NF_EXIT_OK;
}

/* One warning line when the plan re-encodes tensors that are already encoded (GGUF blocks, F8
 * codes without a scale): quick mode does it by default, and it is lossy (docs/security.md 7.1, M5); each
 * object's note says what (--dry-run's note column, "note" in --json). */
void convert_warn_reencoded(const nf_cli *cli, const nf_plan *plan)
{
    size_t n = 0;
    char *first = NULL;
    for (size_t i = 0; i < nf_plan_object_count(plan); i++) {
        json_t *o = nf_plan_describe_object(plan, i); /* one at a time: a plan may hold 10^5 */
        const char *note = json_string_value(json_object_get(o, "note"));
        /* not a quantized weight's import or the requantizing a rule or --requantize asked for,
         * nor a GGUF tensor's blocks imported as they are */
        const char *method = json_string_value(json_object_get(o, "method"));
        bool imported = method && !strcmp(method, "import_encoded");
        if (note && !imported && !json_object_get(o, "dialect") && !n++)
            first = strdup(json_string_value(json_object_get(o, "id")));
        json_decref(o);
    }
    if (n)
        nf_cli_warn(cli,
                    "%zu tensor%s already encoded in the checkpoint (GGUF blocks, F8 codes) %s encoded again "
                    "instead of imported: lossy (first: '%s'; see the note column of --dry-run and "
                    "docs/ninfer-convert.md)",
                    n, n == 1 ? "" : "s", n == 1 ? "is" : "are", first ? first : "?");
    free(first);
}
