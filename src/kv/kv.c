/* KV config store: namespace -> key -> value in Java HashMap order, an
 * immutable table published through RCU, persisted to kvConfigPath in the
 * Java NameServer's kvConfig.json shape. Readers never touch the file;
 * only the KV writer thread (kv_writer.c) changes the table, and a change
 * is published only after the file holding it is durably on disk.
 * Namespace answers are cached as bytes per table version. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <urcu.h>

#include "jmap.h"
#include "rmqns/answer_cache.h"
#include "rmqns/durable.h"
#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "rmqns/json_reader.h"
#include "rmqns/kv.h"
#include "rmqns/log.h"
#include "rmqns/race.h"

/* Largest KV file read at start. */
#define KV_MAX_FILE ((size_t)512 << 20)

/* One version of the table; immutable once published. */
struct kv_table {
	struct jmap ns; /* namespace -> struct jmap * (key -> char *value) */
	uint64_t gen;   /* one more than the table it replaced */
	struct rcu_head rcu;
	struct kv_table *retired_next; /* ThreadSanitizer builds only, see table_retire */
};

struct kv_store {
	char *path;
	struct kv_table *table; /* RCU */
	struct answer_cache *answers; /* namespace answers, tagged with the table's gen */
	bool deferred_frees;
	struct kv_table *retired; /* ThreadSanitizer builds only */
};

/* ---- tables ---- */

static void inner_free(void *v)
{
	struct jmap *m = v;

	if (!m)
		return;
	jmap_free(m, free);
	free(m);
}

static void *value_dup(const void *v)
{
	return strdup(v);
}

static void *inner_dup(const void *v)
{
	struct jmap *m = malloc(sizeof(*m));

	if (!m)
		return NULL;
	if (jmap_clone(m, v, value_dup, free) < 0) {
		free(m);
		return NULL;
	}
	return m;
}

static void table_free(struct kv_table *t)
{
	if (!t)
		return;
	jmap_free(&t->ns, inner_free);
	free(t);
}


static struct kv_table *table_new(void)
{
	struct kv_table *t = calloc(1, sizeof(*t));

	return t;
}

static struct kv_table *table_clone(const struct kv_table *src)
{
	struct kv_table *t = table_new();

	if (!t)
		return NULL;
	if (jmap_clone(&t->ns, &src->ns, inner_dup, inner_free) < 0) {
		free(t);
		return NULL;
	}
	return t;
}

/* One namespace as a JSON object {"k":"v",...}, keys in Java order. */
static void namespace_write_json(struct jw *w, const struct jmap *inner)
{
	jw_obj_begin(w);
	jmap_for_each(inner, e) {
		jw_key(w, e->key);
		jw_str(w, e->val);
	}
	jw_obj_end(w);
}

/* fastjson's default form: {"configTable":{"NS":{"k":"v"}}}, Java order. */
static int table_write_json(const struct kv_table *t, struct buf *out)
{
	struct jw w;

	jw_init(&w, out, JW_DEFAULT);
	jw_obj_begin(&w);
	jw_key(&w, "configTable");
	jw_obj_begin(&w);
	jmap_for_each(&t->ns, n) {
		jw_key(&w, n->key);
		namespace_write_json(&w, n->val);
	}
	jw_obj_end(&w);
	jw_obj_end(&w);
	return jw_error(&w);
}

/* ---- loading ---- */

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Checks a whole value, as a parser that builds a tree would before
 * anything is taken from it: syntax, and no object with a key twice. */
static int json_check(struct jp *j)
{
	const char *k;
	int rc;

	if (jp_peek(j) == JP_ARRAY) {
		if (jp_arr_begin(j))
			return j->err;
		while ((rc = jp_arr_next(j)) == 1)
			if (json_check(j))
				return j->err;
		return rc;
	}
	if (jp_peek(j) != JP_OBJECT)
		return jp_skip(j);
	struct buf keys = BUF_INIT;
	char **sorted = NULL;
	size_t n = 0;
	if (jp_obj_begin(j))
		return j->err;
	while ((rc = jp_obj_key(j, &k, NULL)) == 1) {
		if (buf_append(&keys, k, strlen(k) + 1)) {
			rc = RMQNS_ENOMEM;
			break;
		}
		n++;
		if ((rc = json_check(j)) != 0)
			break;
	}
	if (rc == 0 && n > 1) {
		sorted = malloc(n * sizeof(*sorted));
		if (!sorted) {
			rc = RMQNS_ENOMEM;
		} else {
			char *p = (char *)keys.data;
			for (size_t i = 0; i < n; i++, p += strlen(p) + 1)
				sorted[i] = p;
			qsort(sorted, n, sizeof(*sorted), key_cmp);
			for (size_t i = 1; i < n && rc == 0; i++)
				if (strcmp(sorted[i - 1], sorted[i]) == 0)
					rc = RMQNS_EJSON;
			if (rc && !j->err) {
				j->err = rc;
				j->why = "duplicate object key";
			}
		}
	}
	free(sorted);
	buf_free(&keys);
	return rc;
}

/* Turns a checked file into a table as the Java NameServer would hold it:
 * fastjson fills fresh HashMaps in file order, then the NameServer copies
 * the outer one with putAll (which pre-sizes the table). Values are
 * strings, or scalars as their text (numbers as written). */
static int table_from_json(struct jp *j, struct kv_table **out, char *err, size_t errlen)
{
	struct jmap parsed = JMAP_INIT;
	struct kv_table *t = NULL;
	const char *k;
	char *ns = NULL;
	bool seen_table = false;
	void *old;
	int rc = RMQNS_OK, more;

	if (jp_peek(j) != JP_OBJECT) {
		snprintf(err, errlen, "not a JSON object");
		return RMQNS_EJSON;
	}
	jp_obj_begin(j);
	while (rc == 0 && (more = jp_obj_key(j, &k, NULL)) == 1) {
		if (strcmp(k, "configTable") != 0 || jp_peek(j) != JP_OBJECT) {
			jp_skip(j);
			continue;
		}
		seen_table = true;
		jp_obj_begin(j);
		while (rc == 0 && (more = jp_obj_key(j, &k, NULL)) == 1) {
			struct jmap *inner;

			free(ns);
			ns = strdup(k);
			if (!ns) {
				rc = RMQNS_ENOMEM;
				break;
			}
			if (jp_peek(j) == JP_NULL) {
				log_warn("KV file: namespace '%s' is null, skipped", ns);
				jp_skip(j);
				continue;
			}
			if (jp_peek(j) != JP_OBJECT) {
				snprintf(err, errlen, "namespace \"%s\" is not an object", ns);
				rc = RMQNS_EJSON;
				break;
			}
			inner = calloc(1, sizeof(*inner));
			if (!inner || jmap_put(&parsed, ns, inner, &old) < 0) {
				free(inner);
				rc = RMQNS_ENOMEM;
				break;
			}
			if (old)
				inner_free(old);
			jp_obj_begin(j);
			while (rc == 0 && (more = jp_obj_key(j, &k, NULL)) == 1) {
				char *key = strdup(k), *copy = NULL;
				const char *text;
				size_t n;
				bool b;

				if (!key) {
					rc = RMQNS_ENOMEM;
					break;
				}
				switch (jp_peek(j)) {
				case JP_NULL:
					log_warn("KV file: %s/%s is null, skipped", ns, key);
					jp_skip(j);
					free(key);
					continue;
				case JP_STRING:
					if (!jp_string(j, &text, &n))
						copy = strndup(text, n);
					break;
				case JP_NUMBER:
					if (!jp_number(j, &text, &n))
						copy = strndup(text, n);
					break;
				case JP_TRUE:
				case JP_FALSE:
					if (!jp_bool(j, &b))
						copy = strdup(b ? "true" : "false");
					break;
				default:
					snprintf(err, errlen, "value of \"%s\" / \"%s\" is not a string", ns, key);
					rc = RMQNS_EJSON;
					free(key);
					continue;
				}
				if (!copy || jmap_put(inner, key, copy, &old) < 0) {
					free(copy);
					free(key);
					rc = RMQNS_ENOMEM;
					break;
				}
				free(old);
				free(key);
			}
		}
	}
	if (rc == 0 && j->err)
		rc = j->err;
	if (rc == 0 && !seen_table) {
		snprintf(err, errlen, "no \"configTable\" object");
		rc = RMQNS_EJSON;
	}
	free(ns);
	if (rc < 0)
		goto out;
	t = table_new();
	if (!t) {
		rc = RMQNS_ENOMEM;
		goto out;
	}
	jmap_presize(&t->ns, parsed.size);
	jmap_for_each(&parsed, e) {
		if (jmap_put(&t->ns, e->key, e->val, &old) < 0) {
			rc = RMQNS_ENOMEM;
			goto out;
		}
		e->val = NULL; /* now owned by t */
	}
out:
	jmap_free(&parsed, inner_free);
	if (rc < 0) {
		table_free(t);
		if (rc == RMQNS_ENOMEM)
			snprintf(err, errlen, "out of memory");
		return rc;
	}
	*out = t;
	return RMQNS_OK;
}

/* Parses the file's bytes; RMQNS_EJSON with the reason for a bad file.
 * As strict as the file format: RFC 8259, valid UTF-8, no key twice. */
static int table_parse(const struct buf *text, struct kv_table **out, char *err, size_t errlen)
{
	struct jp j;
	int rc;

	if (text->len == 0) {
		snprintf(err, errlen, "the file is empty");
		return RMQNS_EJSON;
	}
	jp_init_opts(&j, text->data, text->len, JP_MAX_DEPTH, JP_RFC | JP_NO_BARE_KEYS | JP_REFUSE_BAD_TEXT);
	rc = json_check(&j);
	if (!rc)
		rc = jp_end(&j);
	if (rc) {
		int line = 1, column = 1;

		for (const uint8_t *p = text->data; p < j.p; p++, column++)
			if (*p == '\n') {
				line++;
				column = 0;
			}
		if (rc == RMQNS_ENOMEM)
			snprintf(err, errlen, "out of memory");
		else
			snprintf(err, errlen, "not valid JSON (line %d, column %d: %s)", line, column,
				 j.why ? j.why : "bad JSON");
		jp_fini(&j);
		return rc == RMQNS_ENOMEM ? rc : RMQNS_EJSON;
	}
	jp_fini(&j);
	jp_init_opts(&j, text->data, text->len, JP_MAX_DEPTH, JP_RFC | JP_NO_BARE_KEYS | JP_REFUSE_BAD_TEXT);
	rc = table_from_json(&j, out, err, errlen);
	jp_fini(&j);
	return rc;
}

static bool file_exists(const char *path, const char *suffix)
{
	char *p = NULL;
	struct stat st;
	bool r;

	if (asprintf(&p, "%s%s", path, suffix) < 0)
		return false;
	r = stat(p, &st) == 0;
	free(p);
	return r;
}

struct kv_store *kv_open(const char *path, bool ignore_corrupt, char *err, size_t errlen)
{
	struct kv_store *kv = calloc(1, sizeof(*kv));
	struct buf text = BUF_INIT;
	struct kv_table *t = NULL;
	char why[512];
	int rc;

	if (!kv || !(kv->path = strdup(path)) ||
	    !(kv->answers = answer_cache_create(ANSWER_CACHE_SLOTS_DEFAULT, ANSWER_CACHE_MAX_BYTES_DEFAULT,
						MC_KV_CACHE_HITS, MC_KV_CACHE_BUILDS))) {
		if (kv)
			free(kv->path);
		free(kv);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	rc = durable_read(path, KV_MAX_FILE, &text, err, errlen);
	if (rc == RMQNS_ENOTFOUND) {
		if (file_exists(path, ".bak"))
			log_warn("KV config %s does not exist but %s.bak does: starting with an empty table",
				 path, path);
		t = table_new();
		rc = t ? RMQNS_OK : RMQNS_ENOMEM;
		if (!t)
			snprintf(err, errlen, "out of memory");
	} else if (rc == RMQNS_OK) {
		rc = table_parse(&text, &t, why, sizeof(why));
		if (rc == RMQNS_EJSON && ignore_corrupt) {
			char *aside = NULL;
			if (asprintf(&aside, "%s.corrupt-%lld", path, (long long)time(NULL)) < 0 ||
			    rename(path, aside) < 0) {
				snprintf(err, errlen, "KV config %s: %s; cannot move it aside: %s", path, why,
					 strerror(errno));
			} else {
				log_error("KV config %s: %s; moved to %s, starting with an empty table "
					  "(kvConfigIgnoreCorrupt=true)", path, why, aside);
				t = table_new();
				rc = t ? RMQNS_OK : RMQNS_ENOMEM;
			}
			free(aside);
		} else if (rc < 0) {
			snprintf(err, errlen, "KV config %s: %s (the previous content, if any, is in %s.bak; "
				 "kvConfigIgnoreCorrupt=true starts with an empty table and moves the file aside)",
				 path, why, path);
		}
	}
	buf_free(&text);
	if (rc < 0 || !t) {
		if (rc == RMQNS_ENOMEM)
			snprintf(err, errlen, "out of memory");
		answer_cache_destroy(kv->answers);
		free(kv->path);
		free(kv);
		return NULL;
	}
	rcu_assign_pointer(kv->table, t);
	{
		size_t ns, keys;
		kv_count(kv, &ns, &keys);
		log_info("KV config %s: %zu namespaces, %zu keys", path, ns, keys);
	}
	return kv;
}

void kv_close(struct kv_store *kv)
{
	if (!kv)
		return;
	if (kv->deferred_frees)
		rcu_barrier();
	answer_cache_destroy(kv->answers);
	while (kv->retired) {
		struct kv_table *next = kv->retired->retired_next;
		table_free(kv->retired);
		kv->retired = next;
	}
	table_free(kv->table);
	free(kv->path);
	free(kv);
}

const char *kv_path(const struct kv_store *kv)
{
	return kv->path;
}

/* ---- reads ---- */

static const struct kv_table *table_current(const struct kv_store *kv)
{
	const struct kv_table *t = rcu_dereference(((struct kv_store *)kv)->table);

	race_acquire(t);
	return t;
}

const char *kv_get(const struct kv_store *kv, const char *ns, const char *key)
{
	const struct jmap_entry *n, *e;

	if (!ns || !key)
		return NULL;
	n = jmap_find(&table_current(kv)->ns, ns);
	if (!n)
		return NULL;
	e = jmap_find(n->val, key);
	return e ? e->val : NULL;
}

/* {"table":{...}} of namespace ns of table t. */
static int namespace_body(const struct kv_table *t, const char *ns, struct buf *out)
{
	const struct jmap_entry *n;
	size_t keep = out->len;
	struct jw w;

	if (!ns)
		return RMQNS_ENOTFOUND;
	n = jmap_find(&t->ns, ns);
	if (!n)
		return RMQNS_ENOTFOUND;
	jw_init(&w, out, JW_DEFAULT);
	jw_obj_begin(&w);
	jw_key(&w, "table");
	namespace_write_json(&w, n->val);
	jw_obj_end(&w);
	if (jw_error(&w)) {
		out->len = keep;
		return jw_error(&w);
	}
	return RMQNS_OK;
}

int kv_table_json(const struct kv_store *kv, const char *ns, struct buf *out)
{
	return namespace_body(table_current(kv), ns, out);
}

struct namespace_query {
	const struct kv_table *t;
	const char *ns;
};

static int namespace_build(void *ctx, struct buf *out)
{
	const struct namespace_query *q = ctx;

	return namespace_body(q->t, q->ns, out);
}

int kv_table_body(const struct kv_store *kv, const char *ns, const uint8_t **body, size_t *len,
		  struct buf *scratch)
{
	/* the table and its generation come together: an entry is exactly
	 * the table it was built from */
	struct namespace_query q = { table_current(kv), ns };

	if (!ns || !jmap_find(&q.t->ns, ns))
		return RMQNS_ENOTFOUND; /* cheap, and not worth a slot */
	return answer_cache_get(kv->answers, 0, ns, q.t->gen, namespace_build, &q, scratch, body, len);
}

int kv_file_json(const struct kv_store *kv, struct buf *out)
{
	size_t keep = out->len;
	int rc = table_write_json(table_current(kv), out);

	if (rc < 0)
		out->len = keep;
	return rc;
}

void kv_count(const struct kv_store *kv, size_t *namespaces, size_t *keys)
{
	const struct kv_table *t = table_current(kv);

	*namespaces = t->ns.size;
	*keys = 0;
	jmap_for_each(&t->ns, n) {
		const struct jmap *inner = n->val;
		*keys += inner->size;
	}
}

/* ---- changes ---- */

static __attribute__((unused)) void table_free_rcu(struct rcu_head *head)
{
	race_grace_passed();
	table_free(caa_container_of(head, struct kv_table, rcu));
}

/* Frees a replaced table once no reader can hold it. ThreadSanitizer
 * cannot see urcu's grace periods, so its builds keep replaced tables
 * until the store closes unless built to check reclamation (race.h; the
 * publication itself is annotated). */
static void table_retire(struct kv_store *kv, struct kv_table *old)
{
#ifdef RMQNS_TSAN_KEEP
	old->retired_next = kv->retired;
	kv->retired = old;
#else
	kv->deferred_frees = true;
	race_reader_done(); /* the writer's last touches, for the callback */
	call_rcu(&old->rcu, table_free_rcu);
#endif
}

/* A change set being built: a private copy of the published table that
 * the writer edits, then writes and publishes as one version. */
struct kv_batch {
	struct kv_store *kv;
	struct kv_table *table;
};

struct kv_batch *kv_batch_begin(struct kv_store *kv)
{
	struct kv_batch *b = malloc(sizeof(*b));

	if (!b)
		return NULL;
	b->kv = kv;
	b->table = table_clone(kv->table); /* the writer's own pointer: no read-side lock */
	if (!b->table) {
		free(b);
		return NULL;
	}
	return b;
}

void kv_batch_abort(struct kv_batch *b)
{
	if (!b)
		return;
	table_free(b->table);
	free(b);
}

int kv_batch_put(struct kv_batch *b, const char *ns, const char *key, const char *value)
{
	struct jmap_entry *n = jmap_find(&b->table->ns, ns);
	struct jmap *inner;
	char *copy;
	void *old;

	if (n) {
		inner = n->val;
	} else {
		inner = calloc(1, sizeof(*inner));
		if (!inner || jmap_put(&b->table->ns, ns, inner, &old) < 0) {
			free(inner);
			return RMQNS_ENOMEM;
		}
	}
	copy = strdup(value);
	if (!copy || jmap_put(inner, key, copy, &old) < 0) {
		free(copy);
		/* the namespace this change created must not outlive it: the
		 * rest of the batch is still written */
		if (!n) {
			int found;
			inner_free(jmap_remove(&b->table->ns, ns, &found));
		}
		return RMQNS_ENOMEM;
	}
	free(old);
	return RMQNS_OK;
}

void kv_batch_delete(struct kv_batch *b, const char *ns, const char *key)
{
	/* no namespace or key: nothing to remove, the file is still rewritten */
	struct jmap_entry *n = ns && key ? jmap_find(&b->table->ns, ns) : NULL;
	int found;

	if (n)
		free(jmap_remove(n->val, key, &found));
}

int kv_batch_commit(struct kv_batch *b, char *err, size_t errlen)
{
	struct kv_store *kv = b->kv;
	struct kv_table *nt = b->table, *old;
	struct buf text = BUF_INIT;
	int rc = table_write_json(nt, &text);

	free(b);
	if (rc < 0)
		snprintf(err, errlen, "out of memory");
	else
		rc = durable_write(kv->path, text.data, text.len, true, err, errlen);
	buf_free(&text);
	if (rc < 0) {
		table_free(nt);
		return rc;
	}
	nt->gen = kv->table->gen + 1;
	race_release(nt);
	old = rcu_xchg_pointer(&kv->table, nt);
	table_retire(kv, old);
	return RMQNS_OK;
}

int kv_put(struct kv_store *kv, const char *ns, const char *key, const char *value,
	   char *err, size_t errlen)
{
	struct kv_batch *b = kv_batch_begin(kv);

	if (!b || kv_batch_put(b, ns, key, value) < 0) {
		kv_batch_abort(b);
		snprintf(err, errlen, "out of memory");
		return RMQNS_ENOMEM;
	}
	return kv_batch_commit(b, err, errlen);
}

int kv_delete(struct kv_store *kv, const char *ns, const char *key, char *err, size_t errlen)
{
	struct kv_batch *b = kv_batch_begin(kv);

	if (!b) {
		snprintf(err, errlen, "out of memory");
		return RMQNS_ENOMEM;
	}
	kv_batch_delete(b, ns, key);
	return kv_batch_commit(b, err, errlen);
}
