/* Module interface of outputs (docs/library.md, "Modules and headers"): every name a run writes
 * beside its output OUT (base name B, in OUT's directory), formed and recognised in this one
 * place, so that the writer that makes a name and the finders that read it back (stale files,
 * the check that no output is an input) cannot drift apart:
 *
 *   B                              the entry (the artifact, or ninfer-dequant's file)
 *   B.part-NNNN                    a part (4 or more digits, docs/artifact.md 1)
 *   B.conversion.json              ninfer-convert's report
 *   B.entry-staged                 a scale-out task's staged entry (docs/scale-out.md)
 *   B.entry.receipt.json, B.part-NNNN.receipt.json   a scale-out task's receipts
 *   .B.lock                        the output's lock (out_lock.h)
 *   .X.<pid>@<host>.XXXXXX.tmp     a temp file of X, X being any of the names above but the lock
 *   .X.<pid>@<host>.XXXXXX.old     X set aside by an overwriting run (a second hard link)
 *
 * <pid> is the creating process in decimal and <host> nf_outputs_host(): a later run tells the
 * files of a killed process from those of a live one, and never judges another host's process
 * (docs/ninfer-convert.md, "Interrupted runs and stale files").  A name without "@<host>"
 * (earlier versions) is taken for this host's. */
#ifndef NINFER_OUTPUTS_OUT_NAMES_H
#define NINFER_OUTPUTS_OUT_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* The longest host name kept in temp names (nf_outputs_host). */
#define NF_OUTPUTS_HOST_MAX 63
/* This host's name as temp names carry it: gethostname's, each character that is not a letter,
 * digit or '-' made '-', at most NF_OUTPUTS_HOST_MAX characters ("unknown" when unreadable). */
const char *nf_outputs_host(void);

/* ---------------------------------------------------------------- forming */
/* mkstemp in the directory of `dest`, named ".<base>.<pid>@<host>.XXXXXX.tmp" (XXXXXX: mkstemp's
 * six letters and digits); path_out gets the name (malloc'ed).  Returns fd or -1 with errno set.
 * An open fault point of the I/O shim (common/io.h). */
int nf_outputs_temp(const char *dest, char **path_out);
/* The same with another suffix than ".tmp". */
int nf_outputs_temp_as(const char *dest, const char *suffix, char **path_out);
/* A second hard link of `target` beside it, named ".<base>.<pid>@<host>.XXXXXX<suffix>" (XXXXXX
 * random, retried while the name exists); path_out gets the name (malloc'ed).  Returns 0 or an
 * errno value.  A link fault point.  The writer sets replaced files aside this way (suffix
 * ".old"): such a name never exists without the complete old file behind it. */
int nf_outputs_link_aside(const char *target, const char *suffix, char **path_out);
/* "<entry_name>.part-NNNN" (at least 4 digits), malloc'ed; NULL without memory. */
char *nf_outputs_part_name(const char *entry_name, size_t index);
/* "<output>.conversion.json", the report's place (malloc'ed; NULL without memory). */
char *nf_outputs_report_name(const char *output);
/* "<output>.entry-staged", a scale-out task's staged entry (malloc'ed; NULL without memory). */
char *nf_outputs_staged_name(const char *output);
/* A scale-out receipt (malloc'ed; NULL without memory): "<output>.entry.receipt.json" for the
 * entry (part NULL), "<part>.receipt.json" for the part file `part`. */
char *nf_outputs_receipt_name(const char *output, const char *part);
/* ".<base>.lock" in dest's directory (malloc'ed; NULL without memory). */
char *nf_outputs_lock_name(const char *dest);

/* ---------------------------------------------------------------- recognising */
/* The inverse of the owner part of the temp and set-aside names: `tail` is what follows
 * ".<X>." in a directory entry, "<pid>@<host>.XXXXXX<suffix>" (or "<pid>.XXXXXX<suffix>").
 * Returns the pid (> 0), points *suffix at what follows the six random characters and sets
 * *local (if not NULL) to whether the host is this one; -1 when tail is not of that form. */
long nf_outputs_owner(const char *tail, const char **suffix, bool *local);

typedef enum nf_outputs_kind {
    NF_OUTPUTS_OTHER = 0, /* no name a run writes for OUT */
    NF_OUTPUTS_ENTRY,     /* B */
    NF_OUTPUTS_PART,      /* B.part-NNNN */
    NF_OUTPUTS_REPORT,    /* B.conversion.json */
    NF_OUTPUTS_STAGED,    /* B.entry-staged */
    NF_OUTPUTS_RECEIPT,   /* B.entry.receipt.json, B.part-NNNN.receipt.json */
    NF_OUTPUTS_LOCK,      /* .B.lock */
    NF_OUTPUTS_TEMP,      /* .X.<pid>@<host>.XXXXXX.tmp */
    NF_OUTPUTS_ASIDE      /* .X.<pid>@<host>.XXXXXX.old */
} nf_outputs_kind;

/* Whose temp or set-aside name it is: X of ".X.<pid>@<host>.XXXXXX.tmp". */
typedef enum nf_outputs_of {
    NF_OUTPUTS_OF_ENTRY,         /* B itself */
    NF_OUTPUTS_OF_PART,          /* B.part-NNNN */
    NF_OUTPUTS_OF_PART_RECEIPT,  /* B.part-NNNN.receipt.json */
    NF_OUTPUTS_OF_REPORT,        /* B.conversion.json */
    NF_OUTPUTS_OF_ENTRY_RECEIPT, /* B.entry.receipt.json */
    NF_OUTPUTS_OF_STAGED         /* B.entry-staged */
} nf_outputs_of;

typedef struct nf_outputs_name {
    nf_outputs_kind kind;
    nf_outputs_of of; /* TEMP and ASIDE: whose; else NF_OUTPUTS_OF_ENTRY */
    long pid;         /* TEMP and ASIDE: the owner (> 0); else 0 */
    bool local;       /* TEMP and ASIDE: the owner's host is this one */
} nf_outputs_name;

/* What the directory entry `name` is to the output whose base name is `base` (out may be NULL);
 * returns the kind.  A name of the dotted form (".B...") is read only as one: a temp, a
 * set-aside name or the lock. */
nf_outputs_kind nf_outputs_recognise(const char *name, const char *base, nf_outputs_name *out);

#endif
