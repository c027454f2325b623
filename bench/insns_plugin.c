/* A qemu-user TCG plugin that counts the guest instructions a program executes (bench/insns.sh;
 * bench/README.md, "Instructions per value").  Each translated block adds its instruction count
 * to one counter every time it runs (an inline add, so counting costs little more than the
 * emulation itself); at exit the total goes to the file named by NINFER_INSNS_OUT (qemu-user
 * passes the guest's environment through), else to stderr.  Counts are exact for the code that
 * runs whole blocks; a block left early by a fault is counted whole, which the programs counted
 * here never do in their measured part.  An x86 REP string instruction counts once per
 * iteration (qemu runs each iteration as the block again): bench/insns.sh hides ERMS, so glibc's
 * copies do not use them.  Single-threaded guests only (the count is not atomic:
 * bench/insns.sh runs ninfer-bench with one thread).
 *
 * Debian's qemu-user ships no plugin header, so the few entry points of QEMU's plugin API
 * version 1 (QEMU 4.2 to 8.0) used here are declared below, as QEMU's documentation gives them;
 * qemu resolves them in its own executable when it loads this file (-plugin). */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr,
                                              uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);

#define EXPORT __attribute__((visibility("default")))

EXPORT extern int qemu_plugin_version;
EXPORT int qemu_plugin_version = 1;

static uint64_t executed;

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &executed, qemu_plugin_tb_n_insns(tb));
}

static void report(qemu_plugin_id_t id, void *userdata)
{
    (void)id;
    (void)userdata;
    const char *path = getenv("NINFER_INSNS_OUT");
    FILE *f = path && *path ? fopen(path, "w") : NULL;
    fprintf(f ? f : stderr, "insns: %" PRIu64 "\n", executed);
    if (f) fclose(f);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const void *info, int argc, char **argv);
EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const void *info, int argc, char **argv)
{
    (void)info;
    (void)argc;
    (void)argv;
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, report, NULL);
    return 0;
}
