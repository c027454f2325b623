#ifndef NINFER_CMD_CLI_H
#define NINFER_CMD_CLI_H
int nf_cli_placeholder(int argc, char **argv, const char *prog);
#endif
