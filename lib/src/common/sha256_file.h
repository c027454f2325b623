/* The SHA-256 of a whole file, read in bounded blocks (docs/provenance.md): what `sha256sum`
 * prints and what the Hugging Face hub shows for an LFS file.  Shared by the conversion's
 * provenance, ninfer-verify --against and ninfer-convert --attest. */
#ifndef NINFER_COMMON_SHA256_FILE_H
#define NINFER_COMMON_SHA256_FILE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include <ninfer/error.h>

#define NF_SHA256_HEX 64

/* Hashes the regular file at path (symbolic links followed, as a checkpoint's files are read),
 * `shown` naming it in messages.  *bytes gets the bytes hashed and hex the 64 lowercase digits.
 * With expect (not UINT64_MAX) the file must have exactly that many bytes, before and after the
 * read (NF_ERR_INVALID "... it changed"); stop or cancel (either may be NULL: a caller's give-up
 * and the user's interrupt) set non-zero stops the read (NF_ERR_IO "interrupted"). */
nf_status nf_sha256_file(const char *path, const char *shown, uint64_t expect, volatile int *stop, volatile int *cancel,
                         uint64_t *bytes, char hex[NF_SHA256_HEX + 1], nf_error *err);

/* The same for a file planned as `planned` (its stat when the conversion was planned), through
 * the digest cache (common/sha256_cache.h): the file opened must be that one, unchanged (device,
 * inode, size, times), and still be after the read, else NF_ERR_INVALID "changed since ...".  A
 * file whose identity has an entry is not read (*hit true); one hashed is recorded.  For the
 * conversion's sources; a verifier reads. */
nf_status nf_sha256_file_cached(const char *path, const char *shown, const struct stat *planned, volatile int *stop,
                                volatile int *cancel, uint64_t *bytes, char hex[NF_SHA256_HEX + 1], bool *hit,
                                nf_error *err);

#endif
