/* What `rmqns --version` and `rmqns-admin --version` print: the
 * project's version, then the commit it was built from (when the build
 * could tell), the build type and the compiler. */
#ifndef RMQNS_VERSION_H
#define RMQNS_VERSION_H

#include <stdio.h>

/* "PROGRAM 0.1.0 (commit 1a2b3c4d5e6f, debugoptimized build, gcc 12.2.0)\n" */
void version_print(FILE *f, const char *program);

#endif
