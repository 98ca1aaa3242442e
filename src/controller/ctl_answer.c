/* Controller answers: building one (code, remark, ext fields in name
 * order, body) and encoding it as the response frame to its request. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_internal.h"
#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "rmqns/remoting.h"

void ctl_answer_clear(struct ctl_answer *ans)
{
	free(ans->remark);
	for (uint32_t i = 0; i < ans->ext_count; i++)
		free(ans->ext[i].value);
	buf_free(&ans->body);
	ctl_event_clear(&ans->event);
	for (uint32_t i = 0; i < ans->pre_count; i++)
		ctl_event_clear(&ans->pre[i]);
	free(ans->pre);
	memset(ans, 0, sizeof *ans);
}

int ctl_answer_set(struct ctl_answer *ans, int32_t code, const char *fmt, ...)
{
	char *remark = NULL;

	ans->code = code;
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		int n = vasprintf(&remark, fmt, ap);
		va_end(ap);
		if (n < 0)
			return RMQNS_ENOMEM;
	}
	free(ans->remark);
	ans->remark = remark;
	return 0;
}

int ctl_answer_ext(struct ctl_answer *ans, const char *key, const char *value)
{
	uint32_t at;

	ans->ext_present = true;
	if (!value)
		return 0;
	if (ans->ext_count == CTL_MAX_ANSWER_EXT)
		return RMQNS_ETOOBIG;
	char *copy = strdup(value);
	if (!copy)
		return RMQNS_ENOMEM;
	/* kept in name order, as the header writer expects them */
	for (at = ans->ext_count; at > 0 && strcmp(ans->ext[at - 1].key, key) > 0; at--)
		ans->ext[at] = ans->ext[at - 1];
	ans->ext[at].key = key;
	ans->ext[at].value = copy;
	ans->ext_count++;
	return 0;
}

int ctl_answer_ext_i64(struct ctl_answer *ans, const char *key, int64_t v)
{
	char text[24];

	snprintf(text, sizeof text, "%" PRId64, v);
	return ctl_answer_ext(ans, key, text);
}

int ctl_answer_ext_bool(struct ctl_answer *ans, const char *key, bool v)
{
	return ctl_answer_ext(ans, key, v ? "true" : "false");
}

int ctl_answer_body_sss(struct ctl_answer *ans, const int64_t *ids, uint32_t n, int32_t epoch)
{
	struct jw w;

	buf_reset(&ans->body);
	jw_init(&w, &ans->body, JW_DEFAULT);
	jw_obj_begin(&w);
	jw_key(&w, "syncStateSet");
	jw_arr_begin(&w);
	for (uint32_t i = 0; i < n; i++)
		jw_int(&w, ids[i]);
	jw_arr_end(&w);
	jw_key(&w, "syncStateSetEpoch");
	jw_int(&w, epoch);
	jw_obj_end(&w);
	ans->has_body = true;
	return jw_error(&w);
}

int ctl_answer_encode_cmd(const struct ctl_answer *ans, struct remoting_cmd *cmd, struct buf *out)
{
	struct remoting_ext_field ext[CTL_MAX_ANSWER_EXT];

	for (uint32_t i = 0; i < ans->ext_count; i++)
		ext[i] = (struct remoting_ext_field){ ans->ext[i].key, ans->ext[i].value };
	cmd->ext = ans->ext_count ? ext : NULL;
	cmd->ext_count = ans->ext_count;
	cmd->ext_present = ans->ext_present;
	if (ans->has_body) {
		cmd->body = ans->body.data;
		cmd->body_len = (uint32_t)ans->body.len;
	}
	int rc = remoting_encode(cmd, out);
	cmd->ext = NULL; /* pointed at this frame's array */
	return rc;
}

int ctl_answer_encode(const struct ctl_answer *ans, const struct remoting_cmd *req, struct buf *out)
{
	struct remoting_cmd rsp;

	remoting_response_init(&rsp, req, ans->code, ans->remark);
	return ctl_answer_encode_cmd(ans, &rsp, out);
}
