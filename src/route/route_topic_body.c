/* The REGISTER_TOPIC_IN_NAMESRV body (route.h): the queueDatas of a
 * TopicRouteData, read more leniently than a registration's TopicConfig
 * (as Java reads it), by the same member names (regbody_build.h). */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "regbody_build.h"
#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/json_reader.h"
#include "rmqns/route.h"

/* perm, readQueueNums, writeQueueNums, topicSysFlag: an integer (cut to
 * 32 bits) or integer text; anything else is 0. An integer past int64 or
 * a real past a double makes the body unreadable. */
static int queue_number(struct jp *j, int32_t *out)
{
	const char *s;
	size_t n;
	char *text;
	int rc = 0;

	*out = 0;
	switch (jp_peek(j)) {
	case JP_STRING:
		if (jp_string(j, &s, &n))
			return j->err;
		*out = (int32_t)strtol(s, NULL, 10);
		return 0;
	case JP_NUMBER:
		if (jp_number(j, &s, &n))
			return j->err;
		text = strndup(s, n);
		if (!text)
			return RMQNS_ENOMEM;
		errno = 0;
		if (strpbrk(text, ".eE")) {
			if (isinf(strtod(text, NULL)))
				rc = RMQNS_EJSON;
		} else {
			long long v = strtoll(text, NULL, 10);
			if (errno == ERANGE)
				rc = RMQNS_EJSON;
			else
				*out = (int32_t)v;
		}
		free(text);
		return rc;
	default:
		return jp_skip(j);
	}
}

/* One QueueData: brokerName (its offset in `names`, or -1 when it is not
 * a string) and the four numbers, read more leniently than a TopicConfig's
 * (queue_number). topicSysFlag wins over the misspelt topicSynFlag
 * whenever it is present. */
static int topic_queue(struct jp *j, struct buf *names, struct route_queue_in *in, ptrdiff_t *name)
{
	const char *k, *s;
	size_t n;
	int32_t syn = 0;
	bool has_sys = false;
	int rc;

	*name = -1;
	if (jp_peek(j) != JP_OBJECT)
		return jp_skip(j); /* not an object: an empty entry */
	if (jp_obj_begin(j))
		return j->err;
	while ((rc = jp_obj_key(j, &k, NULL)) == 1) {
		switch (tc_member_of(k, strlen(k))) {
		case TC_BROKER_NAME:
			*name = -1;
			if (jp_peek(j) != JP_STRING) {
				rc = jp_skip(j);
			} else if ((rc = jp_string(j, &s, &n)) == 0) {
				*name = (ptrdiff_t)names->len;
				if (buf_append(names, s, n + 1))
					return RMQNS_ENOMEM;
			}
			break;
		case TC_PERM: rc = queue_number(j, &in->perm); break;
		case TC_READ: rc = queue_number(j, &in->read_queues); break;
		case TC_WRITE: rc = queue_number(j, &in->write_queues); break;
		case TC_SYSFLAG:
			has_sys = true;
			rc = queue_number(j, &in->sysflag);
			break;
		case TC_SYNFLAG: rc = queue_number(j, &syn); break;
		case TC_NAME:
		case TC_OTHER: rc = jp_skip(j); break;
		}
		if (rc)
			return rc;
	}
	if (!has_sys)
		in->sysflag = syn;
	return rc;
}

int route_decode_topic_queues(const uint8_t *body, size_t len, struct route_topic_queues *q)
{
	struct jp j;
	struct buf names = BUF_INIT;
	ptrdiff_t *name_at = NULL;
	uint32_t cap = 0, n = 0;
	const char *k;
	int rc;

	jp_init_opts(&j, body, len, JP_MAX_DEPTH, JP_RFC | JP_REFUSE_BAD_TEXT);
	rc = jp_peek(&j) == JP_OBJECT ? jp_obj_begin(&j) : RMQNS_EJSON;
	while (rc == 0 && (rc = jp_obj_key(&j, &k, NULL)) == 1) {
		if (strcmp(k, "queueDatas") != 0 || jp_peek(&j) != JP_ARRAY) {
			if (strcmp(k, "queueDatas") == 0)
				n = 0; /* the last queueDatas counts */
			rc = jp_skip(&j);
			continue;
		}
		n = 0;
		rc = jp_arr_begin(&j);
		while (rc == 0 && (rc = jp_arr_next(&j)) == 1) {
			if (n == cap) {
				uint32_t ncap = cap ? cap * 2 : 8;
				void *grown = realloc(q->items, ncap * sizeof(*q->items));
				void *o = grown ? realloc(name_at, ncap * sizeof(*name_at)) : NULL;
				if (grown)
					q->items = grown;
				if (!o) {
					rc = RMQNS_ENOMEM;
					break;
				}
				name_at = o;
				cap = ncap;
			}
			memset(&q->items[n], 0, sizeof(q->items[n]));
			rc = topic_queue(&j, &names, &q->items[n], &name_at[n]);
			n++;
		}
	}
	if (rc == 0)
		rc = jp_end(&j);
	if (rc == 0 && j.err)
		rc = j.err;
	jp_fini(&j);
	if (rc == 0 && n > 0) {
		q->names = (char *)names.data; /* the queues point into it from here on */
		names = (struct buf)BUF_INIT;
		for (uint32_t i = 0; i < n; i++)
			q->items[i].group = name_at[i] < 0 ? NULL : q->names + name_at[i];
		q->n = n;
	}
	buf_free(&names);
	free(name_at);
	return rc == RMQNS_ENOMEM ? rc : rc ? RMQNS_EJSON : 0;
}

void route_topic_queues_free(struct route_topic_queues *q)
{
	free(q->items);
	free(q->names);
	*q = (struct route_topic_queues){ 0 };
}
