/* jansson trees of fastjson bodies (json_tree.h), built by the streaming
 * reader. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"
#include "rmqns/json_reader.h"
#include "rmqns/json_tree.h"

static int tree_nomem(struct jp *j)
{
	if (!j->err) {
		j->err = RMQNS_ENOMEM;
		j->why = "out of memory";
	}
	return j->err;
}

static int tree_bad(struct jp *j, const char *why)
{
	if (!j->err) {
		j->err = RMQNS_EJSON;
		j->why = why;
	}
	return j->err;
}

/* A number token as jansson holds it: an integer within json_int_t, else
 * a finite double. */
static json_t *tree_number(struct jp *j)
{
	const char *s;
	size_t n;
	if (jp_number(j, &s, &n))
		return NULL;
	char *text = strndup(s, n);
	if (!text) {
		tree_nomem(j);
		return NULL;
	}
	json_t *v = NULL;
	char *end;
	errno = 0;
	if (!strpbrk(text, ".eE")) {
		long long x = strtoll(text, &end, 10);
		if (errno == ERANGE)
			tree_bad(j, "integer out of range in JSON");
		else if (!(v = json_integer((json_int_t)x)))
			tree_nomem(j);
	} else {
		double d = strtod(text, &end);
		if (isinf(d))
			tree_bad(j, "number out of range in JSON");
		else if (!(v = json_real(d)))
			tree_nomem(j);
	}
	free(text);
	return v;
}

static json_t *tree_value(struct jp *j)
{
	const char *s;
	size_t n;
	bool b;
	int rc;
	json_t *v = NULL, *item;

	switch (jp_peek(j)) {
	case JP_OBJECT:
		if (jp_obj_begin(j))
			return NULL;
		if (!(v = json_object()))
			break;
		while ((rc = jp_obj_key(j, &s, &n)) == 1) {
			char *key = strndup(s, n);
			if (!key) {
				tree_nomem(j);
				break;
			}
			item = tree_value(j);
			rc = item ? json_object_set_new(v, key, item) : -1;
			free(key);
			if (rc) {
				if (item)
					tree_nomem(j);
				break;
			}
		}
		break;
	case JP_ARRAY:
		if (jp_arr_begin(j))
			return NULL;
		if (!(v = json_array()))
			break;
		while ((rc = jp_arr_next(j)) == 1) {
			item = tree_value(j);
			if (!item || json_array_append_new(v, item)) {
				if (item)
					tree_nomem(j);
				break;
			}
		}
		break;
	case JP_STRING:
		if (jp_string(j, &s, &n))
			return NULL;
		v = json_stringn(s, n);
		break;
	case JP_NUMBER:
		return tree_number(j);
	case JP_TRUE:
	case JP_FALSE:
		if (jp_bool(j, &b))
			return NULL;
		return json_boolean(b);
	case JP_NULL:
		return jp_null(j) ? NULL : json_null();
	default:
		return NULL;
	}
	if (!v)
		tree_nomem(j);
	if (j->err) {
		json_decref(v);
		return NULL;
	}
	return v;
}

json_t *json_body_parse(const uint8_t *text, size_t len, int *err)
{
	int dummy;
	if (!err)
		err = &dummy;
	if (len > JSON_BODY_MAX_LEN) {
		*err = RMQNS_ETOOBIG;
		return NULL;
	}
	struct jp j;
	jp_init_opts(&j, text, text ? len : 0, JP_MAX_DEPTH, JP_RFC | JP_REFUSE_BAD_TEXT);
	enum jp_type t = jp_peek(&j);
	json_t *v = t == JP_OBJECT || t == JP_ARRAY ? tree_value(&j) : NULL;
	if (v && jp_end(&j)) {
		json_decref(v);
		v = NULL;
	}
	*err = v ? RMQNS_OK : j.err == RMQNS_ENOMEM ? RMQNS_ENOMEM : RMQNS_EJSON;
	jp_fini(&j);
	return v;
}

const char *json_scalar_text(const json_t *v, char *tmp, size_t tmp_len)
{
	int n;
	switch (json_typeof(v)) {
	case JSON_STRING:
		return json_string_value(v);
	case JSON_TRUE:
		return "true";
	case JSON_FALSE:
		return "false";
	case JSON_INTEGER:
		n = snprintf(tmp, tmp_len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return n >= 0 && (size_t)n < tmp_len ? tmp : NULL;
	case JSON_REAL: {
		/* The shortest text that reads back as the same double. */
		double d = json_real_value(v);
		for (int prec = 1; prec <= 17; prec++) {
			n = snprintf(tmp, tmp_len, "%.*g", prec, d);
			if (n < 0 || (size_t)n >= tmp_len)
				return NULL;
			if (strtod(tmp, NULL) == d)
				return tmp;
		}
		return tmp;
	}
	default:
		return NULL;
	}
}
