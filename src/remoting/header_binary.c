/* The ROCKETMQ binary header (protocol.md §2.2), byte for byte. Every length
 * read from the wire is checked against the header length before use; the
 * header length H from the header word is the only bound trusted. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"
#include "rmqns/remoting.h"
#include "rmqns/utf8.h"
#include "remoting_int.h"

#define BIN_FIXED_LEN 17 /* code .. remark length */

static int32_t rd_s32(const uint8_t *p) { return (int32_t)rd_be32(p); }
static int16_t rd_s16(const uint8_t *p) { return (int16_t)rd_be16(p); }

/* The length text takes once repaired; *repair is set when it is not all
 * ASCII (the common case, copied as it is). */
static size_t bin_text_len(const uint8_t *s, size_t n, bool *repair)
{
	if (utf8_all_ascii(s, n))
		return n;
	*repair = true;
	return utf8_repair(NULL, s, n);
}

/* Copies text to out, repaired when some text of the header needs it;
 * returns its length. */
static size_t bin_text(char *out, const uint8_t *s, size_t n, bool repair)
{
	if (repair)
		return utf8_repair(out, s, n);
	memcpy(out, s, n);
	return n;
}

/* Walks the ext section [p, end) once. Fills ext/strings when ext != NULL;
 * otherwise only validates and sizes it. Entries whose key or value has
 * length 0 are read as null by Java and so are skipped here; a NUL byte
 * inside a key or value is refused. Text is read as Java's decoder reads
 * it, ill-formed UTF-8 as U+FFFD, as the JSON header path does: what a
 * client wrote then comes back alike in either serialization (a remark
 * naming its topic, say). */
static int bin_walk_ext(const uint8_t *p, const uint8_t *end, size_t e_len, bool *repair,
			uint32_t *count, size_t *str_bytes,
			struct remoting_ext_field *ext, char **strs)
{
	uint32_t n = 0;
	size_t bytes = 0;
	while (p < end) {
		if (end - p < 2)
			return RMQNS_EPROTO;
		int16_t kl = rd_s16(p);
		p += 2;
		if (kl < 0 || (size_t)kl > e_len || (size_t)(end - p) < (size_t)kl)
			return RMQNS_EPROTO;
		const uint8_t *key = p;
		p += kl;
		if (end - p < 4)
			return RMQNS_EPROTO;
		int32_t vl = rd_s32(p);
		p += 4;
		if (vl < 0 || (size_t)vl > e_len || (size_t)(end - p) < (size_t)vl)
			return RMQNS_EPROTO;
		const uint8_t *val = p;
		p += vl;
		if (kl == 0 || vl == 0)
			continue;
		if (!ext && (memchr(key, 0, (size_t)kl) || memchr(val, 0, (size_t)vl)))
			return RMQNS_EPROTO;
		if (n == REMOTING_MAX_EXT_FIELDS)
			return RMQNS_ETOOBIG;
		if (ext) {
			char *s = *strs;
			ext[n].key = s;
			s += bin_text(s, key, (size_t)kl, *repair);
			*s++ = 0;
			ext[n].value = s;
			s += bin_text(s, val, (size_t)vl, *repair);
			*s++ = 0;
			*strs = s;
		} else {
			bytes += bin_text_len(key, (size_t)kl, repair) + 1 +
				 bin_text_len(val, (size_t)vl, repair) + 1;
		}
		n++;
	}
	*count = n;
	*str_bytes = bytes;
	return RMQNS_OK;
}

int remoting_decode_binary_header(const uint8_t *hdr, size_t len, struct remoting_cmd *cmd)
{
	if (len < BIN_FIXED_LEN + 4)
		return RMQNS_EPROTO;
	cmd->code = rd_s16(hdr);
	cmd->language = hdr[2] <= LANG_NODE_JS ? hdr[2] : LANG_UNKNOWN;
	cmd->version = rd_s16(hdr + 3);
	cmd->opaque = rd_s32(hdr + 5);
	cmd->flag = rd_s32(hdr + 9);

	int32_t r_len = rd_s32(hdr + 13);
	if (r_len < 0 || (size_t)r_len > len - BIN_FIXED_LEN - 4)
		return RMQNS_EPROTO;
	const uint8_t *remark = hdr + BIN_FIXED_LEN;
	/* Text is handed on as C strings, so a NUL inside one cannot be carried
	 * (the JSON path refuses \u0000 for the same reason). */
	if (memchr(remark, 0, (size_t)r_len))
		return RMQNS_EPROTO;
	const uint8_t *p = remark + r_len;
	int32_t e_len = rd_s32(p);
	p += 4;
	if (e_len < 0 || (size_t)e_len > (size_t)(hdr + len - p))
		return RMQNS_EPROTO;
	const uint8_t *end = p + e_len;
	/* Bytes between the ext section and H are ignored, as Java does. */

	bool repair = false;
	uint32_t count;
	size_t str_bytes;
	int rc = bin_walk_ext(p, end, (size_t)e_len, &repair, &count, &str_bytes, NULL, NULL);
	if (rc)
		return rc;

	size_t r_size = bin_text_len(remark, (size_t)r_len, &repair);
	size_t total = (size_t)count * sizeof(struct remoting_ext_field) + str_bytes +
		       (r_len ? r_size + 1 : 0);
	cmd->ext_present = e_len > 0;
	if (total == 0)
		return RMQNS_OK;
	uint8_t *storage = malloc(total);
	if (!storage)
		return RMQNS_ENOMEM;
	struct remoting_ext_field *ext = (struct remoting_ext_field *)storage;
	char *strs = (char *)(storage + (size_t)count * sizeof(*ext));
	if (r_len) {
		cmd->remark = strs;
		strs += bin_text(strs, remark, (size_t)r_len, repair);
		*strs++ = 0;
	}
	rc = bin_walk_ext(p, end, (size_t)e_len, &repair, &count, &str_bytes, count ? ext : NULL, &strs);
	if (rc) { /* cannot happen: the same bytes passed a moment ago */
		free(storage);
		return rc;
	}
	cmd->storage = storage;
	cmd->ext = count ? ext : NULL;
	cmd->ext_count = count;
	return RMQNS_OK;
}

int remoting_encode_binary_header(const struct remoting_cmd *cmd, struct buf *out)
{
	size_t r_len = cmd->remark ? strlen(cmd->remark) : 0;
	if (r_len > INT32_MAX)
		return RMQNS_ETOOBIG;
	uint64_t e_len = 0;
	for (uint32_t i = 0; i < cmd->ext_count; i++) {
		const struct remoting_ext_field *f = &cmd->ext[i];
		if (!f->key || !f->value)
			continue;
		size_t kl = strlen(f->key), vl = strlen(f->value);
		if (kl > INT16_MAX || vl > INT32_MAX)
			return RMQNS_ETOOBIG;
		e_len += 2 + kl + 4 + vl;
	}
	if (e_len > INT32_MAX)
		return RMQNS_ETOOBIG;

	int rc = buf_reserve(out, BIN_FIXED_LEN + r_len + 4 + (size_t)e_len);
	if (rc)
		return rc;
	uint8_t fixed[BIN_FIXED_LEN];
	fixed[0] = (uint8_t)((uint32_t)cmd->code >> 8);
	fixed[1] = (uint8_t)cmd->code;
	/* A language we have no code for goes out as a byte no release uses,
	 * which every reader takes as "unknown" again. */
	fixed[2] = cmd->language >= 0 && cmd->language <= LANG_NODE_JS ? (uint8_t)cmd->language : 0xFF;
	fixed[3] = (uint8_t)((uint32_t)cmd->version >> 8);
	fixed[4] = (uint8_t)cmd->version;
	wr_be32(fixed + 5, (uint32_t)cmd->opaque);
	wr_be32(fixed + 9, (uint32_t)cmd->flag);
	wr_be32(fixed + 13, (uint32_t)r_len);
	/* Space is reserved, so none of these appends can fail. */
	buf_append(out, fixed, sizeof(fixed));
	buf_append(out, cmd->remark, r_len);
	buf_put_be32(out, (uint32_t)e_len);
	for (uint32_t i = 0; i < cmd->ext_count; i++) {
		const struct remoting_ext_field *f = &cmd->ext[i];
		if (!f->key || !f->value)
			continue;
		size_t kl = strlen(f->key), vl = strlen(f->value);
		buf_put_be16(out, (uint16_t)kl);
		buf_append(out, f->key, kl);
		buf_put_be32(out, (uint32_t)vl);
		buf_append(out, f->value, vl);
	}
	return RMQNS_OK;
}
