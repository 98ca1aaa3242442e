/* Integration-test harness: runs the real rmqns binary on a free loopback
 * port in an isolated temporary directory, and helps tests talk to it.
 *
 *   struct harness_server s;
 *   const char *args[] = { "--routeQueryInline=true", NULL };
 *   cr_assert_eq(harness_start(&s, args), 0);
 *   struct client *c = harness_connect(&s);
 *   ... client_call(c, &req, &reply, HARNESS_IO_TIMEOUT_MS) ...
 *   int st = harness_stop(&s, SIGTERM, 5000, NULL);
 *   cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
 *   harness_cleanup(&s);
 *
 * The server gets `--listenPort=0 --bindAddress=127.0.0.1` then the test's
 * arguments (later ones win), HOME, ROCKETMQ_HOME and its working directory
 * set to the temporary directory, stdout and stderr (the log) in files
 * there. Its port is read from the boot line. A started server never
 * outlives the test process: it is killed at exit (a failed Criterion
 * assertion included) and, through PR_SET_PDEATHSIG, if the test crashes.
 * The binary is the one meson built (RMQNS_BIN), or $RMQNS_TEST_BIN;
 * $RMQNS_SERVER_WRAPPER, when set, runs it under a wrapper (e.g.
 * "valgrind --error-exitcode=99 --leak-check=full"), with the waits for
 * boot and exit made ten times longer. */
#ifndef RMQNS_TEST_HARNESS_H
#define RMQNS_TEST_HARNESS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "rmqns/client.h"
#include "rmqns/remoting.h"

/* Whether this test (and so the server beside it) is built with
 * AddressSanitizer: several times slower, and freed memory stays resident
 * in its quarantine (256 MB by default). */
#if defined(__SANITIZE_ADDRESS__)
#define HARNESS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HARNESS_ASAN 1
#endif
#endif
#ifndef HARNESS_ASAN
#define HARNESS_ASAN 0
#endif

/* Generous bounds: a sanitizer build on a busy 2-core machine is slow. */
#define HARNESS_BOOT_TIMEOUT_MS 20000
#define HARNESS_IO_TIMEOUT_MS 10000
/* How long a test waits for something that must happen at all (a log
 * line, an exit, a leader): a loaded 2-core host meets it; the wait ends
 * as soon as it happens. */
#define HARNESS_WAIT_MS 30000

struct harness_server {
	pid_t pid;           /* 0 once stopped or reaped */
	int port;
	char dir[256];       /* the temporary directory */
	char out_path[300];  /* the server's stdout */
	char log_path[300];  /* the server's stderr: its log */
};

/* Starts the server with extra arguments (NULL-terminated list, or NULL)
 * and waits for its boot line. 0, or -1 with the reason and the server's
 * log on stderr (the child is then already reaped). */
int harness_start(struct harness_server *s, const char *const *args);

/* Sends sig and waits up to timeout_ms for the server to exit. Returns its
 * wait status (see waitpid), or -1 when it had to be killed with SIGKILL or
 * its log holds a sanitizer report (the log is then copied to stderr).
 * *elapsed_ms (optional) gets the time from the signal to the exit. */
int harness_stop(struct harness_server *s, int sig, int timeout_ms, int *elapsed_ms);

/* Ends the test's use of the server: if it still runs, stops it with
 * SIGTERM (killing it after 5 s); then removes the temporary directory
 * (kept when $RMQNS_KEEP_TEST_DIR is set). Returns -1 when the stop was not
 * a clean exit 0 or the log holds a sanitizer report, else 0; call it from
 * a Criterion .fini and expect 0. Safe to call twice. */
int harness_cleanup(struct harness_server *s);

/* Whether the server's log holds a sanitizer report (ASan, UBSan, TSan,
 * LSan); prints the log to stderr when it does. */
bool harness_log_has_sanitizer_report(const struct harness_server *s);

/* Runs the binary to completion with the given arguments only (no port or
 * address added), for -h/-p/bad-option checks, in a fresh temporary
 * directory. Returns the wait status or -1 (killed after timeout_ms);
 * *out (optional) gets its stdout, malloc'd and NUL-terminated. */
int harness_run(const char *const *args, int timeout_ms, char **out);
/* The same, with *log (optional) its stderr: the log. */
int harness_run_logged(const char *const *args, int timeout_ms, char **out, char **log);

/* A whole file, malloc'd and NUL-terminated; NULL when it cannot be read. */
char *harness_slurp(const char *path);

/* A fresh directory $TMPDIR/PREFIX-XXXXXX (default /tmp) written into dir;
 * 0 or -1. harness_rmdir removes it and everything in it (kept when
 * RMQNS_KEEP_TEST_DIR is set). */
int harness_mkdtemp(char *dir, size_t n, const char *prefix);

/* A loopback port nobody listens on now, below the kernel's ephemeral
 * range and claimed for this process (no other test picks it while the
 * process lives); -1 when none was found. */
int harness_free_port(void);
/* The same for a port p and p + offset (a controller's peer port and its
 * Raft port). */
int harness_free_port_pair(int offset);

/* The arguments of a one-node embedded controller on a free port pair
 * (the default Raft offset; its Raft log below the server's HOME, removed
 * with it), then `extra` (NULL-terminated, or NULL): args, NULL-ended,
 * for harness_start. */
#define HARNESS_SOLO_CONTROLLER_MAX_ARGS 16
struct harness_solo_controller {
	int port; /* the controller's port */
	char peers[96];
	const char *args[HARNESS_SOLO_CONTROLLER_MAX_ARGS + 1];
};
/* 0, or -1 when no free port pair was found or extra is too long. */
int harness_solo_controller(struct harness_solo_controller *c, const char *const *extra);

/* CLOCK_MONOTONIC in ms, and a sleep that resumes after signals. */
int64_t harness_now_ms(void);
void harness_sleep_ms(int ms);
void harness_rmdir(const char *dir);
/* "dir/name", malloc'd (NULL on allocation failure). */
char *harness_path_in(const char *dir, const char *name);

/* GET path from an HTTP port on 127.0.0.1: the status (-1 on a socket
 * error) and the whole answer in *out (malloc'd). */
int harness_http_get(int port, const char *path, char **out);

/* A field of the server's /proc/PID/status in kB (VmRSS, VmHWM), or -1. */
long harness_status_kb(const struct harness_server *s, const char *field);

/* One sample of GET /metrics on the server's HTTP port (started with
 * --httpPort=http_port), named exactly as the exposition writes it
 * ("name{labels}"); -1 when absent or the endpoint does not answer. */
double harness_metric(int http_port, const char *sample);

/* The server's log so far, malloc'd and NUL-terminated (NULL on error). */
char *harness_read_log(const struct harness_server *s);
/* Whether the log contains needle, waiting up to timeout_ms for it. */
bool harness_wait_log(const struct harness_server *s, const char *needle, int timeout_ms);
/* The same for any file (a logFile of the server's). */
bool harness_wait_file(const char *path, const char *needle, int timeout_ms);

/* A client connected to the server (NULL on failure, reason on stderr); a
 * connect that times out is tried once more. */
struct client *harness_connect(const struct harness_server *s);
/* The same with a fixed receive buffer: a peer that does not read fills it
 * at once instead of the kernel growing it to megabytes. */
struct client *harness_connect_rcvbuf(const struct harness_server *s, int rcvbuf);

/* "ip:port" of a client's own end, as the server names it in its log. */
void harness_client_peer(const struct client *c, char *out, size_t n);

/* A request as a Java client builds it: the code, JAVA, version 479, the
 * given serialization, no remark, no ext fields, no body, opaque 0. */
void harness_request_init(struct remoting_cmd *cmd, int32_t code, enum remoting_serialize ser);

/* A Java-style request (harness_request_init) of `code` in serialization
 * ser with the ext fields given as key, value, ..., NULL (a NULL value
 * leaves its field out; ext holds them, HARNESS_CALL_MAX_EXT at most) and
 * an optional body (a string, not copied). 0, or RMQNS_ETOOBIG for more
 * fields than that. */
#define HARNESS_CALL_MAX_EXT 16
int harness_request(struct remoting_cmd *req, struct remoting_ext_field *ext, int32_t code,
		    enum remoting_serialize ser, const char *body, ...);
int harness_request_va(struct remoting_cmd *req, struct remoting_ext_field *ext, int32_t code,
		       enum remoting_serialize ser, const char *body, va_list ap);
/* Gives req its n ext fields (ext) and an optional body string. */
void harness_request_fields(struct remoting_cmd *req, struct remoting_ext_field *ext, uint32_t n,
			    const char *body);

/* Such a request in JSON, sent on c and answered within 5 s:
 * client_call's result, *out the answer. */
int harness_call(struct client *c, int32_t code, const char *body, struct client_reply **out, ...);

/* Encodes cmd and appends the frame to out (aborts the test process on
 * allocation failure: only for building test input). */
void harness_encode(const struct remoting_cmd *cmd, struct buf *out);

/* A RegisterBrokerBody (plain JSON, data version 1/0/1, no filter
 * servers) of n topics named prefix0 .. prefix(n-1), each with `queues`
 * read and write queues and perm 6, NUL-terminated, into out. */
void harness_topics_body(struct buf *out, const char *prefix, int n, int queues);

/* ---- plain test programs ----
 * Criterion cannot start under ThreadSanitizer, so tests in the
 * 'concurrency' suite are plain programs: test functions returning 0 or
 * -1, checks that print and return -1, and a main that runs them all:
 *
 *   static int test_x(struct harness_server *s)
 *   {
 *       HARNESS_CHECK(harness_start(s, NULL) == 0, "boot");
 *       ...
 *       return 0;
 *   }
 *   static const struct harness_test tests[] = { { "x", test_x } };
 *   int main(int argc, char **argv)
 *   { return harness_main(tests, sizeof tests / sizeof tests[0], argc, argv); }
 *
 * harness_main runs the tests whose name contains argv[1] (all without
 * one), each with a fresh server struct that it cleans up afterwards (an
 * unclean stop fails the test), and returns the exit status (0 = all
 * passed). */
struct harness_test {
	const char *name;
	int (*fn)(struct harness_server *s);
};

int harness_main(const struct harness_test *tests, size_t n, int argc, char **argv);

void harness_check_failed(const char *file, int line, const char *expr, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define HARNESS_CHECK(cond, fmt, ...)                                                      \
	do {                                                                               \
		if (!(cond)) {                                                             \
			harness_check_failed(__FILE__, __LINE__, #cond, fmt, ##__VA_ARGS__); \
			return -1;                                                         \
		}                                                                          \
	} while (0)

#endif
