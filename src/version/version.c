/* The version line (version.h), from meson's project version and the
 * generated build_info.h. */
#include "rmqns/version.h"

#include "build_info.h"

#ifndef RMQNS_VERSION
#define RMQNS_VERSION "unknown"
#endif

#if defined(__clang__)
#define VERSION_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define VERSION_COMPILER "gcc " __VERSION__
#else
#define VERSION_COMPILER "an unknown compiler"
#endif

void version_print(FILE *f, const char *program)
{
	const char *commit = RMQNS_BUILD_COMMIT;

	fprintf(f, "%s %s (%s%s%s%s build, %s)\n", program, RMQNS_VERSION, *commit ? "commit " : "",
		commit, *commit ? ", " : "", RMQNS_BUILD_TYPE, VERSION_COMPILER);
}
