/* Linked into every executable of the sanitized build only (NINFER_SANITIZE, CMakeLists.txt;
 * tests/README.md, "Sanitized runs and the cost of a run").
 *
 * LeakSanitizer's check at exit reads every writable segment of every loaded module, among them
 * the sanitizer runtimes' own .bss (GCC's libasan and libubsan: about 5.6 and 6.1 MB, never
 * touched by a short run).  Each untouched page it reads costs a page fault, and on the virtual
 * machines CI runs on about 3000 of them took 40 ms of every process's exit.  Asking the kernel
 * at start to map those segments in one call per segment (MADV_POPULATE_READ, Linux 5.14) maps
 * the shared zero page without one fault a page.  Best effort: where the call is refused
 * (an older kernel) the pages fault in as before; nothing a test checks depends on it. */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* linux/mman.h since 5.14; older headers lack it */
#endif

static int nf_san_populate_module(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t page = *(const uintptr_t *)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W) || !ph->p_memsz) continue;
        uintptr_t begin = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
        uintptr_t end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + page - 1) & ~(page - 1);
        /* whole 2 MiB stretches inside: one huge zero page each, where THP is on "madvise" */
        const uintptr_t huge = (uintptr_t)2 << 20;
        const uintptr_t hb = (begin + huge - 1) & ~(huge - 1), he = end & ~(huge - 1);
        if (he > hb) (void)madvise((void *)hb, he - hb, MADV_HUGEPAGE);
        (void)madvise((void *)begin, end - begin, MADV_POPULATE_READ);
    }
    return 0;
}

__attribute__((constructor)) static void nf_san_prefault(void)
{
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return;
    uintptr_t p = (uintptr_t)page;
    dl_iterate_phdr(nf_san_populate_module, &p);
}
