/* Remote-address patterns of plain_acl.yml (acl.h), in the forms Java's
 * RemoteAddressStrategyFactory accepts, parsed once into sets and byte
 * ranges so that a match is a few comparisons. */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "rmqns/acl.h"
#include "rmqns/err.h"

static bool ip_parse(const char *text, size_t len, struct acl_ip *out)
{
	char buf[INET6_ADDRSTRLEN + 1];

	memset(out, 0, sizeof *out);
	while (len > 0 && isspace((unsigned char)*text)) {
		text++;
		len--;
	}
	while (len > 0 && isspace((unsigned char)text[len - 1]))
		len--;
	if (len == 0 || len >= sizeof buf)
		return false;
	memcpy(buf, text, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET, buf, out->b) == 1) {
		out->family = AF_INET;
		return true;
	}
	if (inet_pton(AF_INET6, buf, out->b) == 1) {
		static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF };
		if (memcmp(out->b, mapped, sizeof mapped) == 0) {
			memmove(out->b, out->b + 12, 4);
			memset(out->b + 4, 0, 12);
			out->family = AF_INET;
		} else {
			out->family = AF_INET6;
		}
		return true;
	}
	return false;
}

bool acl_ip_of_peer(const char *peer, struct acl_ip *out)
{
	memset(out, 0, sizeof *out);
	if (!peer)
		return false;
	if (peer[0] == '[') {
		const char *end = strchr(peer, ']');
		return end && ip_parse(peer + 1, (size_t)(end - peer - 1), out);
	}
	const char *colon = strrchr(peer, ':');
	return ip_parse(peer, colon ? (size_t)(colon - peer) : strlen(peer), out);
}

static int set_add(struct acl_addr *a, const char *text, size_t len, char *err, size_t errlen)
{
	struct acl_ip ip;

	if (!ip_parse(text, len, &ip)) {
		snprintf(err, errlen, "'%.*s' is not an IP address", (int)(len > 64 ? 64 : len), text);
		return RMQNS_EINVAL;
	}
	struct acl_ip *grown = realloc(a->set, (a->n + 1) * sizeof *grown);
	if (!grown) {
		snprintf(err, errlen, "out of memory");
		return RMQNS_ENOMEM;
	}
	a->set = grown;
	a->set[a->n++] = ip;
	return RMQNS_OK;
}

/* "a,b,c": each an exact address. */
static int parse_list(const char *p, struct acl_addr *a, char *err, size_t errlen)
{
	a->kind = ACL_ADDR_SET;
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		int rc = set_add(a, p, len, err, errlen);
		if (rc < 0)
			return rc;
		if (!comma)
			return RMQNS_OK;
		p = comma + 1;
	}
}

/* "192.168.1.{1,2,3}" or "fe80::{1,2}": the prefix before '{' with each item. */
static int parse_braces(const char *p, struct acl_addr *a, char *err, size_t errlen)
{
	const char *open = strchr(p, '{');
	size_t plen = open ? (size_t)(open - p) : 0;
	char item[INET6_ADDRSTRLEN + 8];

	if (!open || plen == 0 || (p[plen - 1] != '.' && p[plen - 1] != ':') ||
	    plen >= INET6_ADDRSTRLEN) {
		snprintf(err, errlen, "'%s': a {} list must follow a prefix ending in '.' or ':'", p);
		return RMQNS_EINVAL;
	}
	a->kind = ACL_ADDR_SET;
	const char *q = open + 1;
	for (;;) {
		const char *end = q + strcspn(q, ",}");
		size_t len = (size_t)(end - q);
		if (len == 0 || plen + len >= sizeof item) {
			snprintf(err, errlen, "'%s': an empty or overlong item in {}", p);
			return RMQNS_EINVAL;
		}
		memcpy(item, p, plen);
		memcpy(item + plen, q, len);
		int rc = set_add(a, item, plen + len, err, errlen);
		if (rc < 0)
			return rc;
		if (*end != ',')
			break;
		q = end + 1;
	}
	return RMQNS_OK;
}

static bool parse_byte(const char *s, size_t len, unsigned *out)
{
	unsigned v = 0;

	while (len > 0 && isspace((unsigned char)*s)) {
		s++;
		len--;
	}
	while (len > 0 && isspace((unsigned char)s[len - 1]))
		len--;
	if (len == 0 || len > 3)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	*out = v;
	return v <= 255;
}

/* IPv4 with '*' or "a-b" in one of the last three segments: the segments
 * before it exact, the ones after it not looked at (as in Java). */
static int parse_range4(const char *p, struct acl_addr *a, char *err, size_t errlen)
{
	const char *seg[4];
	size_t len[4];
	const char *q = p;
	int nseg = 0;

	for (;;) {
		const char *dot = strchr(q, '.');
		if (nseg == 4) {
			nseg = 5;
			break;
		}
		seg[nseg] = q;
		len[nseg] = dot ? (size_t)(dot - q) : strlen(q);
		nseg++;
		if (!dot)
			break;
		q = dot + 1;
	}
	if (nseg != 4 || strchr(p, ':')) {
		snprintf(err, errlen, "'%s': a range must be an IPv4 pattern of four segments", p);
		return RMQNS_EINVAL;
	}
	a->kind = ACL_ADDR_RANGE4;
	for (int i = 0; i < 4; i++) {
		a->lo[i] = 0;
		a->hi[i] = 255;
	}
	for (int i = 0; i < 4; i++) {
		unsigned lo, hi;
		const char *dash = memchr(seg[i], '-', len[i]);
		bool star = len[i] == 1 && seg[i][0] == '*';
		if (i > 0 && (star || dash)) {
			if (dash) {
				if (!parse_byte(seg[i], (size_t)(dash - seg[i]), &lo) ||
				    !parse_byte(dash + 1, len[i] - (size_t)(dash - seg[i]) - 1, &hi) || lo > hi) {
					snprintf(err, errlen, "'%s': bad range '%.*s' (0-255, start <= end)", p,
						 (int)len[i], seg[i]);
					return RMQNS_EINVAL;
				}
				a->lo[i] = (uint8_t)lo;
				a->hi[i] = (uint8_t)hi;
			}
			return RMQNS_OK;
		}
		if (!parse_byte(seg[i], len[i], &lo)) {
			snprintf(err, errlen, "'%s': segment '%.*s' is not 0-255", p, (int)len[i], seg[i]);
			return RMQNS_EINVAL;
		}
		a->lo[i] = a->hi[i] = (uint8_t)lo;
	}
	return RMQNS_OK; /* not reached: the caller saw a '*' or '-' */
}

int acl_addr_parse(const char *pattern, struct acl_addr *out, char *err, size_t errlen)
{
	char *p;
	int rc;

	memset(out, 0, sizeof *out);
	if (!pattern)
		return RMQNS_OK;
	while (isspace((unsigned char)*pattern))
		pattern++;
	size_t n = strlen(pattern);
	while (n > 0 && isspace((unsigned char)pattern[n - 1]))
		n--;
	if (n == 0)
		return RMQNS_OK; /* blank: matches nothing */
	p = strndup(pattern, n);
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return RMQNS_ENOMEM;
	}
	if (strcmp(p, "*") == 0 || strcmp(p, "*.*.*.*") == 0 || strcmp(p, "*:*:*:*:*:*:*:*") == 0) {
		out->kind = ACL_ADDR_ANY;
		rc = RMQNS_OK;
	} else if (p[n - 1] == '}') {
		rc = parse_braces(p, out, err, errlen);
	} else if (strchr(p, ',')) {
		rc = parse_list(p, out, err, errlen);
	} else if (strchr(p, '*') || strchr(p, '-')) {
		rc = parse_range4(p, out, err, errlen);
	} else {
		out->kind = ACL_ADDR_SET;
		rc = set_add(out, p, n, err, errlen);
	}
	free(p);
	if (rc < 0)
		acl_addr_free(out);
	return rc;
}

void acl_addr_free(struct acl_addr *a)
{
	free(a->set);
	memset(a, 0, sizeof *a);
}

bool acl_addr_match(const struct acl_addr *a, const struct acl_ip *ip)
{
	switch (a->kind) {
	case ACL_ADDR_NONE:
		return false;
	case ACL_ADDR_ANY:
		return true;
	case ACL_ADDR_SET:
		for (size_t i = 0; i < a->n; i++)
			if (a->set[i].family == ip->family &&
			    memcmp(a->set[i].b, ip->b, ip->family == AF_INET ? 4 : 16) == 0)
				return true;
		return false;
	case ACL_ADDR_RANGE4:
		if (ip->family != AF_INET)
			return false;
		for (int i = 0; i < 4; i++)
			if (ip->b[i] < a->lo[i] || ip->b[i] > a->hi[i])
				return false;
		return true;
	}
	return false;
}
