/* rmqns entry point: command line, configuration, start and orderly stop.
 * (Filled in by the server-core work.) */
#include <stdio.h>

int main(void)
{
	fprintf(stderr, "rmqns: server core not built yet\n");
	return 1;
}
