/* What the scenarios share (run.h): the interrupt flag, address parsing,
 * sleeping, fake brokers, waiting for an engine to be ready, and the
 * report in the form the options ask for. main.c and disconnect.c both
 * call it; it calls neither. */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "rmqns/err.h"
#include "rmqns/remoting.h"
#include "run.h"

#define NS_PER_S 1000000000ull
/* Seeding and first registrations of big brokers can take a while, but not for ever. */
#define SETUP_LIMIT_NS (180ull * NS_PER_S)

volatile sig_atomic_t bench_interrupted;


void run_sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / NS_PER_S), .tv_nsec = (long)(ns % NS_PER_S) };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !bench_interrupted)
		;
}

int run_addr_host(const char *addr, char *host, size_t n)
{
	const char *colon = strrchr(addr, ':');
	if (!colon || (size_t)(colon - addr) >= n)
		return RMQNS_EINVAL;
	size_t hl = (size_t)(colon - addr);
	if (hl >= 2 && addr[0] == '[' && addr[hl - 1] == ']') {
		addr++;
		hl -= 2;
	}
	memcpy(host, addr, hl);
	host[hl] = '\0';
	return RMQNS_OK;
}

int run_resolve_addr(const char *addr, struct sockaddr_storage *out, socklen_t *len)
{
	char h[256];
	const char *colon = strrchr(addr, ':');
	if (run_addr_host(addr, h, sizeof h))
		return RMQNS_EINVAL;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	if (getaddrinfo(h, colon + 1, &hints, &res) != 0 || !res)
		return RMQNS_EINVAL;
	memcpy(out, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return RMQNS_OK;
}

int run_build_brokers(const struct bench_opts *o, struct reqs_broker **out, uint32_t n,
		      const char *broker_prefix, const char *topic_prefix,
		      enum bench_layout layout, uint32_t topics, bool dv_change,
		      uint32_t index_base)
{
	struct reqs_body_spec spec = {
		.topic_prefix = topic_prefix, .layout = layout, .topics = topics,
		.queues = o->queues, .compressed = o->compressed, .version = o->version,
	};
	*out = calloc(n, sizeof(**out));
	if (!*out)
		return RMQNS_ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		int rc = reqs_broker_init(&(*out)[i], o, &spec, broker_prefix, i, dv_change);
		if (rc)
			return rc;
		/* distinct fake addresses across seed and storm brokers */
		snprintf((*out)[i].addr, sizeof((*out)[i].addr), "127.0.0.1:%u",
			 o->broker_port + 2 * (index_base + i));
		snprintf((*out)[i].ha_addr, sizeof((*out)[i].ha_addr), "127.0.0.1:%u",
			 o->broker_port + 2 * (index_base + i) + 1);
		if ((*out)[i].body[0].len > REMOTING_DEFAULT_MAX_FRAME - 65536) {
			fprintf(stderr, "rmqns-bench: a registration body of %zu bytes is beyond the "
				"16 MiB frame limit; use --compressed or fewer topics\n",
				(*out)[i].body[0].len);
			return RMQNS_ETOOBIG;
		}
	}
	return RMQNS_OK;
}

void run_free_brokers(struct reqs_broker *b, uint32_t n)
{
	for (uint32_t i = 0; b && i < n; i++)
		reqs_broker_free(&b[i]);
	free(b);
}

int run_wait_ready(struct engine *e, const char *what)
{
	uint64_t deadline = bench_now_ns() + SETUP_LIMIT_NS;
	for (;;) {
		enum engine_state s = engine_state(e);
		if (s == ENG_READY)
			return RMQNS_OK;
		if (s == ENG_FAILED) {
			fprintf(stderr, "rmqns-bench: %s: %s\n", what, e->fail_msg);
			return RMQNS_ECLOSED;
		}
		if (s == ENG_DONE || bench_interrupted || bench_now_ns() > deadline) {
			fprintf(stderr, "rmqns-bench: %s: not ready in time\n", what);
			return RMQNS_ECLOSED;
		}
		run_sleep_ns(1000000);
	}
}

int run_output(const struct bench_opts *o, struct report *rep)
{
	json_t *doc = report_to_json(rep);
	if (!doc) {
		fprintf(stderr, "rmqns-bench: out of memory building the report\n");
		return RMQNS_ENOMEM;
	}
	json_t *floor = NULL;
	if (o->floor_path) {
		json_error_t jerr;
		floor = json_load_file(o->floor_path, 0, &jerr);
		if (!floor)
			fprintf(stderr, "rmqns-bench: --floor %s: %s (line %d)\n", o->floor_path, jerr.text,
				jerr.line);
	}
	if (floor && o->json) {
		struct report_figure a[128], b[128];
		size_t na = report_figures(doc, a, 128), nb = report_figures(floor, b, 128);
		json_t *frac = json_object();
		for (size_t i = 0; frac && i < na; i++)
			for (size_t j = 0; j < nb; j++)
				if (strcmp(a[i].name, b[j].name) == 0 && b[j].value != 0.0)
					json_object_set_new(frac, a[i].name, json_real(a[i].value / b[j].value));
		if (frac)
			json_object_set_new(doc, "floor_fraction", frac);
	}
	if (o->json) {
		char *text = json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
		if (text) {
			fputs(text, stdout);
			fputc('\n', stdout);
			free(text);
		}
	} else {
		report_print_text(stdout, rep);
		if (floor) {
			printf("\nas a fraction of the floor run (%s):\n", o->floor_path);
			report_print_ratio(stdout, &doc, 1, &floor, 1, "this run", "floor");
		}
	}
	int rc = RMQNS_OK;
	if (o->plot_path) {
		FILE *f = fopen(o->plot_path, "w");
		if (!f || report_write_svg(f, rep) != RMQNS_OK) {
			fprintf(stderr, "rmqns-bench: cannot write %s: %s\n", o->plot_path, strerror(errno));
			rc = RMQNS_EIO;
		}
		if (f && fclose(f) != 0)
			rc = RMQNS_EIO;
	}
	json_decref(floor);
	json_decref(doc);
	return rc;
}
