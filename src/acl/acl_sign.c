/* ACL 1.0 signatures (acl.h): the content rule and HMAC-SHA1 + base64 with
 * libcrypto. Each thread keeps one HMAC context, set to SHA-1 once and
 * re-keyed per signature, so a check costs the hashing and little else. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "rmqns/acl.h"
#include "rmqns/err.h"

/* Next UTF-16 code unit of a UTF-8 string; *low holds the second half of
 * a surrogate pair. Bytes that are not well-formed UTF-8 count as U+FFFD
 * (the decoder never lets them through; client keys are ASCII). */
static unsigned utf16_next(const unsigned char **p, unsigned *low)
{
	if (*low) {
		unsigned u = *low;
		*low = 0;
		return u;
	}
	const unsigned char *s = *p;
	unsigned c = s[0], cp, need;

	if (c < 0x80) {
		*p = s + 1;
		return c;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		cp = c & 0x1F;
		need = 1;
	} else if (c >= 0xE0 && c <= 0xEF) {
		cp = c & 0x0F;
		need = 2;
	} else if (c >= 0xF0 && c <= 0xF4) {
		cp = c & 0x07;
		need = 3;
	} else {
		*p = s + 1;
		return 0xFFFD;
	}
	for (unsigned i = 1; i <= need; i++) {
		if ((s[i] & 0xC0) != 0x80) {
			*p = s + i;
			return 0xFFFD;
		}
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	*p = s + need + 1;
	if (cp < 0x10000)
		return cp;
	cp -= 0x10000;
	*low = 0xDC00 | (cp & 0x3FF);
	return 0xD800 | (cp >> 10);
}

int acl_key_compare(const char *a, const char *b)
{
	const unsigned char *pa = (const unsigned char *)a, *pb = (const unsigned char *)b;
	unsigned la = 0, lb = 0;

	for (;;) {
		bool ea = !la && !*pa, eb = !lb && !*pb;
		if (ea || eb)
			return ea && eb ? 0 : ea ? -1 : 1;
		unsigned ua = utf16_next(&pa, &la), ub = utf16_next(&pb, &lb);
		if (ua != ub)
			return ua < ub ? -1 : 1;
	}
}

/* ---- HMAC-SHA1 ---- */

static EVP_MAC *hmac_alg;
static pthread_key_t hmac_ctx_key;
static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;
static bool hmac_key_ok;

static void hmac_ctx_free(void *p)
{
	EVP_MAC_CTX_free(p);
}

static void hmac_init_once(void)
{
	hmac_alg = EVP_MAC_fetch(NULL, OSSL_MAC_NAME_HMAC, NULL);
	hmac_key_ok = pthread_key_create(&hmac_ctx_key, hmac_ctx_free) == 0;
}

static EVP_MAC_CTX *hmac_thread_ctx(void)
{
	pthread_once(&hmac_once, hmac_init_once);
	if (!hmac_alg || !hmac_key_ok)
		return NULL;
	EVP_MAC_CTX *ctx = pthread_getspecific(hmac_ctx_key);
	if (ctx)
		return ctx;
	ctx = EVP_MAC_CTX_new(hmac_alg);
	if (!ctx)
		return NULL;
	char digest[] = "SHA1";
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
		OSSL_PARAM_construct_end(),
	};
	if (!EVP_MAC_CTX_set_params(ctx, params) || pthread_setspecific(hmac_ctx_key, ctx) != 0) {
		EVP_MAC_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

/* ---- the content ---- */

static int ext_order(const void *x, const void *y)
{
	const struct remoting_ext_field *a = *(const struct remoting_ext_field *const *)x;
	const struct remoting_ext_field *b = *(const struct remoting_ext_field *const *)y;
	return acl_key_compare(a->key, b->key);
}

/* Java leaves the signature itself and the unique-key query flag out. */
static bool ext_signed(const struct remoting_ext_field *e)
{
	return e->key && e->value && strcmp(e->key, ACL_EXT_SIGNATURE) != 0 &&
	       strcmp(e->key, "_UNIQUE_KEY_QUERY") != 0;
}

int acl_signature(const struct remoting_cmd *cmd, const char *secret, char *out)
{
	const struct remoting_ext_field *small[32], **order = small;
	size_t n = 0;
	int rc = RMQNS_OK;

	out[0] = '\0';
	if (cmd->ext_count > sizeof small / sizeof small[0]) {
		order = malloc(cmd->ext_count * sizeof *order);
		if (!order)
			return RMQNS_ENOMEM;
	}
	for (uint32_t i = 0; i < cmd->ext_count; i++)
		if (ext_signed(&cmd->ext[i]))
			order[n++] = &cmd->ext[i];
	if (n > 1)
		qsort(order, n, sizeof *order, ext_order);

	EVP_MAC_CTX *ctx = hmac_thread_ctx();
	unsigned char mac[EVP_MAX_MD_SIZE];
	size_t mac_len = 0;
	if (!ctx || !EVP_MAC_init(ctx, (const unsigned char *)secret, strlen(secret), NULL)) {
		rc = RMQNS_EIO;
		goto out;
	}
	for (size_t i = 0; i < n && rc == RMQNS_OK; i++)
		if (!EVP_MAC_update(ctx, (const unsigned char *)order[i]->value, strlen(order[i]->value)))
			rc = RMQNS_EIO;
	if (rc == RMQNS_OK && cmd->body && cmd->body_len &&
	    !EVP_MAC_update(ctx, cmd->body, cmd->body_len))
		rc = RMQNS_EIO;
	if (rc == RMQNS_OK && (!EVP_MAC_final(ctx, mac, &mac_len, sizeof mac) || mac_len != 20))
		rc = RMQNS_EIO;
	if (rc == RMQNS_OK)
		EVP_EncodeBlock((unsigned char *)out, mac, (int)mac_len);
out:
	if (order != small)
		free(order);
	return rc;
}

int acl_sign_cmd(struct remoting_cmd *cmd, const char *access_key, const char *secret_key,
		 struct acl_signed *s)
{
	size_t n = 2;

	memset(s, 0, sizeof *s);
	s->ext = calloc((size_t)cmd->ext_count + 2, sizeof *s->ext);
	if (!s->ext)
		return RMQNS_ENOMEM;
	/* AccessKey and Signature first: the order on the wire does not
	 * matter to a verifier, and a fixed place lets a sender patch the
	 * signature into a prepared frame */
	s->ext[0].key = ACL_EXT_ACCESS_KEY;
	s->ext[0].value = access_key;
	s->ext[1].key = ACL_EXT_SIGNATURE;
	s->ext[1].value = s->signature;
	for (uint32_t i = 0; i < cmd->ext_count; i++) {
		const struct remoting_ext_field *e = &cmd->ext[i];
		if (e->key && (strcmp(e->key, ACL_EXT_ACCESS_KEY) == 0 ||
			       strcmp(e->key, ACL_EXT_SIGNATURE) == 0))
			continue;
		s->ext[n++] = *e;
	}

	/* the signature leaves itself out (ext_signed) */
	struct remoting_cmd unsigned_cmd = *cmd;
	unsigned_cmd.ext = s->ext;
	unsigned_cmd.ext_count = (uint32_t)n;
	int rc = acl_signature(&unsigned_cmd, secret_key, s->signature);
	if (rc < 0) {
		acl_signed_free(s);
		return rc;
	}
	cmd->ext = s->ext;
	cmd->ext_count = (uint32_t)n;
	cmd->ext_present = true;
	return RMQNS_OK;
}

void acl_signed_free(struct acl_signed *s)
{
	free(s->ext);
	s->ext = NULL;
}
