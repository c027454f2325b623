/* placeholder: replaced by the real program */
#include "cli.h"
int main(int argc, char **argv) { return nf_cli_placeholder(argc, argv, "ninfer"); }
