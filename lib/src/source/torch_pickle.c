/* A pickle interpreter for torch.save's data.pkl (torch_pickle.h, docs/security.md 2.6).
 *
 * Written from the pickle protocol's opcode definitions (Python's pickletools documents each) and
 * from what torch.save writes: a state dict (collections.OrderedDict) of tensors, each
 * torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata])
 * with the storage a persistent id ('storage', torch.FloatStorage, key, location, numel).  Only
 * those opcodes run, only the allow-listed globals are recognised -- by name, as inert values: no
 * code is ever looked up or called -- and every count is capped before memory is taken for it. */
#include "source/torch_pickle.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/fail.h"
#include "common/utf8.h"

typedef enum pv_kind {
    PV_NONE,
    PV_BOOL,
    PV_INT,
    PV_FLOAT,
    PV_STR,
    PV_TUPLE,
    PV_LIST,
    PV_DICT,
    PV_GLOBAL,
    PV_STORAGE,
    PV_TENSOR,
    PV_MARK
} pv_kind;

/* The globals a weights-only load allows (the callables and classes torch.save's pickles name). */
typedef enum pv_global {
    G_ORDERED_DICT,
    G_REBUILD_TENSOR_V2,
    G_REBUILD_PARAMETER,
    G_SIZE,
    G_STORAGE /* a typed storage class: its dtype in the value */
} pv_global;

typedef struct pv {
    pv_kind kind;
    uint32_t depth;  /* containers nested inside, this one included */
    int64_t i;       /* INT, BOOL; GLOBAL: pv_global; STORAGE: numel */
    nf_st_dtype dt;  /* GLOBAL G_STORAGE, STORAGE, TENSOR */
    char *s;         /* STR */
    uint32_t key;    /* STORAGE: the STR value of its key (shared, never copied) */
    bool walked;     /* DICT: already walked (a dict reached twice is refused) */
    uint32_t *items; /* TUPLE, LIST, DICT (key, value pairs); TENSOR: [storage, offset, size, stride] */
    uint32_t n, cap;
} pv;

typedef struct vm {
    const uint8_t *p;
    size_t n, at, op_at;
    const char *where;
    nf_error *err;
    pv *v;
    uint32_t nv, vcap;
    uint32_t *stack;
    uint32_t sp, scap;
    uint32_t *memo; /* UINT32_MAX: empty */
    uint32_t memo_cap;
    uint64_t items; /* container items held, all containers together */
    uint64_t chars; /* string bytes copied, all strings together */
    bool legacy;    /* the stream before PyTorch 1.6: persistent ids carry a sixth field */
} vm;

static nf_status bad(vm *m, const char *fmt, const char *what)
{
    return nf_error_set(m->err, NF_ERR_INVALID, "%s: byte %zu: %s%s", m->where, m->op_at, fmt, what ? what : "");
}

static nf_status new_value(vm *m, pv_kind k, uint32_t *out)
{
    if (m->nv >= NF_TORCH_PICKLE_MAX_VALUES) return bad(m, "more objects than the reader's cap", NULL);
    if (m->nv == m->vcap) {
        uint32_t cap = m->vcap ? m->vcap * 2 : 256;
        pv *g = realloc(m->v, (size_t)cap * sizeof *g);
        if (!g) return nf_common_nomem_in(m->err, m->where);
        m->v = g;
        m->vcap = cap;
    }
    memset(&m->v[m->nv], 0, sizeof m->v[m->nv]);
    m->v[m->nv].kind = k;
    m->v[m->nv].depth = 1;
    *out = m->nv++;
    return NF_OK;
}

static nf_status push(vm *m, uint32_t id)
{
    if (m->sp == m->scap) {
        if (m->scap >= NF_TORCH_PICKLE_MAX_VALUES) return bad(m, "a stack deeper than the reader's cap", NULL);
        uint32_t cap = m->scap ? m->scap * 2 : 256;
        uint32_t *g = realloc(m->stack, (size_t)cap * sizeof *g);
        if (!g) return nf_common_nomem_in(m->err, m->where);
        m->stack = g;
        m->scap = cap;
    }
    m->stack[m->sp++] = id;
    return NF_OK;
}

static nf_status pop(vm *m, uint32_t *id)
{
    if (m->sp == 0 || m->v[m->stack[m->sp - 1]].kind == PV_MARK) return bad(m, "the stack is empty", NULL);
    *id = m->stack[--m->sp];
    return NF_OK;
}

static nf_status top(vm *m, uint32_t *id)
{
    if (m->sp == 0 || m->v[m->stack[m->sp - 1]].kind == PV_MARK) return bad(m, "the stack is empty", NULL);
    *id = m->stack[m->sp - 1];
    return NF_OK;
}

/* The position of the topmost MARK; the items above it are stack[mark + 1 .. sp). */
static nf_status find_mark(vm *m, uint32_t *mark)
{
    for (uint32_t k = m->sp; k-- > 0;)
        if (m->v[m->stack[k]].kind == PV_MARK) {
            *mark = k;
            return NF_OK;
        }
    return bad(m, "no MARK on the stack", NULL);
}

static nf_status add_item(vm *m, uint32_t c, uint32_t item)
{
    pv *v = &m->v[c];
    if (++m->items > NF_TORCH_PICKLE_MAX_ITEMS) return bad(m, "more container items than the reader's cap", NULL);
    if (v->n == v->cap) {
        uint32_t cap = v->cap ? v->cap * 2 : 4;
        uint32_t *g = realloc(v->items, (size_t)cap * sizeof *g);
        if (!g) return nf_common_nomem_in(m->err, m->where);
        v->items = g;
        v->cap = cap;
    }
    v->items[v->n++] = item;
    uint32_t d = m->v[item].depth + 1;
    if (d > v->depth) v->depth = d;
    if (v->depth > NF_TORCH_PICKLE_MAX_DEPTH) return bad(m, "containers nested deeper than the reader's cap", NULL);
    return NF_OK;
}

/* A container of the items above the topmost MARK, which is removed. */
static nf_status collect(vm *m, pv_kind k, uint32_t *out)
{
    uint32_t mark = 0, c = 0;
    NF_TRY(find_mark(m, &mark));
    NF_TRY(new_value(m, k, &c));
    for (uint32_t j = mark + 1; j < m->sp; j++) NF_TRY(add_item(m, c, m->stack[j]));
    m->sp = mark;
    *out = c;
    return NF_OK;
}

static bool take(vm *m, size_t k, const uint8_t **q)
{
    if (m->n - m->at < k) return false;
    *q = m->p + m->at;
    m->at += k;
    return true;
}

static uint64_t le(const uint8_t *q, unsigned k)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < k; i++) v |= (uint64_t)q[i] << (8 * i);
    return v;
}

static nf_status str_value(vm *m, uint64_t len, uint32_t *out)
{
    const uint8_t *q;
    if (len > m->n - m->at || !take(m, (size_t)len, &q)) return bad(m, "a string runs past the end", NULL);
    m->chars += len;
    if (m->chars > NF_TORCH_PICKLE_MAX_STRING_BYTES) return bad(m, "more string bytes than the reader's cap", NULL);
    NF_TRY(new_value(m, PV_STR, out));
    if (!(m->v[*out].s = strndup((const char *)q, (size_t)len))) return nf_common_nomem_in(m->err, m->where);
    if (strlen(m->v[*out].s) != len) return bad(m, "a string holds a NUL byte", NULL);
    return NF_OK;
}

/* The allow-listed globals, by module and name. */
static const struct {
    const char *module, *name;
    pv_global g;
    nf_st_dtype dt;
} GLOBALS[] = {
    {"collections", "OrderedDict", G_ORDERED_DICT, NF_ST_NONE},
    {"torch._utils", "_rebuild_tensor_v2", G_REBUILD_TENSOR_V2, NF_ST_NONE},
    {"torch._utils", "_rebuild_parameter", G_REBUILD_PARAMETER, NF_ST_NONE},
    {"torch", "Size", G_SIZE, NF_ST_NONE},
    {"torch", "FloatStorage", G_STORAGE, NF_ST_F32},
    {"torch", "HalfStorage", G_STORAGE, NF_ST_F16},
    {"torch", "BFloat16Storage", G_STORAGE, NF_ST_BF16},
    {"torch", "DoubleStorage", G_STORAGE, NF_ST_F64},
    {"torch", "LongStorage", G_STORAGE, NF_ST_I64},
    {"torch", "IntStorage", G_STORAGE, NF_ST_I32},
    {"torch", "ShortStorage", G_STORAGE, NF_ST_I16},
    {"torch", "CharStorage", G_STORAGE, NF_ST_I8},
    {"torch", "ByteStorage", G_STORAGE, NF_ST_U8},
    {"torch", "BoolStorage", G_STORAGE, NF_ST_BOOL},
};

static nf_status global_value(vm *m, const char *module, const char *name, uint32_t *out)
{
    for (size_t i = 0; i < sizeof GLOBALS / sizeof GLOBALS[0]; i++)
        if (!strcmp(module, GLOBALS[i].module) && !strcmp(name, GLOBALS[i].name)) {
            NF_TRY(new_value(m, PV_GLOBAL, out));
            m->v[*out].i = GLOBALS[i].g;
            m->v[*out].dt = GLOBALS[i].dt;
            return NF_OK;
        }
    char what[600];
    snprintf(what, sizeof what, "%.250s.%.250s", module, name);
    return bad(m, "global not allowed (a weights-only load refuses it; nothing is imported): ", what);
}

/* GLOBAL: "module\nname\n". */
static nf_status op_global(vm *m, uint32_t *out)
{
    const char *s = (const char *)m->p + m->at;
    const char *nl1 = memchr(s, '\n', m->n - m->at);
    const char *nl2 = nl1 ? memchr(nl1 + 1, '\n', m->n - m->at - (size_t)(nl1 + 1 - s)) : NULL;
    if (!nl1 || !nl2 || nl1 - s > 256 || nl2 - nl1 > 257 || memchr(s, 0, (size_t)(nl2 - s)))
        return bad(m, "GLOBAL without two short lines free of NUL bytes", NULL);
    char module[257], name[257];
    memcpy(module, s, (size_t)(nl1 - s));
    module[nl1 - s] = '\0';
    memcpy(name, nl1 + 1, (size_t)(nl2 - nl1 - 1));
    name[nl2 - nl1 - 1] = '\0';
    m->at += (size_t)(nl2 + 1 - s);
    return global_value(m, module, name, out);
}

static bool is_int(const vm *m, uint32_t id) { return m->v[id].kind == PV_INT; }

/* A persistent id ('storage', <storage class>, key, location, numel), and in the legacy stream a
 * sixth field, view_metadata, None unless the storage is a view of another (which is refused). */
static nf_status op_persid(vm *m, uint32_t pid, uint32_t *out)
{
    const pv *t = &m->v[pid];
    if (m->legacy && t->kind == PV_TUPLE && t->n == 6 && m->v[t->items[5]].kind != PV_NONE)
        return bad(m, "a storage that is a view of another storage (view_metadata): not read by this version", NULL);
    if (t->kind != PV_TUPLE || t->n != (m->legacy ? 6u : 5u) || m->v[t->items[0]].kind != PV_STR ||
        strcmp(m->v[t->items[0]].s, "storage") || m->v[t->items[1]].kind != PV_GLOBAL ||
        m->v[t->items[1]].i != G_STORAGE || m->v[t->items[2]].kind != PV_STR || !is_int(m, t->items[4]) ||
        m->v[t->items[4]].i < 0)
        return bad(m,
                   m->legacy ? "a persistent id that is not ('storage', <storage class>, key, location, numel, None)"
                             : "a persistent id that is not ('storage', <storage class>, key, location, numel)",
                   NULL);
    const uint32_t key = t->items[2];
    if (strlen(m->v[key].s) > NF_TORCH_PICKLE_MAX_KEY_BYTES)
        return bad(m, "a storage key longer than the reader's cap", NULL);
    NF_TRY(new_value(m, PV_STORAGE, out));
    pv *s = &m->v[*out];
    t = &m->v[pid];
    s->dt = m->v[t->items[1]].dt;
    s->i = m->v[t->items[4]].i;
    s->key = key;
    return NF_OK;
}

/* A tuple of non-negative ints (sizes, strides) of at most NF_SOURCE_MAX_RANK. */
static bool int_tuple(const vm *m, uint32_t id)
{
    const pv *t = &m->v[id];
    if (t->kind != PV_TUPLE || t->n > NF_SOURCE_MAX_RANK) return false;
    for (uint32_t k = 0; k < t->n; k++)
        if (!is_int(m, t->items[k]) || m->v[t->items[k]].i < 0) return false;
    return true;
}

static nf_status op_reduce(vm *m, uint32_t f, uint32_t args, uint32_t *out)
{
    const pv *fn = &m->v[f], *a = &m->v[args];
    if (fn->kind != PV_GLOBAL || a->kind != PV_TUPLE)
        return bad(m, "REDUCE of something not an allowed callable", NULL);
    switch ((pv_global)fn->i) {
    case G_ORDERED_DICT: /* torch.save builds it empty and fills it with SETITEMS */
        if (a->n != 0) return bad(m, "OrderedDict built from arguments (torch.save builds it empty)", NULL);
        return new_value(m, PV_DICT, out);
    case G_SIZE:
        if (a->n != 1 || !int_tuple(m, a->items[0])) return bad(m, "torch.Size of something not a tuple of ints", NULL);
        *out = a->items[0];
        return NF_OK;
    case G_REBUILD_PARAMETER:
        if (a->n < 1 || m->v[a->items[0]].kind != PV_TENSOR)
            return bad(m, "_rebuild_parameter of something not a tensor", NULL);
        *out = a->items[0];
        return NF_OK;
    case G_REBUILD_TENSOR_V2: {
        if ((a->n != 6 && a->n != 7) || m->v[a->items[0]].kind != PV_STORAGE || !is_int(m, a->items[1]) ||
            m->v[a->items[1]].i < 0 || !int_tuple(m, a->items[2]) || !int_tuple(m, a->items[3]) ||
            m->v[a->items[2]].n != m->v[a->items[3]].n)
            return bad(m,
                       "_rebuild_tensor_v2 takes (storage, offset, size, stride, requires_grad, hooks[, metadata]): "
                       "offset and sizes and strides non-negative ints, as many strides as sizes",
                       NULL);
        uint32_t t;
        NF_TRY(new_value(m, PV_TENSOR, &t));
        for (unsigned k = 0; k < 4; k++) NF_TRY(add_item(m, t, m->v[args].items[k]));
        *out = t;
        return NF_OK;
    }
    case G_STORAGE: break;
    }
    return bad(m, "REDUCE of a storage class", NULL);
}

static nf_status memo_put(vm *m, uint64_t slot)
{
    if (slot >= NF_TORCH_PICKLE_MAX_MEMO) return bad(m, "a memo slot past the reader's cap", NULL);
    if (slot >= m->memo_cap) {
        uint32_t cap = m->memo_cap ? m->memo_cap : 64;
        while (cap <= slot) cap *= 2;
        uint32_t *g = realloc(m->memo, (size_t)cap * sizeof *g);
        if (!g) return nf_common_nomem_in(m->err, m->where);
        for (uint32_t k = m->memo_cap; k < cap; k++) g[k] = UINT32_MAX;
        m->memo = g;
        m->memo_cap = cap;
    }
    uint32_t id = 0;
    NF_TRY(top(m, &id));
    m->memo[slot] = id;
    return NF_OK;
}

static nf_status memo_get(vm *m, uint64_t slot)
{
    if (slot >= m->memo_cap || m->memo[slot] == UINT32_MAX) return bad(m, "a memo slot never written", NULL);
    return push(m, m->memo[slot]);
}

/* One opcode; *done at STOP. */
static nf_status step(vm *m, bool *done, uint32_t *memo_next)
{
    const uint8_t *q;
    m->op_at = m->at;
    if (!take(m, 1, &q)) return bad(m, "the pickle ends without STOP", NULL);
    const uint8_t op = *q;
    uint32_t a = 0, b = 0, c = 0;
    switch (op) {
    case 0x80: /* PROTO */
        if (!take(m, 1, &q) || *q > 5) return bad(m, "an unknown protocol", NULL);
        return NF_OK;
    case 0x95: /* FRAME: a length to skip over; the opcodes follow */
        return take(m, 8, &q) ? NF_OK : bad(m, "a truncated FRAME", NULL);
    case '.': *done = true; return NF_OK;
    case '(': NF_TRY(new_value(m, PV_MARK, &a)); return push(m, a);
    case ')': NF_TRY(new_value(m, PV_TUPLE, &a)); return push(m, a);
    case ']': NF_TRY(new_value(m, PV_LIST, &a)); return push(m, a);
    case '}': NF_TRY(new_value(m, PV_DICT, &a)); return push(m, a);
    case 'N': NF_TRY(new_value(m, PV_NONE, &a)); return push(m, a);
    case 0x88:
    case 0x89:
        NF_TRY(new_value(m, PV_BOOL, &a));
        m->v[a].i = op == 0x88;
        return push(m, a);
    case 'K':
    case 'M':
    case 'J': {
        const unsigned k = op == 'K' ? 1 : op == 'M' ? 2 : 4;
        if (!take(m, k, &q)) return bad(m, "a truncated int", NULL);
        NF_TRY(new_value(m, PV_INT, &a));
        uint64_t u = le(q, k);
        m->v[a].i = op == 'J' ? (int64_t)(int32_t)(uint32_t)u : (int64_t)u;
        return push(m, a);
    }
    case 0x8a: { /* LONG1: little-endian two's complement of up to 8 bytes */
        if (!take(m, 1, &q)) return bad(m, "a truncated LONG1", NULL);
        const unsigned k = *q;
        if (k > 8 || !take(m, k, &q)) return bad(m, "a LONG1 of more than 8 bytes", NULL);
        uint64_t u = le(q, k);
        if (k > 0 && k < 8 && (q[k - 1] & 0x80)) u |= ~(uint64_t)0 << (8 * k);
        NF_TRY(new_value(m, PV_INT, &a));
        m->v[a].i = (int64_t)u;
        return push(m, a);
    }
    case 'G': /* BINFLOAT: kept as a value, never used */
        if (!take(m, 8, &q)) return bad(m, "a truncated BINFLOAT", NULL);
        NF_TRY(new_value(m, PV_FLOAT, &a));
        return push(m, a);
    case 'X':
    case 0x8c:
    case 0x8d: {
        const unsigned k = op == 'X' ? 4 : op == 0x8c ? 1 : 8;
        if (!take(m, k, &q)) return bad(m, "a truncated string length", NULL);
        NF_TRY(str_value(m, le(q, k), &a));
        return push(m, a);
    }
    case 'c': NF_TRY(op_global(m, &a)); return push(m, a);
    case 0x93: { /* STACK_GLOBAL: module and name strings on the stack */
        NF_TRY(pop(m, &b));
        NF_TRY(pop(m, &a));
        if (m->v[a].kind != PV_STR || m->v[b].kind != PV_STR) return bad(m, "STACK_GLOBAL of non-strings", NULL);
        NF_TRY(global_value(m, m->v[a].s, m->v[b].s, &c));
        return push(m, c);
    }
    case 'q':
    case 'r':
        if (!take(m, op == 'q' ? 1 : 4, &q)) return bad(m, "a truncated memo slot", NULL);
        return memo_put(m, le(q, op == 'q' ? 1 : 4));
    case 0x94:
        NF_TRY(memo_put(m, *memo_next));
        (*memo_next)++;
        return NF_OK; /* MEMOIZE */
    case 'h':
    case 'j':
        if (!take(m, op == 'h' ? 1 : 4, &q)) return bad(m, "a truncated memo slot", NULL);
        return memo_get(m, le(q, op == 'h' ? 1 : 4));
    case 't': NF_TRY(collect(m, PV_TUPLE, &a)); return push(m, a);
    case 'l': NF_TRY(collect(m, PV_LIST, &a)); return push(m, a);
    case 0x85:
    case 0x86:
    case 0x87: {
        const unsigned k = op - 0x84u;
        uint32_t items[3];
        for (unsigned j = k; j-- > 0;) NF_TRY(pop(m, &items[j]));
        NF_TRY(new_value(m, PV_TUPLE, &a));
        for (unsigned j = 0; j < k; j++) NF_TRY(add_item(m, a, items[j]));
        return push(m, a);
    }
    case 'Q':
        NF_TRY(pop(m, &a));
        NF_TRY(op_persid(m, a, &b));
        return push(m, b);
    case 'R':
        NF_TRY(pop(m, &b));
        NF_TRY(pop(m, &a));
        NF_TRY(op_reduce(m, a, b, &c));
        return push(m, c);
    case 'b': /* BUILD: a state dict's _metadata, a parameter's state: not part of the weights */
        NF_TRY(pop(m, &a));
        return top(m, &b);
    case 'a': /* APPEND */
        NF_TRY(pop(m, &b));
        NF_TRY(top(m, &a));
        if (m->v[a].kind != PV_LIST) return bad(m, "APPEND to a non-list", NULL);
        return add_item(m, a, b);
    case 'e':   /* APPENDS */
    case 'u': { /* SETITEMS */
        uint32_t mark = 0;
        NF_TRY(find_mark(m, &mark));
        if (mark == 0) return bad(m, "no container under the MARK", NULL);
        const uint32_t target = m->stack[mark - 1];
        const uint32_t count = m->sp - mark - 1;
        if (m->v[target].kind != (op == 'e' ? PV_LIST : PV_DICT) || (op == 'u' && count % 2))
            return bad(m, op == 'e' ? "APPENDS to a non-list" : "SETITEMS to a non-dict, or of an odd count", NULL);
        for (uint32_t j = mark + 1; j < m->sp; j++) NF_TRY(add_item(m, target, m->stack[j]));
        m->sp = mark;
        return NF_OK;
    }
    case 's': /* SETITEM */
        NF_TRY(pop(m, &c));
        NF_TRY(pop(m, &b));
        NF_TRY(top(m, &a));
        if (m->v[a].kind != PV_DICT) return bad(m, "SETITEM to a non-dict", NULL);
        NF_TRY(add_item(m, a, b));
        return add_item(m, a, c);
    default: {
        char what[8];
        snprintf(what, sizeof what, "0x%02X", op);
        return bad(m, "an opcode torch.save does not write: ", what);
    }
    }
}

/* ---------------------------------------------------------------- the tensors */
typedef struct collector {
    vm *m;
    nf_torch_tensors *out;
    size_t cap;
    uint64_t name_bytes; /* names and keys copied, all tensors together */
} collector;

static nf_status add_tensor(collector *c, const char *name, uint32_t id)
{
    vm *m = c->m;
    const pv *t = &m->v[id], *st = &m->v[t->items[0]], *size = &m->v[t->items[2]], *stride = &m->v[t->items[3]];
    if (c->out->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        if (cap > NF_SOURCE_MAX_TENSORS) cap = NF_SOURCE_MAX_TENSORS;
        if (c->out->n >= cap)
            return nf_error_set(m->err, NF_ERR_INVALID, "%s: more than %u tensors", m->where, NF_SOURCE_MAX_TENSORS);
        nf_torch_tensor *g = realloc(c->out->t, cap * sizeof *g);
        if (!g) return nf_common_nomem_in(m->err, m->where);
        c->out->t = g;
        c->cap = cap;
    }
    const char *key = m->v[st->key].s;
    c->name_bytes += strlen(name) + strlen(key) + 2;
    if (c->name_bytes > NF_TORCH_PICKLE_MAX_NAME_BYTES)
        return nf_error_set(m->err, NF_ERR_INVALID,
                            "%s: tensor '%s': the names and storage keys of the tensors "
                            "exceed the reader's cap of %llu bytes",
                            m->where, name, (unsigned long long)NF_TORCH_PICKLE_MAX_NAME_BYTES);
    nf_torch_tensor *r = &c->out->t[c->out->n];
    memset(r, 0, sizeof *r);
    r->name = strdup(name);
    r->storage_key = strdup(key);
    if (!r->name || !r->storage_key) {
        free(r->name);
        free(r->storage_key);
        return nf_common_nomem_in(m->err, m->where);
    }
    c->out->n++;
    r->dtype = st->dt;
    r->storage_numel = (uint64_t)st->i;
    r->offset = (uint64_t)m->v[t->items[1]].i;
    r->rank = size->n;
    for (uint32_t k = 0; k < size->n; k++) {
        r->size[k] = (uint64_t)m->v[size->items[k]].i;
        r->stride[k] = (uint64_t)m->v[stride->items[k]].i;
    }
    return NF_OK;
}

/* The dict's tensors under prefix (dicts inside give dotted names).  The memo can make a dict hold
 * itself, or two entries hold one dict (each level doubling the walk): a dict is walked once, and a
 * second path to it refused, so the walk visits each value at most once. */
static nf_status walk(collector *c, uint32_t dict, const char *prefix, unsigned depth)
{
    vm *m = c->m;
    if (depth > NF_TORCH_PICKLE_MAX_DEPTH)
        return nf_error_set(m->err, NF_ERR_INVALID, "%s: dicts nested deeper than %u", m->where,
                            NF_TORCH_PICKLE_MAX_DEPTH);
    if (m->v[dict].walked)
        return nf_error_set(m->err, NF_ERR_INVALID,
                            "%s: dict '%s' is reached a second time (a dict holding itself, or shared through the "
                            "memo): not a state dict",
                            m->where, prefix);
    m->v[dict].walked = true;
    const pv *d = &m->v[dict];
    for (uint32_t k = 0; k + 1 < d->n; k += 2) {
        const pv *key = &m->v[d->items[k]];
        const uint32_t val = d->items[k + 1];
        size_t bad_at = 0;
        if (key->kind != PV_STR)
            return nf_error_set(m->err, NF_ERR_INVALID, "%s: a state dict key that is not a string", m->where);
        if (!key->s[0]) return nf_error_set(m->err, NF_ERR_INVALID, "%s: an empty key in dict '%s'", m->where, prefix);
        if (!nf_utf8_valid((const uint8_t *)key->s, strlen(key->s), &bad_at))
            return nf_error_set(m->err, NF_ERR_INVALID, "%s: a key of dict '%s' is not UTF-8 (byte %zu of the key)",
                                m->where, prefix, bad_at);
        const size_t plen = strlen(prefix), klen = strlen(key->s), len = plen + (plen ? 1 : 0) + klen;
        if (len > NF_SOURCE_MAX_NAME_BYTES)
            return nf_error_set(m->err, NF_ERR_INVALID, "%s: tensor name '%.64s...' longer than %u bytes", m->where,
                                key->s, NF_SOURCE_MAX_NAME_BYTES);
        char name[NF_SOURCE_MAX_NAME_BYTES + 1];
        memcpy(name, prefix, plen);
        if (plen) name[plen] = '.';
        memcpy(name + plen + (plen ? 1 : 0), key->s, klen);
        name[len] = '\0';
        if (m->v[val].kind == PV_TENSOR) NF_TRY(add_tensor(c, name, val));
        else if (m->v[val].kind == PV_DICT) NF_TRY(walk(c, val, name, depth + 1));
        else if (m->v[val].kind != PV_NONE && m->v[val].kind != PV_INT && m->v[val].kind != PV_FLOAT &&
                 m->v[val].kind != PV_STR && m->v[val].kind != PV_BOOL)
            return nf_error_set(m->err, NF_ERR_INVALID, "%s: entry '%s' is neither a tensor nor a dict of tensors",
                                m->where, name);
    }
    return NF_OK;
}

void nf_source_torch_tensors_free(nf_torch_tensors *ts)
{
    if (!ts) return;
    for (size_t i = 0; i < ts->n; i++) {
        free(ts->t[i].name);
        free(ts->t[i].storage_key);
    }
    free(ts->t);
    ts->t = NULL;
    ts->n = 0;
}

static void vm_free(vm *m)
{
    for (uint32_t k = 0; k < m->nv; k++) {
        free(m->v[k].s);
        free(m->v[k].items);
    }
    free(m->v);
    free(m->stack);
    free(m->memo);
}

/* Runs one pickle from p[0]: *result its value (of kind want), *used its bytes through STOP. */
static nf_status run(vm *m, pv_kind want, const char *what, uint32_t *result, size_t *used)
{
    nf_status st = NF_OK;
    bool done = false;
    uint32_t memo_next = 0;
    if (m->n > NF_TORCH_PICKLE_MAX_BYTES) m->n = NF_TORCH_PICKLE_MAX_BYTES;
    while (st == NF_OK && !done) st = step(m, &done, &memo_next);
    if (st == NF_OK && (m->sp != 1 || m->v[m->stack[0]].kind != want))
        st = nf_error_set(m->err, NF_ERR_INVALID, "%s: the pickle does not build one %s", m->where, what);
    if (st == NF_OK) {
        *result = m->stack[0];
        *used = m->at;
    }
    return st;
}

nf_status nf_source_torch_pickle(const uint8_t *p, size_t n, const char *where, bool legacy, size_t *used,
                                 nf_torch_tensors *out, nf_error *err)
{
    memset(out, 0, sizeof *out);
    if (!legacy && n > NF_TORCH_PICKLE_MAX_BYTES)
        return nf_error_set(err, NF_ERR_INVALID, "%s: %zu bytes of pickle, more than the reader's cap of %llu", where,
                            n, (unsigned long long)NF_TORCH_PICKLE_MAX_BYTES);
    vm m = {.p = p, .n = n, .where = where, .err = err, .legacy = legacy};
    uint32_t result = 0;
    nf_status st = run(&m, PV_DICT, "dict (a state dict of tensors)", &result, used);
    if (st == NF_OK && !legacy && m.at != n)
        st = nf_error_set(err, NF_ERR_INVALID, "%s: byte %zu: %zu bytes after STOP", where, m.at, n - m.at);
    if (st == NF_OK) {
        collector c = {&m, out, 0, 0};
        st = walk(&c, result, "", 0);
    }
    vm_free(&m);
    if (st != NF_OK) nf_source_torch_tensors_free(out);
    return st;
}

nf_status nf_source_torch_sys_info(const uint8_t *p, size_t n, const char *where, size_t *used, nf_error *err)
{
    vm m = {.p = p, .n = n, .where = where, .err = err, .legacy = true};
    uint32_t d = 0;
    nf_status st = run(&m, PV_DICT, "dict (the stream's sys_info)", &d, used);
    bool little = false;
    for (uint32_t k = 0; st == NF_OK && k + 1 < m.v[d].n; k += 2) {
        const pv *key = &m.v[m.v[d].items[k]], *val = &m.v[m.v[d].items[k + 1]];
        if (key->kind == PV_STR && !strcmp(key->s, "little_endian")) little = val->kind == PV_BOOL && val->i == 1;
    }
    if (st == NF_OK && !little)
        st = nf_error_set(err, NF_ERR_INVALID,
                          "%s: sys_info does not say little_endian: True (the storages' bytes are read little-endian)",
                          where);
    vm_free(&m);
    return st;
}

nf_status nf_source_torch_keys(const uint8_t *p, size_t n, const char *where, size_t *used, char ***keys, size_t *nkeys,
                               nf_error *err)
{
    *keys = NULL;
    *nkeys = 0;
    vm m = {.p = p, .n = n, .where = where, .err = err, .legacy = true};
    uint32_t l = 0;
    nf_status st = run(&m, PV_LIST, "list (the stream's storage keys)", &l, used);
    if (st == NF_OK && m.v[l].n > NF_SOURCE_MAX_TENSORS)
        st = nf_error_set(err, NF_ERR_INVALID, "%s: more than %u storage keys", where, NF_SOURCE_MAX_TENSORS);
    if (st == NF_OK && !(*keys = calloc(m.v[l].n ? m.v[l].n : 1, sizeof **keys))) st = nf_common_nomem_in(err, where);
    for (uint32_t k = 0; st == NF_OK && k < m.v[l].n; k++) {
        const pv *key = &m.v[m.v[l].items[k]];
        if (key->kind != PV_STR || strlen(key->s) > NF_TORCH_PICKLE_MAX_KEY_BYTES)
            st = nf_error_set(err, NF_ERR_INVALID, "%s: storage key %u is not a string of at most %u bytes", where, k,
                              NF_TORCH_PICKLE_MAX_KEY_BYTES);
        else if (!((*keys)[k] = strdup(key->s))) st = nf_common_nomem_in(err, where);
        else (*nkeys)++;
    }
    vm_free(&m);
    return st;
}
