/* ninfer/verify.h - artifact verification at three levels (docs/ninfer-verify.md):
 * structure (framing, directory, files, object ranges, encoded sizes, references), words (every
 * code and scale legal, canonical padding, zero gaps between objects, after the JSON directory
 * and in the continuation headers), checksums (metadata.checksums, xxh3-128, a closed schema).
 * Every problem found is reported, not just the first. */
#ifndef NINFER_VERIFY_H
#define NINFER_VERIFY_H

#include <ninfer/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ninfer/error.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nf_verify_level {
    NF_VERIFY_STRUCTURE = 1, /* --quick */
    NF_VERIFY_WORDS = 2,
    NF_VERIFY_CHECKSUMS = 3 /* default: everything */
} nf_verify_level;

typedef struct nf_problem {
    char *object; /* object ID, or NULL for the artifact as a whole */
    char *check;  /* "structure", "words" or "checksums" */
    char *message;
} nf_problem;

typedef struct nf_verify_report {
    bool valid;
    uint64_t objects_checked;
    uint64_t checksums_checked; /* object and directory digests compared (0: none recorded) */
    nf_problem *problems;
    size_t count;
    size_t capacity;
} nf_verify_report;

/* Verify the artifact at path.  Returns NF_OK when verification ran to a verdict (valid or
 * not, see report->valid); NF_ERR_IO / NF_ERR_NOMEM when the entry file itself cannot be read
 * (then err says why and the report is empty).  A missing or foreign part is a problem of the
 * artifact, not a system error.  NF_ERR_USAGE: require_checksums below the checksums level. */
NF_API nf_status nf_verify_artifact(const char *path, nf_verify_level level, nf_verify_report *report, nf_error *err);

/* Options of nf_verify_artifact_with (zero-initialise, then set what you need). */
typedef struct nf_verify_options {
    nf_verify_level level; /* 0 means NF_VERIFY_CHECKSUMS */
    /* Threads for the words and checksums levels, which check objects in parallel: 0 means one
     * per online CPU.  The report (problems, their order, counters, verdict) is the same for
     * every thread count. */
    unsigned threads;
    /* Require the integrity record (for CI gates): metadata.checksums present with a digest for
     * every object and for the directory; each one missing is a problem of check "checksums".
     * Without it an artifact that records no (or fewer) checksums can still be valid: metadata is
     * an open object, so renaming the member "checksums" is not an error by itself.  Needs
     * level NF_VERIFY_CHECKSUMS (NF_ERR_USAGE otherwise).  Added last, after threads. */
    bool require_checksums;
} nf_verify_options;

/* nf_verify_artifact with options; opt NULL means the defaults.  nf_verify_artifact is this
 * with {level, threads = 1, require_checksums = false}. */
NF_API nf_status nf_verify_artifact_with(const char *path, const nf_verify_options *opt, nf_verify_report *report,
                                         nf_error *err);
NF_API void nf_verify_report_free(nf_verify_report *report);
/* Adds a problem to a report (and marks it invalid), as the checks above do: object (NULL for
 * the artifact as a whole) and check name ("structure", "words", "checksums", or a caller's own,
 * e.g. "against" of nf_verify_against in ninfer/convert.h, which re-derives the objects through
 * the planner), and a printf-style message, cut at NF_ERROR_MESSAGE_MAX; a message that starts
 * with "object '<object>': " has that part dropped (the object is a field of its own).  NF_ERR_NOMEM when the problem cannot be stored (the report is unchanged). */
NF_API nf_status nf_verify_report_add(nf_verify_report *r, const char *object, const char *check, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#ifdef __cplusplus
}
#endif
#endif
