/* Route reads when memory runs out: a read that fails with RMQNS_ENOMEM
 * frees everything it allocated. The binary is linked with
 * -Wl,--wrap=malloc,calloc,realloc,free,strdup, so every allocation the
 * project's code makes goes through the wrappers below, which fail the
 * k-th one of a read on demand and remember what the read still holds.
 * (Criterion and the shared libraries allocate through the real
 * functions and are not counted.) */
#include "rmqns/race.h"
#include "route_test_util.h"
#include "route_priv.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
char *__wrap_strdup(const char *s);

/* Allocations of the read under way that are not freed yet. */
#define HELD_MAX 256
static void *held[HELD_MAX];
static int nheld;
static bool counting;    /* inside the read being checked */
static long fail_in = -1; /* the allocation this many from now fails; -1 = none */
static long allocs;       /* allocations the read made */
static bool fail_growth;  /* instead: the first realloc of the read fails */

static bool alloc_fails(void)
{
	if (!counting)
		return false;
	allocs++;
	if (fail_in < 0)
		return false;
	return fail_in-- == 0;
}

static void hold(void *p)
{
	if (!counting || !p)
		return;
	cr_assert_lt(nheld, HELD_MAX, "the read holds too many allocations");
	held[nheld++] = p;
}

static void release(void *p)
{
	for (int i = 0; i < nheld; i++)
		if (held[i] == p) {
			held[i] = held[--nheld];
			return;
		}
}

void *__wrap_malloc(size_t n)
{
	if (alloc_fails())
		return NULL;
	void *p = __real_malloc(n);
	hold(p);
	return p;
}

void *__wrap_calloc(size_t n, size_t size)
{
	if (alloc_fails())
		return NULL;
	void *p = __real_calloc(n, size);
	hold(p);
	return p;
}

void *__wrap_realloc(void *old, size_t n)
{
	if (counting && fail_growth) {
		fail_growth = false;
		return NULL;
	}
	if (alloc_fails())
		return NULL;
	void *p = __real_realloc(old, n);
	if (p) {
		release(old);
		hold(p);
	}
	return p;
}

void __wrap_free(void *p)
{
	release(p);
	__real_free(p);
}

char *__wrap_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = __wrap_malloc(n);
	if (p)
		memcpy(p, s, n);
	return p;
}

static struct route_db *db;

static void setup(void)
{
	rcu_register_thread();
	db = route_db_create(1); /* a one-byte cache: no answer is ever kept */
	cr_assert(db);
	/* a 5.x static topic: its route carries topicQueueMappingByBroker (two
	 * topics: a first registration of one is refused, as in Java) */
	struct tu_reg m = { .name = "broker-a", .addr = "10.0.0.1:10911", .id = 0, .conn = 1,
			    .new_style = true };
	const char *body = TU_STATIC_TOPIC_BODY;
	cr_assert_eq(tu_register(db, &m, body, 100, NULL), 0);
}

static void teardown(void)
{
	route_db_destroy(db);
	rcu_unregister_thread();
}

TestSuite(route_read_faults, .init = setup, .fini = teardown);

/* One read of S's route into scratch with allocation k failing; the
 * result code. Whatever it returns, nothing it allocated may be left once
 * scratch is freed. */
static int read_failing(long k, struct buf *scratch)
{
	struct route_query q = { "S", JW_DEFAULT, false, NULL, NULL };
	const uint8_t *body;
	size_t len;

	nheld = 0;
	allocs = 0;
	fail_in = k;
	counting = true;
	state_read_lock();
	int rc = route_topic_body(db, &q, &body, &len, scratch);
	state_read_unlock();
	buf_free(scratch);
	counting = false;
	fail_in = -1;
	cr_assert(rc == 0 || rc == RMQNS_ENOMEM || rc == RMQNS_ENOTFOUND, "allocation %ld failing: rc %d", k,
		  rc);
	cr_assert_eq(nheld, 0, "allocation %ld failing: the read left %d allocation(s) behind", k, nheld);
	return rc;
}

/* Every allocation of the read fails in turn, from a scratch buffer that
 * starts empty. */
Test(route_read_faults, each_allocation_failing_in_turn)
{
	struct buf scratch = BUF_INIT;
	long k = 0;

	int rc0 = read_failing(-1, &scratch);
	cr_assert_eq(rc0, 0, "the read without failures: %d", rc0);
	long total = allocs;
	cr_assert_gt(total, 0);
	for (k = 0; k < total; k++) {
		scratch = (struct buf)BUF_INIT;
		cr_assert_neq(read_failing(k, &scratch), 0, "allocation %ld of %ld failed unnoticed", k, total);
	}
}

/* The buffer has exactly the room for everything before the mapping
 * section, so its growth fails right where the mapping section starts,
 * after its names and order were allocated. */
Test(route_read_faults, buffer_growth_failing_at_the_mapping_section)
{
	struct route_query q = { "S", JW_DEFAULT, false, NULL, NULL };
	struct buf scratch = BUF_INIT;
	const uint8_t *body;
	size_t len;

	state_read_lock();
	cr_assert_eq(route_topic_body(db, &q, &body, &len, &scratch), 0);
	char *text = strndup((const char *)body, len);
	state_read_unlock();
	const char *at = strstr(text, ",\"topicQueueMappingByBroker\":");
	cr_assert_not_null(at, "%s", text);
	size_t before = (size_t)(at - text);
	free(text);
	buf_free(&scratch);

	/* every allocation succeeds but the buffer's first growth */
	scratch.data = malloc(before);
	scratch.cap = before;
	scratch.len = 0;
	cr_assert_not_null(scratch.data);
	fail_growth = true;
	int rc = read_failing(-1, &scratch);
	cr_assert_eq(rc, RMQNS_ENOMEM, "rc %d", rc);
	cr_assert(!fail_growth, "the buffer never grew");
}
