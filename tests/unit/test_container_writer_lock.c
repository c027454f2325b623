/* One lock per output (docs/security.md 1.3; docs/security.md 7.1, F3): a writer holds the lock
 * file ".<name>.lock" beside its entry from nf_writer_begin (before its first temp file) until
 * its commit or rollback, so two writers of one output never publish a mixed set: the second
 * one's begin fails (NF_ERR_IO, naming the lock file) and creates nothing.  The lock file is
 * removed when the lock is let go (also when a begin fails later on); a left-over one (a run
 * killed with SIGKILL) is taken over.  A writer in another process (fork) holds it the same way.
 * Destinations that are not regular files are refused before anything is created (F5). */
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>

#include "common/io.h"
#include "outputs/out_lock.h"
#include "test_container_util.h"

#define OK(expr)                                                         \
    do {                                                                 \
        nf_status s_ = (expr);                                           \
        cr_assert_eq(s_, NF_OK, "%s -> %d: %s", #expr, s_, err.message); \
    } while (0)

#define DATA_BYTES 30000u

/* A writer of one resource over path, split at max_file_bytes (0: one file), not yet begun. */
static nf_writer *planned(const char *path, uint64_t max_file_bytes, bool overwrite)
{
    nf_writer_options opt = {max_file_bytes, NULL, overwrite, true};
    nf_writer *w = NULL;
    nf_error err;
    OK(nf_writer_create(path, &opt, &w, &err));
    size_t idx = 0;
    OK(nf_writer_add_resource(w, "data", DATA_BYTES, &idx, &err));
    return w;
}

static void fill(nf_writer *w, uint8_t seed)
{
    nf_error err;
    uint8_t *data = malloc(DATA_BYTES);
    cr_assert_not_null(data);
    for (size_t i = 0; i < DATA_BYTES; i++) data[i] = (uint8_t)(i * 7u + seed);
    OK(nf_writer_write(w, 0, 0, data, DATA_BYTES, &err));
    free(data);
}

/* Names in dir that are temp files (".tmp") or the lock. */
static size_t count_suffix(const char *dir, const char *suffix)
{
    size_t n, found = 0;
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", tc_listing(dir, &n));
    for (char *save = NULL, *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        size_t l = strlen(t), s = strlen(suffix);
        if (l >= s && strcmp(t + l - s, suffix) == 0) found++;
    }
    return found;
}

Test(writer_lock, second_writer_refused_while_first_holds)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "m.ninfer"), lock = tc_join(dir, ".m.ninfer.lock");
    nf_error err;
    nf_writer *a = planned(out.s, 16384, true);
    OK(nf_writer_begin(a, &err));
    cr_assert(tc_exists(lock.s), "the lock file exists while a writer holds it");
    size_t temps = count_suffix(dir, ".tmp");
    cr_assert_eq(temps, 3, "the first writer's entry and two parts");

    /* another writer of the same output, overwrite or not, in this process (another open file) */
    for (int ow = 0; ow < 2; ow++) {
        nf_writer *b = planned(out.s, 0, ow == 1);
        cr_assert_eq(nf_writer_begin(b, &err), NF_ERR_IO, "the second begin must fail");
        cr_assert_not_null(strstr(err.message, "another process is writing"), "%s", err.message);
        cr_assert_not_null(strstr(err.message, ".m.ninfer.lock"), "the message names the lock file: %s", err.message);
        /* the holder the lock file records: this process, on this host */
        char who[128];
        snprintf(who, sizeof who, ", process %ld on host %s)", (long)getpid(), nf_outputs_host());
        cr_assert_not_null(strstr(err.message, who), "the message names the holder (%s): %s", who, err.message);
        cr_assert_eq(count_suffix(dir, ".tmp"), temps, "the refused writer created no temp file");
        nf_writer_free(b);
        cr_assert(tc_exists(lock.s), "a refused writer leaves the holder's lock alone");
    }

    fill(a, 1);
    OK(nf_writer_finish(a, &err));
    cr_assert(!tc_exists(lock.s), "the lock file goes with the lock");
    nf_writer_free(a);

    /* free for the next writer */
    nf_writer *c = planned(out.s, 0, true);
    OK(nf_writer_begin(c, &err));
    fill(c, 2);
    OK(nf_writer_publish(c, &err));
    cr_assert(tc_exists(lock.s), "held from begin until the commit (a report is published in between)");
    OK(nf_writer_commit(c, &err));
    cr_assert(!tc_exists(lock.s));
    nf_writer_free(c);
    OK(tc_structure(out.s, &err));
    tc_rmtree(dir);
    free(dir);
}

Test(writer_lock, released_by_abort_free_and_failed_begin)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "m.ninfer"), lock = tc_join(dir, ".m.ninfer.lock");
    nf_error err;
    /* abort */
    nf_writer *a = planned(out.s, 0, false);
    OK(nf_writer_begin(a, &err));
    nf_writer_abort(a);
    cr_assert(!tc_exists(lock.s));
    nf_writer_free(a);
    /* free without finishing */
    a = planned(out.s, 0, false);
    OK(nf_writer_begin(a, &err));
    nf_writer_free(a);
    tc_assert_dir_empty(dir);
    /* a begin that fails after taking the lock: an existing entry, no overwrite */
    tc_write(out.s, "old", 3);
    a = planned(out.s, 0, false);
    cr_assert_eq(nf_writer_begin(a, &err), NF_ERR_IO);
    cr_assert_not_null(strstr(err.message, "refusing to overwrite"), "%s", err.message);
    cr_assert(!tc_exists(lock.s));
    nf_writer_free(a);
    unlink(out.s);
    /* rollback after publish */
    a = planned(out.s, 0, false);
    OK(nf_writer_begin(a, &err));
    fill(a, 3);
    OK(nf_writer_publish(a, &err));
    nf_writer_abort(a);
    nf_writer_free(a);
    tc_assert_dir_empty(dir);
    tc_rmtree(dir);
    free(dir);
}

Test(writer_lock, leftover_lock_file_taken_over)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "m.ninfer"), lock = tc_join(dir, ".m.ninfer.lock");
    nf_error err;
    tc_write(lock.s, "", 0); /* what a run killed with SIGKILL leaves: unlocked */
    nf_writer *a = planned(out.s, 0, false);
    OK(nf_writer_begin(a, &err));
    fill(a, 4);
    OK(nf_writer_finish(a, &err));
    nf_writer_free(a);
    cr_assert(!tc_exists(lock.s), "the next writer removes it");
    cr_assert(tc_exists(out.s));
    tc_rmtree(dir);
    free(dir);
}

Test(writer_lock, lock_file_that_is_not_a_regular_file)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "m.ninfer"), lock = tc_join(dir, ".m.ninfer.lock"), elsewhere = tc_join(dir, "x");
    nf_error err;
    cr_assert_eq(symlink(elsewhere.s, lock.s), 0);
    nf_writer *a = planned(out.s, 0, false);
    cr_assert_eq(nf_writer_begin(a, &err), NF_ERR_USAGE);
    cr_assert_not_null(strstr(err.message, ".m.ninfer.lock"), "%s", err.message);
    nf_writer_free(a);
    cr_assert(!tc_exists(elsewhere.s), "never created through the link");
    struct stat st;
    cr_assert(lstat(lock.s, &st) == 0 && S_ISLNK(st.st_mode), "the link stays");
    unlink(lock.s);
    cr_assert_eq(mkfifo(lock.s, 0600), 0);
    a = planned(out.s, 0, false);
    cr_assert_eq(nf_writer_begin(a, &err), NF_ERR_USAGE, "a FIFO as the lock file: refused without blocking");
    nf_writer_free(a);
    cr_assert(lstat(lock.s, &st) == 0 && S_ISFIFO(st.st_mode));
    tc_rmtree(dir);
    free(dir);
}

/* A writer in a child process holds the lock; the parent's writer is refused until the child
 * has finished, then goes ahead and replaces the child's artifact as a whole. */
Test(writer_lock, held_by_another_process)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "m.ninfer"), lock = tc_join(dir, ".m.ninfer.lock");
    int to_child[2], to_parent[2];
    cr_assert_eq(pipe(to_child), 0);
    cr_assert_eq(pipe(to_parent), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        nf_error err;
        nf_writer_options opt = {16384, NULL, true, true};
        nf_writer *w = NULL;
        size_t idx;
        uint8_t data[DATA_BYTES] = {0};
        char c = 0;
        int ok = nf_writer_create(out.s, &opt, &w, &err) == NF_OK &&
                 nf_writer_add_resource(w, "data", DATA_BYTES, &idx, &err) == NF_OK &&
                 nf_writer_begin(w, &err) == NF_OK;
        c = ok ? 'b' : 'x';
        if (write(to_parent[1], &c, 1) != 1) _exit(2);
        if (read(to_child[0], &c, 1) != 1) _exit(3); /* until the parent has tried */
        ok = ok && nf_writer_write(w, idx, 0, data, DATA_BYTES, &err) == NF_OK && nf_writer_finish(w, &err) == NF_OK;
        nf_writer_free(w);
        _exit(ok ? 0 : 1);
    }
    char c = 0;
    cr_assert_eq(read(to_parent[0], &c, 1), 1);
    cr_assert_eq(c, 'b', "the child's begin failed");
    nf_error err;
    nf_writer *w = planned(out.s, 0, true);
    cr_assert_eq(nf_writer_begin(w, &err), NF_ERR_IO, "refused while the child holds the lock");
    cr_assert_not_null(strstr(err.message, "another process is writing"), "%s", err.message);
    nf_writer_free(w);
    cr_assert(tc_exists(lock.s));
    cr_assert_eq(write(to_child[1], "g", 1), 1);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    cr_assert(!tc_exists(lock.s));
    cr_assert(tc_exists(tc_join(dir, "m.ninfer.part-0002").s), "the child's split artifact");
    w = planned(out.s, 0, true);
    OK(nf_writer_begin(w, &err));
    fill(w, 5);
    OK(nf_writer_finish(w, &err));
    nf_writer_free(w);
    OK(tc_structure(out.s, &err));
    size_t n;
    cr_assert_str_eq(tc_listing(dir, &n), "m.ninfer", "one whole artifact: the old parts went with it");
    close(to_child[0]);
    close(to_child[1]);
    close(to_parent[0]);
    close(to_parent[1]);
    tc_rmtree(dir);
    free(dir);
}

/* F5 through the library: a destination (entry or part) that is not a regular file is refused
 * with NF_ERR_USAGE before anything is created, overwrite or not. */
Test(writer_lock, special_destinations_refused)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "m.ninfer"), part = tc_join(dir, "m.ninfer.part-0001");
    nf_error err;
    for (int ow = 0; ow < 2; ow++) {
        cr_assert_eq(mkfifo(out.s, 0600), 0);
        nf_writer *w = planned(out.s, 0, ow == 1);
        cr_assert_eq(nf_writer_begin(w, &err), NF_ERR_USAGE);
        cr_assert_not_null(strstr(err.message, "a FIFO, not a regular file"), "%s", err.message);
        nf_writer_free(w);
        struct stat st;
        cr_assert(lstat(out.s, &st) == 0 && S_ISFIFO(st.st_mode));
        unlink(out.s);
        cr_assert_eq(symlink("/proc/self/fd/1", part.s), 0);
        w = planned(out.s, 16384, ow == 1);
        cr_assert_eq(nf_writer_begin(w, &err), NF_ERR_USAGE);
        cr_assert_not_null(strstr(err.message, "m.ninfer.part-0001 is a symbolic link"), "%s", err.message);
        nf_writer_free(w);
        size_t n;
        cr_assert_str_eq(tc_listing(dir, &n), "m.ninfer.part-0001", "nothing was created");
        unlink(part.s);
    }
    tc_rmtree(dir);
    free(dir);
}

/* A holder letting go makes its lock exclusive for an instant (nf_outputs_unlock), so a scale-out task
 * taking it shared at that moment used to be refused (exit 3) by a task that was just leaving:
 * a lock found busy is looked at again for about 0.1 s (NF_OUTPUTS_LOCK_BUSY_TRIES), so the leaving
 * holder is waited out, while a holder that stays still refuses. */
typedef struct leaving {
    int fd;
    char *path;
} leaving;

static void *leave_soon(void *arg)
{
    leaving *l = arg;
    nanosleep(&(struct timespec){0, 20000000}, NULL); /* 20 ms */
    unlink(l->path);
    close(l->fd);
    return NULL;
}

Test(writer_lock, shared_lock_waits_out_a_leaving_holder)
{
    char *dir = tc_tmpdir();
    char dest[4200], lock[4300];
    snprintf(dest, sizeof dest, "%s/out.ninfer", dir);
    snprintf(lock, sizeof lock, "%s/.out.ninfer.lock", dir);
    for (int stays = 0; stays < 2; stays++) {
        int hold = open(lock, O_RDWR | O_CREAT, 0644);
        cr_assert_geq(hold, 0);
        cr_assert_eq(flock(hold, LOCK_EX), 0);
        leaving l = {hold, lock};
        pthread_t th;
        if (!stays) cr_assert_eq(pthread_create(&th, NULL, leave_soon, &l), 0);
        int fd = -1;
        char *path = NULL;
        int e = nf_outputs_lock(dest, true, &fd, &path);
        if (!stays) {
            pthread_join(th, NULL);
            cr_assert_eq(e, 0, "a holder leaving within the wait: %s", strerror(e));
            nf_outputs_unlock(fd, path);
            free(path);
        } else {
            cr_assert_eq(e, EWOULDBLOCK, "a holder that stays: %s", strerror(e));
            unlink(lock);
            close(hold);
        }
    }
    tc_rmtree(dir);
    free(dir);
}
