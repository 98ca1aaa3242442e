/* metrics.h from many threads: per-thread shards summed exactly while a
 * reader writes the exposition concurrently, shards of ended threads kept
 * (and reused) with their counts, codes past the slot table counted as
 * "other", histograms cumulative with +Inf = _count. A plain program (exit
 * 0 = pass) so that it also runs under ThreadSanitizer. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/buf.h"
#include "rmqns/metrics.h"
#include "rmqns/remoting.h"
#include "metrics_text.h"

/* the labels of a request code: its number and its name */
#define ROUTE_LABELS "code=\"105\",request=\"GET_ROUTEINFO_BY_TOPIC\""
#define QDV_LABELS "code=\"322\",request=\"QUERY_DATA_VERSION\""

#define WRITERS 4
#define PER_WRITER 20000

#define CHECK(cond, ...)                                                                   \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);         \
			fprintf(stderr, __VA_ARGS__);                                      \
			fprintf(stderr, "\n");                                             \
			return 1;                                                          \
		}                                                                          \
	} while (0)

static atomic_bool writers_done;

static void *writer(void *arg)
{
	(void)arg;
	for (int i = 0; i < PER_WRITER; i++) {
		metrics_request(105, i % 4 == 0 ? 17 : 0, metrics_now_ns());
		metrics_add(MC_ROUTE_CACHE_HITS, 1);
		if (i % 100 == 0)
			metrics_registrar_apply(1500000); /* 1.5 ms: the 0.0025 bucket */
	}
	return NULL;
}

static void *reader(void *arg)
{
	unsigned *scrapes = arg;
	while (!atomic_load(&writers_done)) {
		struct buf b = BUF_INIT;
		if (metrics_write(&b, remoting_request_name) == 0)
			(*scrapes)++;
		buf_free(&b);
	}
	return NULL;
}

static char *scrape(void)
{
	struct buf b = BUF_INIT;
	if (metrics_write(&b, remoting_request_name) < 0 || buf_terminate(&b) < 0)
		abort();
	return (char *)b.data;
}

static int run_round(void)
{
	pthread_t w[WRITERS], r;
	unsigned scrapes = 0;

	atomic_store(&writers_done, false);
	if (pthread_create(&r, NULL, reader, &scrapes) != 0)
		return 1;
	for (int i = 0; i < WRITERS; i++)
		if (pthread_create(&w[i], NULL, writer, NULL) != 0)
			return 1;
	for (int i = 0; i < WRITERS; i++)
		pthread_join(w[i], NULL);
	atomic_store(&writers_done, true);
	pthread_join(r, NULL);
	return 0;
}

int main(void)
{
	/* two rounds: the second round's threads take the first round's
	 * shards and add to them */
	for (int round = 1; round <= 2; round++) {
		CHECK(run_round() == 0, "threads");
		char *t = scrape();
		double ok = metrics_text_sample(t, "rmqns_requests_total{" ROUTE_LABELS ",response=\"0\"}");
		double miss = metrics_text_sample(t, "rmqns_requests_total{" ROUTE_LABELS ",response=\"17\"}");
		double total = (double)round * WRITERS * PER_WRITER;
		CHECK(ok == total * 3 / 4, "round %d: code 0: %g of %g", round, ok, total * 3 / 4);
		CHECK(miss == total / 4, "round %d: code 17: %g of %g", round, miss, total / 4);
		CHECK(metrics_text_sample(t, "rmqns_route_cache_lookups_total{result=\"hit\"}") == total, "hits");
		CHECK(metrics_text_sample(t, "rmqns_request_duration_seconds_count{" ROUTE_LABELS "}") == total,
		      "latency count");
		CHECK(metrics_text_sample(t, "rmqns_request_duration_seconds_bucket{" ROUTE_LABELS ",le=\"+Inf\"}") ==
			      total,
		      "+Inf bucket");
		double applies = (double)round * WRITERS * (PER_WRITER / 100);
		CHECK(metrics_text_sample(t, "rmqns_registrar_apply_seconds_bucket{le=\"0.001\"}") == 0,
		      "1.5 ms is not under 1 ms");
		CHECK(metrics_text_sample(t, "rmqns_registrar_apply_seconds_bucket{le=\"0.0025\"}") == applies,
		      "1.5 ms is under 2.5 ms");
		CHECK(metrics_text_sample(t, "rmqns_registrar_apply_seconds_count") == applies, "apply count");
		double sum = metrics_text_sample(t, "rmqns_registrar_apply_seconds_sum");
		CHECK(sum > applies * 0.0015 * 0.999 && sum < applies * 0.0015 * 1.001, "sum %g", sum);
		free(t);
	}

	/* a deferring thread: counted at once, latency at its turn's end,
	 * past the deferral room flushed on its own */
	metrics_defer_clock();
	uint64_t t0 = metrics_now_ns() - 300000; /* arrived 0.3 ms ago */
	for (int i = 0; i < 3; i++)
		metrics_request(322, 0, t0);
	char *t = scrape();
	CHECK(metrics_text_sample(t, "rmqns_requests_total{" QDV_LABELS ",response=\"0\"}") == 3, "counted at once");
	CHECK(metrics_text_sample(t, "rmqns_request_duration_seconds_count{" QDV_LABELS "}") == -1, "not yet observed");
	free(t);
	metrics_turn_end();
	t = scrape();
	CHECK(metrics_text_sample(t, "rmqns_request_duration_seconds_count{" QDV_LABELS "}") == 3, "observed");
	CHECK(metrics_text_sample(t, "rmqns_request_duration_seconds_bucket{" QDV_LABELS ",le=\"0.00025\"}") == 0,
	      "0.3 ms is not under 0.25 ms");
	free(t);
	for (int i = 0; i < 300; i++)
		metrics_request(322, 0, t0);
	t = scrape();
	double seen = metrics_text_sample(t, "rmqns_request_duration_seconds_count{" QDV_LABELS "}");
	CHECK(seen >= 3 + 256 && seen < 303, "full deferral room flushed: %g", seen);
	free(t);
	metrics_turn_end();
	t = scrape();
	CHECK(metrics_text_sample(t, "rmqns_request_duration_seconds_count{" QDV_LABELS "}") == 303, "all observed");
	free(t);

	/* more distinct codes than slots: the rest share code="other" */
	for (int code = 200; code < 300; code++)
		metrics_request(code, 0, metrics_now_ns());
	metrics_turn_end();
	t = scrape();
	double named = 0;
	for (int code = 200; code < 300; code++) {
		char name[128], num[16];
		/* a code the protocol names shows its name, any other its number */
		snprintf(num, sizeof num, "%d", code);
		const char *req = remoting_request_name(code);
		snprintf(name, sizeof name, "rmqns_requests_total{code=\"%d\",request=\"%s\",response=\"0\"}",
			 code, req ? req : num);
		double v = metrics_text_sample(t, name);
		CHECK(v == -1 || v == 1, "code %d counted %g times", code, v);
		named += v == 1;
	}
	double other = metrics_text_sample(t, "rmqns_requests_total{code=\"other\",request=\"other\",response=\"0\"}");
	CHECK(other > 0 && named + other == 100, "named %g + other %g", named, other);
	/* a negative or huge code never takes a slot */
	metrics_request(-5, 1, metrics_now_ns());
	metrics_request(1 << 20, 1, metrics_now_ns());
	free(t);
	t = scrape();
	CHECK(metrics_text_sample(t, "rmqns_requests_total{code=\"other\",request=\"other\",response=\"1\"}") == 2, "outliers");
	CHECK(strstr(t, "# TYPE rmqns_requests_total counter\n") != NULL, "TYPE line");
	free(t);

	printf("metrics threads: ok\n");
	return 0;
}
