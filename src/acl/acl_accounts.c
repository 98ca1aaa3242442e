/* plain_acl.yml (acl.h): the accounts and the global white list, read with
 * libyaml's document loader into an immutable snapshot. Everything else
 * in the file (topicPerms, groupPerms, defaultTopicPerm, dataVersion, ...)
 * is skipped, so a broker's file serves as it is. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "rmqns/acl.h"
#include "rmqns/err.h"
#include "rmqns/yaml_doc.h"

/* Java refuses keys of 6 characters or fewer. */
#define ACL_KEY_MIN_LEN 7
/* A file larger than this is not an accounts file. */
#define ACL_FILE_MAX (16u << 20)

struct yaml_walk {
	yaml_document_t *doc;
	char *err;
	size_t errlen;
};

static const char *scalar_text(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A plain null ("", "~", "null") reads as absent, as snakeyaml gives it. */
static bool scalar_is_null(const yaml_node_t *n)
{
	if (!n || n->type != YAML_SCALAR_NODE)
		return false;
	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	const char *s = (const char *)n->data.scalar.value;
	return !*s || strcmp(s, "~") == 0 || strcasecmp(s, "null") == 0;
}

static unsigned long line_of(const yaml_node_t *n)
{
	return (unsigned long)n->start_mark.line + 1;
}

/* YAML 1.1 booleans, as snakeyaml reads them. */
static int parse_bool(const yaml_node_t *n, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on", "y", NULL };
	static const char *const no[] = { "false", "no", "off", "n", NULL };
	const char *s = scalar_text(n);

	if (!s)
		return RMQNS_EINVAL;
	for (int i = 0; yes[i]; i++)
		if (strcasecmp(s, yes[i]) == 0)
			return *out = true, RMQNS_OK;
	for (int i = 0; no[i]; i++)
		if (strcasecmp(s, no[i]) == 0)
			return *out = false, RMQNS_OK;
	return RMQNS_EINVAL;
}

static int read_account(struct yaml_walk *w, const yaml_node_t *m, struct acl_account *acc)
{
	const yaml_node_t *white = NULL, *admin = NULL;

	if (m->type != YAML_MAPPING_NODE) {
		snprintf(w->err, w->errlen, "line %lu: an entry of accounts is not a mapping", line_of(m));
		return RMQNS_EINVAL;
	}
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
		const yaml_node_t *v = yaml_document_get_node(w->doc, p->value);
		const char *key = scalar_text(k);
		if (!key)
			continue;
		if (strcmp(key, "accessKey") == 0 || strcmp(key, "secretKey") == 0) {
			char **dst = key[0] == 'a' ? &acc->access_key : &acc->secret_key;
			if (scalar_is_null(v))
				continue;
			if (!scalar_text(v)) {
				snprintf(w->err, w->errlen, "line %lu: %s is not a string", line_of(v), key);
				return RMQNS_EINVAL;
			}
			free(*dst);
			if (!(*dst = strdup(scalar_text(v)))) {
				snprintf(w->err, w->errlen, "out of memory");
				return RMQNS_ENOMEM;
			}
		} else if (strcmp(key, "admin") == 0) {
			admin = v;
		} else if (strcmp(key, "whiteRemoteAddress") == 0) {
			white = v;
		}
	}
	if (!acc->access_key || strlen(acc->access_key) < ACL_KEY_MIN_LEN) {
		snprintf(w->err, w->errlen, "line %lu: the accessKey %.64s%s must be longer than 6 characters",
			 line_of(m), acc->access_key ? acc->access_key : "(none)",
			 acc->access_key && strlen(acc->access_key) > 64 ? "..." : "");
		return RMQNS_EINVAL;
	}
	if (!acc->secret_key || strlen(acc->secret_key) < ACL_KEY_MIN_LEN) {
		snprintf(w->err, w->errlen,
			 "line %lu: the secretKey of accessKey %.64s must be longer than 6 characters",
			 line_of(m), acc->access_key);
		return RMQNS_EINVAL;
	}
	if (admin && !scalar_is_null(admin) && parse_bool(admin, &acc->admin) < 0) {
		snprintf(w->err, w->errlen, "line %lu: admin of accessKey %.64s is not true or false",
			 line_of(admin), acc->access_key);
		return RMQNS_EINVAL;
	}
	if (white && !scalar_is_null(white)) {
		char why[256];
		if (!scalar_text(white)) {
			snprintf(w->err, w->errlen, "line %lu: whiteRemoteAddress of accessKey %.64s is not a string",
				 line_of(white), acc->access_key);
			return RMQNS_EINVAL;
		}
		int rc = acl_addr_parse(scalar_text(white), &acc->white, why, sizeof why);
		if (rc < 0) {
			snprintf(w->err, w->errlen, "line %lu: whiteRemoteAddress of accessKey %.64s: %s",
				 line_of(white), acc->access_key, why);
			return rc;
		}
	}
	return RMQNS_OK;
}

static int read_accounts(struct yaml_walk *w, const yaml_node_t *seq, struct acl_accounts *a)
{
	if (scalar_is_null(seq))
		return RMQNS_OK;
	if (seq->type != YAML_SEQUENCE_NODE) {
		snprintf(w->err, w->errlen, "line %lu: accounts is not a list", line_of(seq));
		return RMQNS_EINVAL;
	}
	size_t n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
	if (n == 0)
		return RMQNS_OK;
	a->accounts = calloc(n, sizeof *a->accounts);
	if (!a->accounts) {
		snprintf(w->err, w->errlen, "out of memory");
		return RMQNS_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const yaml_node_t *m = yaml_document_get_node(w->doc, seq->data.sequence.items.start[i]);
		int rc = read_account(w, m, &a->accounts[a->n++]);
		if (rc < 0)
			return rc;
	}
	return RMQNS_OK;
}

static int read_global(struct yaml_walk *w, const yaml_node_t *seq, struct acl_accounts *a)
{
	if (scalar_is_null(seq))
		return RMQNS_OK;
	if (seq->type != YAML_SEQUENCE_NODE) {
		snprintf(w->err, w->errlen, "line %lu: globalWhiteRemoteAddresses is not a list",
			 line_of(seq));
		return RMQNS_EINVAL;
	}
	size_t n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
	if (n == 0)
		return RMQNS_OK;
	a->global_white = calloc(n, sizeof *a->global_white);
	if (!a->global_white) {
		snprintf(w->err, w->errlen, "out of memory");
		return RMQNS_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const yaml_node_t *v = yaml_document_get_node(w->doc, seq->data.sequence.items.start[i]);
		char why[256];
		if (scalar_is_null(v))
			continue;
		if (!scalar_text(v)) {
			snprintf(w->err, w->errlen, "line %lu: an entry of globalWhiteRemoteAddresses is not a string",
				 line_of(v));
			return RMQNS_EINVAL;
		}
		int rc = acl_addr_parse(scalar_text(v), &a->global_white[a->nglobal], why, sizeof why);
		if (rc < 0) {
			snprintf(w->err, w->errlen, "line %lu: globalWhiteRemoteAddresses: %s", line_of(v), why);
			return rc;
		}
		a->nglobal++;
	}
	return RMQNS_OK;
}

static int account_order(const void *x, const void *y)
{
	const struct acl_account *a = x, *b = y;
	return strcmp(a->access_key, b->access_key);
}

struct acl_accounts *acl_accounts_parse(const char *text, size_t len, char *err, size_t errlen)
{
	yaml_document_t doc;
	struct acl_accounts *a = calloc(1, sizeof *a);
	struct yaml_walk w = { &doc, err, errlen };
	int rc = RMQNS_EINVAL;

	if (errlen)
		err[0] = '\0';
	if (!a) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (yaml_doc_load(&doc, text, len, err, errlen) < 0) {
		free(a);
		return NULL;
	}
	const yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root || root->type != YAML_MAPPING_NODE) {
		snprintf(err, errlen, "%s", root ? "the file is not a YAML mapping" : "the file holds no data");
		goto done;
	}
	rc = RMQNS_OK;
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
	     p < root->data.mapping.pairs.top && rc == RMQNS_OK; p++) {
		const char *key = scalar_text(yaml_document_get_node(&doc, p->key));
		const yaml_node_t *v = yaml_document_get_node(&doc, p->value);
		if (key && strcmp(key, "accounts") == 0 && !a->accounts)
			rc = read_accounts(&w, v, a);
		else if (key && strcmp(key, "globalWhiteRemoteAddresses") == 0 && !a->global_white)
			rc = read_global(&w, v, a);
	}
	if (rc == RMQNS_OK && a->n > 1) {
		qsort(a->accounts, a->n, sizeof *a->accounts, account_order);
		for (size_t i = 1; i < a->n; i++) {
			if (strcmp(a->accounts[i - 1].access_key, a->accounts[i].access_key) == 0) {
				snprintf(err, errlen, "the accessKey %.64s appears twice", a->accounts[i].access_key);
				rc = RMQNS_EINVAL;
				break;
			}
		}
	}
done:
	yaml_document_delete(&doc);
	if (rc < 0) {
		acl_accounts_free(a);
		return NULL;
	}
	return a;
}

struct acl_accounts *acl_accounts_load(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	size_t len = 0, cap = 0;

	if (!f) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	for (;;) {
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 8192;
			char *grown = ncap <= ACL_FILE_MAX ? realloc(text, ncap) : NULL;
			if (!grown) {
				snprintf(err, errlen, ncap > ACL_FILE_MAX ? "%s is larger than 16 MiB" : "out of memory",
					 path);
				free(text);
				fclose(f);
				return NULL;
			}
			text = grown;
			cap = ncap;
		}
		size_t got = fread(text + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		free(text);
		fclose(f);
		return NULL;
	}
	fclose(f);
	struct acl_accounts *a = acl_accounts_parse(text, len, err, errlen);
	free(text);
	return a;
}

void acl_accounts_free(struct acl_accounts *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++) {
		free(a->accounts[i].access_key);
		if (a->accounts[i].secret_key) {
			explicit_bzero(a->accounts[i].secret_key, strlen(a->accounts[i].secret_key));
			free(a->accounts[i].secret_key);
		}
		acl_addr_free(&a->accounts[i].white);
	}
	free(a->accounts);
	for (size_t i = 0; i < a->nglobal; i++)
		acl_addr_free(&a->global_white[i]);
	free(a->global_white);
	free(a);
}

const struct acl_account *acl_accounts_find(const struct acl_accounts *a, const char *access_key)
{
	size_t lo = 0, hi = a->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(access_key, a->accounts[mid].access_key);
		if (c == 0)
			return &a->accounts[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}
