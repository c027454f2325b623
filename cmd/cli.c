#include "cli.h"
#include <stdio.h>
int nf_cli_placeholder(int argc, char **argv, const char *prog) { (void)argc; (void)argv; fprintf(stderr, "%s: not built yet\n", prog); return 2; }
