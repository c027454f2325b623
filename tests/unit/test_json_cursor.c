/* The JSON cursor (lib/src/common/json_cursor.h): a text walked member by member and element by
 * element gives what jansson gives for the whole text -- the same tree, or the same refusal at
 * the same byte, line and column with the same reason -- for valid texts, for every kind of
 * syntax error the cursor reads itself (brackets, names, ':' and ','), and for errors inside the
 * values jansson reads; and a value is read without reading past it. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_cursor.h"

/* The text as the cursor reads it: the root container walked by the cursor -- and, with deep,
 * every container inside it too -- the values read whole; NULL when the cursor fails. */
static json_t *walk(nf_json_cursor *c, bool deep);

static json_t *walk_value(nf_json_cursor *c, bool deep)
{
    int b = nf_json_cursor_peek(c);
    if (deep && (b == '{' || b == '[')) return walk(c, true);
    return nf_json_cursor_value(c, JSON_REJECT_DUPLICATES);
}

static json_t *walk(nf_json_cursor *c, bool deep)
{
    int b = nf_json_cursor_peek(c);
    bool object = b == '{';
    json_t *out = object ? json_object() : json_array(), *seen = json_object();
    if (!out || !seen) { /* (out of memory: the test's own trees) */
        json_decref(out);
        json_decref(seen);
        return NULL;
    }
    int more = nf_json_cursor_open(c, object ? '{' : '[');
    while (more == 1) {
        json_t *key = NULL;
        if (object && !nf_json_cursor_key(c, seen, &key)) break;
        json_t *v = walk_value(c, deep);
        if (!v) {
            json_decref(key);
            break;
        }
        if (object) json_object_set_new(out, json_string_value(key), v);
        else json_array_append_new(out, v);
        json_decref(key);
        more = nf_json_cursor_next(c, object ? '}' : ']');
    }
    json_decref(seen);
    if (c->failed) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* jansson's reason without its " near '...'" quote. */
static void reason(const char *text, char *out, size_t size)
{
    const char *near = strstr(text, " near ");
    size_t n = near ? (size_t)(near - text) : strlen(text);
    snprintf(out, size, "%.*s", (int)n, text);
}

/* The cursor (shallow and deep) against jansson on the whole text. */
static void same_as_jansson(const char *text, size_t len)
{
    json_error_t je;
    json_t *want = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    for (int deep = 0; deep < 2; deep++) {
        nf_json_cursor c;
        cr_assert(nf_json_cursor_init(&c, text, len));
        json_t *got = walk(&c, deep);
        if (got && !nf_json_cursor_end(&c)) {
            json_decref(got);
            got = NULL;
        }
        if (want) {
            cr_assert_not_null(got, "%s: jansson reads it, the cursor (deep %d) fails at byte %d: %s", text, deep,
                               c.error.position, c.error.text);
            cr_assert(json_equal(got, want), "%s: the cursor (deep %d) reads another tree", text, deep);
            cr_assert_eq(c.pos, len, "%s: the cursor stopped at %zu of %zu", text, c.pos, len);
        } else {
            cr_assert_null(got, "%s: jansson refuses it (%s), the cursor (deep %d) reads it", text, je.text, deep);
            char a[200], b[200];
            reason(je.text, a, sizeof a);
            reason(c.error.text, b, sizeof b);
            cr_expect_str_eq(b, a, "%s (deep %d): the reason '%s', jansson's '%s'", text, deep, b, a);
            cr_expect_eq(c.error.position, je.position, "%s (deep %d): byte %d, jansson's %d", text, deep,
                         c.error.position, je.position);
            cr_expect_eq(c.error.line, je.line, "%s (deep %d): line %d, jansson's %d", text, deep, c.error.line,
                         je.line);
            cr_expect_eq(c.error.column, je.column, "%s (deep %d): column %d, jansson's %d", text, deep,
                         c.error.column, je.column);
            cr_expect_not(c.nomem, "%s: a syntax error taken for memory", text);
        }
        json_decref(got);
    }
    json_decref(want);
}

#define SAME(lit) same_as_jansson(lit, sizeof(lit) - 1)

Test(json_cursor, valid_texts_read_as_jansson_reads_them)
{
    SAME("{}");
    SAME("[]");
    SAME(" \t\r\n{ } \n");
    SAME("{\"a\":1,\"b\":[1,2,{\"c\":null}],\"d\":\"x\\u00e9y\\n\",\"e\":true,\"f\":-1.5e3,\"g\":false}");
    SAME(" {\n \"a\" : 1 ,\n \"b\" : [ 1 , 2 ] , \"c\" : { \"d\" : { } } }\n");
    SAME("[\"a\",1,0.5,false,null,{},[],[[[]]],{\"x\":{\"y\":[1]}}]");
    SAME("{\"\xc3\xa9\":\"\xe4\xb8\xad\",\"\\\"q\\\\\":\"\\\\\"}");
    SAME("[0,-0,1e5,1E+5,1e-5,123456789012345678,-9223372036854775808]");
    SAME("{\"a\":{\"a\":{\"a\":1}}}"); /* the same name in nested objects */
}

Test(json_cursor, errors_the_cursor_reads_are_jansson_s)
{
    SAME("{\"a\":1,\"a\":2}");       /* a duplicate name */
    SAME("{\"a\" 1}");               /* no ':' */
    SAME("{\"a\":1 \"b\":2}");       /* no ',' */
    SAME("[1 2]");
    SAME("{1:2}");                   /* not a name */
    SAME("{\"a\":1,}");              /* a trailing comma */
    SAME("[1,]");
    SAME("{\"a\":}");
    SAME("{\"a\":1");                /* the end of the text inside */
    SAME("{\"a\":");
    SAME("{\"a\"");
    SAME("{");
    SAME("[");
    SAME("[1,");
    SAME("[1,\n ");
    SAME("{\"a\":[");
    SAME("{\"a\":1} x");             /* something after the root */
    SAME("{\"a\":1}\n\n}");
    SAME("{\"a\":1x}");
    SAME("{\"a\":tru}");
    SAME("{\"a\":-}");
    SAME("{\"a\":@}");
    SAME("{\"a\":01}");
    SAME("{\"a\":1e999}");
    SAME("{\"a\":99999999999999999999}");
    SAME("{\"\\u0000\":1}");         /* NUL in a name */
    SAME("{\"a\\q\":1}");            /* a bad escape in a name */
    SAME("{\"a\":\"abc");            /* a string to the end of the text */
    SAME("{\"a\":\"x\ny\"}");        /* a raw newline in a string */
    SAME("{\"a\":\"\xff\"}");        /* invalid UTF-8 */
    SAME("{\"\xc3\xa9\xc3\xa9\":1, \"b\" 2}"); /* columns count characters, not bytes */
    SAME("{\"a\":\n\n  x}");         /* lines */
    SAME("{\"a\":1,\n\"b\":2,\n\"a\":3}");
}

Test(json_cursor, errors_inside_values_are_placed_in_the_whole_text)
{
    SAME("{\"a\":{\"b\":1,\"b\":2}}"); /* a duplicate in a value: JSON_REJECT_DUPLICATES */
    SAME("{\"a\":[1,\"\xff\"]}");
    SAME("{\"x\":[1,2],\n \"a\":[1,\n2 x]}");
    SAME("[{\"a\":1},\n{\"a\":1,\"a\":2}]");
    SAME("{\"a\":[1,2}");
    SAME("{\"a\":[{\"b\":}]}");
}

Test(json_cursor, a_value_is_read_to_its_end_only)
{
    /* a container, then more text that is not read */
    const char *text = "[1,[2,3],{\"a\":\"]\"}] trailing {";
    nf_json_cursor c;
    cr_assert(nf_json_cursor_init(&c, text, strlen(text)));
    cr_assert_eq(nf_json_cursor_open(&c, '['), 1);
    json_t *v = nf_json_cursor_value(&c, 0);
    cr_assert(json_is_integer(v) && json_integer_value(v) == 1);
    json_decref(v);
    cr_assert_eq(nf_json_cursor_next(&c, ']'), 1);
    v = nf_json_cursor_value(&c, 0);
    cr_assert(json_is_array(v) && json_array_size(v) == 2);
    cr_assert_eq(c.pos, strlen("[1,[2,3]"));
    json_decref(v);
    cr_assert_eq(nf_json_cursor_next(&c, ']'), 1);
    v = nf_json_cursor_value(&c, 0);
    cr_assert_str_eq(json_string_value(json_object_get(v, "a")), "]");
    json_decref(v);
    cr_assert_eq(nf_json_cursor_next(&c, ']'), 0);
    cr_assert_eq(c.pos, strlen("[1,[2,3],{\"a\":\"]\"}]"));
    cr_assert_eq(nf_json_cursor_peek(&c), 't');
    cr_assert_not(nf_json_cursor_end(&c));
    cr_assert_str_eq(c.error.text, "end of file expected");
    cr_assert_eq(c.error.position, (int)strlen("[1,[2,3],{\"a\":\"]\"}] trailing"));
    /* a failed cursor stays failed: the first failure is kept */
    cr_assert_eq(nf_json_cursor_peek(&c), -1);
    cr_assert_null(nf_json_cursor_value(&c, 0));
    cr_assert_str_eq(c.error.text, "end of file expected");
}

Test(json_cursor, a_scalar_is_read_on_its_bytes)
{
    /* "1" then "true" with no space between them would be one token to jansson's reader with
     * JSON_DISABLE_EOF_CHECK; the cursor reads each on its own bytes */
    const char *text = "[1,true,\"s\",null,-2.5]";
    nf_json_cursor c;
    cr_assert(nf_json_cursor_init(&c, text, strlen(text)));
    cr_assert_eq(nf_json_cursor_open(&c, '['), 1);
    const char *want[] = {"1", "true", "\"s\"", "null", "-2.5"};
    for (size_t i = 0; i < 5; i++) {
        json_t *v = nf_json_cursor_value(&c, 0);
        cr_assert_not_null(v, "element %zu: %s", i, c.error.text);
        char *s = json_dumps(v, JSON_ENCODE_ANY);
        cr_assert_str_eq(s, want[i]);
        free(s);
        json_decref(v);
        cr_assert_eq(nf_json_cursor_next(&c, ']'), i + 1 < 5 ? 1 : 0);
    }
    cr_assert(nf_json_cursor_end(&c));
}

Test(json_cursor, names_seen_are_those_of_one_object)
{
    const char *text = "{\"a\":1,\"b\":{\"a\":2},\"c\":3}";
    nf_json_cursor c;
    cr_assert(nf_json_cursor_init(&c, text, strlen(text)));
    json_t *seen = json_object(), *key = NULL;
    cr_assert_eq(nf_json_cursor_open(&c, '{'), 1);
    size_t n = 0;
    int more = 1;
    while (more == 1) {
        cr_assert(nf_json_cursor_key(&c, seen, &key), "%s", c.error.text);
        json_decref(key);
        json_decref(nf_json_cursor_value(&c, JSON_REJECT_DUPLICATES));
        n++;
        more = nf_json_cursor_next(&c, '}');
    }
    cr_assert_eq(more, 0);
    cr_assert_eq(n, 3);
    cr_assert_eq(json_object_size(seen), 3);
    cr_assert(nf_json_cursor_end(&c));
    json_decref(seen);
    /* without a set of names, a duplicate is the caller's to judge */
    text = "{\"a\":1,\"a\":2}";
    cr_assert(nf_json_cursor_init(&c, text, strlen(text)));
    cr_assert_eq(nf_json_cursor_open(&c, '{'), 1);
    cr_assert(nf_json_cursor_key(&c, NULL, &key));
    json_decref(key);
    json_decref(nf_json_cursor_value(&c, 0));
    cr_assert_eq(nf_json_cursor_next(&c, '}'), 1);
    cr_assert(nf_json_cursor_key(&c, NULL, &key));
    cr_assert_str_eq(json_string_value(key), "a");
    json_decref(key);
}

Test(json_cursor, the_wrong_container_is_refused)
{
    nf_json_cursor c;
    cr_assert(nf_json_cursor_init(&c, "[1]", 3));
    cr_assert_eq(nf_json_cursor_open(&c, '{'), -1);
    cr_assert_str_eq(c.error.text, "'{' expected");
    cr_assert_eq(c.error.position, 1);
    cr_assert(nf_json_cursor_init(&c, "  ", 2));
    cr_assert_eq(nf_json_cursor_open(&c, '['), -1);
    cr_assert_eq(c.error.position, 2);
    cr_assert(nf_json_cursor_init(&c, "", 0));
    cr_assert_null(nf_json_cursor_value(&c, 0));
    cr_assert_str_eq(c.error.text, "unexpected token");
}

Test(json_cursor, more_than_int_max_bytes_is_refused)
{
    nf_json_cursor c;
    cr_assert_not(nf_json_cursor_init(&c, "{}", (size_t)INT_MAX + 1));
    cr_assert(c.failed);
    cr_assert_eq(nf_json_cursor_peek(&c), -1);
    cr_assert_null(nf_json_cursor_value(&c, 0));
}

/* jansson out of memory at its N-th allocation: the cursor fails with a reason -- memory, when
 * it can tell (jansson's reader takes some failures of its own buffers for a bad token, as it
 * does reading a whole text) -- and leaks nothing (the sanitizer build checks the last). */
static size_t g_allocs, g_fail_at;
static void *failing_malloc(size_t n)
{
    if (++g_allocs == g_fail_at) return NULL;
    return malloc(n);
}

Test(json_cursor, out_of_memory_fails_cleanly)
{
    const char *text = "{\"a\":[1,2,{\"b\":\"c\"}],\"d\":\"e\",\"f\":{\"g\":null}}";
    size_t nomem = 0, failures = 0;
    for (g_fail_at = 1;; g_fail_at++) {
        cr_assert_lt(g_fail_at, 1000);
        g_allocs = 0;
        json_set_alloc_funcs(failing_malloc, free);
        nf_json_cursor c;
        nf_json_cursor_init(&c, text, strlen(text));
        json_t *got = walk(&c, false);
        bool end = got && nf_json_cursor_end(&c);
        json_set_alloc_funcs(malloc, free);
        json_decref(got);
        if (g_allocs < g_fail_at) { /* no allocation failed: the whole text was read */
            cr_assert(end, "%s", c.error.text);
            break;
        }
        /* (the test's own trees may be what failed) */
        if (c.failed) {
            failures++;
            nomem += c.nomem;
            cr_assert(c.error.text[0], "allocation %zu: a failure without a reason", g_fail_at);
        }
    }
    cr_assert_gt(failures, 0);
    cr_assert_gt(nomem, 0);
}
