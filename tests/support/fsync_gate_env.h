/* Starting a server with the fsync shim (fsync_gate.c) preloaded: the
 * variables are set only while the harness builds the child's
 * environment, so that the test process itself never waits at the gate. */
#ifndef RMQNS_TEST_FSYNC_GATE_ENV_H
#define RMQNS_TEST_FSYNC_GATE_ENV_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Calls start(arg) with LD_PRELOAD=lib and the shim's variables given as
 * name, value pairs in vars (NULL-terminated), then puts the environment
 * back. 0, or -1 when the environment could not be set (start not called). */
static inline int fsync_gate_start(const char *lib, const char *const *vars, void (*start)(void *), void *arg)
{
	const char *asan = getenv("ASAN_OPTIONS");
	char *saved = asan ? strdup(asan) : NULL, *opts = NULL;
	int rc = -1;

	/* the shim comes before the sanitizer runtime in a sanitized build */
	if ((asan && !saved) ||
	    asprintf(&opts, "%s%sverify_asan_link_order=0", asan ? asan : "", asan && *asan ? ":" : "") < 0) {
		free(saved);
		return -1;
	}
	if (setenv("ASAN_OPTIONS", opts, 1) == 0 && setenv("LD_PRELOAD", lib, 1) == 0) {
		rc = 0;
		for (const char *const *v = vars; *v && rc == 0; v += 2)
			rc = setenv(v[0], v[1], 1);
	}
	if (rc == 0)
		start(arg);
	unsetenv("LD_PRELOAD");
	for (const char *const *v = vars; *v; v += 2)
		unsetenv(v[0]);
	if (saved)
		setenv("ASAN_OPTIONS", saved, 1);
	else
		unsetenv("ASAN_OPTIONS");
	free(saved);
	free(opts);
	return rc;
}

#endif
