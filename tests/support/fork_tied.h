/* fork() for tests: the child is killed when the test process dies, so
 * nothing a test starts outlives it (an abort or a crash included). */
#ifndef RMQNS_TEST_FORK_TIED_H
#define RMQNS_TEST_FORK_TIED_H

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

/* As fork(); in the child, returns only while the parent is alive. */
static inline pid_t fork_tied(void)
{
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127); /* the parent died before the line above */
	}
	return pid;
}

#endif
