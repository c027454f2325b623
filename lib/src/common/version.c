#include <ninfer/ninfer.h>

#include "ninfer_version.h"

const char *nf_version(void) { return NINFER_VERSION_STRING; }
