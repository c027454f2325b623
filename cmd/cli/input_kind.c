/* What a path on the command line is, by content (cli.h, nf_cli_input_kind): ninfer-inspect's
 * FILE and ninfer-diff's A and B. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/escape.h>

#include "cli.h"

/* The answers are cli.h's; the checks below are in their order. */
nf_cli_input nf_cli_input_kind(const char *path, nf_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0) return NF_INPUT_UNREADABLE;
    if (S_ISDIR(st.st_mode)) return NF_INPUT_CHECKPOINT;
    if (!S_ISREG(st.st_mode)) {
        nf_error_set(err, NF_ERR_IO, "%s: not a regular file (a device, FIFO or socket)", nf_esc(path).s);
        return NF_INPUT_NOT_A_FILE;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return NF_INPUT_UNREADABLE;
    unsigned char head[64];
    ssize_t n;
    do {
        n = pread(fd, head, sizeof head, 0);
    } while (n < 0 && errno == EINTR);
    int e = errno;
    close(fd);
    if (n < 0) {
        nf_error_errno(err, e, "%s: cannot read", nf_esc(path).s);
        return NF_INPUT_NOT_A_FILE;
    }
    if ((uint64_t)st.st_size < sizeof head && (uint64_t)n != (uint64_t)st.st_size) {
        nf_error_set(err, NF_ERR_IO,
                     "%s: not a regular file (it reports %llu bytes and reads %s%zd: a "
                     "pseudo-file such as /proc's)",
                     nf_esc(path).s, (unsigned long long)st.st_size, (size_t)n == sizeof head ? "at least " : "", n);
        return NF_INPUT_NOT_A_FILE;
    }
    return n >= 7 && memcmp(head, "NINFER\0", 7) == 0 ? NF_INPUT_ARTIFACT : NF_INPUT_CHECKPOINT;
}
