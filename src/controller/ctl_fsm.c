/* The controller's Raft state machine: log entries carrying one event
 * each, applied to the node's ctl_state, and snapshots of that state.
 * libraft calls these on the node's thread. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <raft.h>

#include "ctl_internal.h"
#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/log.h"

/* A log entry: u32 length of the event, the event (ctl_event_encode),
 * zeros up to a multiple of 8 bytes: libraft's segment files keep entry
 * sizes in 8-byte words and read back unpadded sizes wrong. */
int ctl_entry_wrap(const struct ctl_event *ev, struct raft_buffer *out)
{
	struct buf b = BUF_INIT;
	int rc = buf_put_be32(&b, 0);

	if (!rc)
		rc = ctl_event_encode(ev, &b);
	if (rc) {
		buf_free(&b);
		return rc;
	}
	wr_be32(b.data, (uint32_t)(b.len - 4));
	size_t padded = (b.len + 7) & ~(size_t)7;
	out->base = raft_malloc(padded);
	if (!out->base) {
		buf_free(&b);
		return RMQNS_ENOMEM;
	}
	memcpy(out->base, b.data, b.len);
	memset((uint8_t *)out->base + b.len, 0, padded - b.len);
	out->len = padded;
	buf_free(&b);
	return 0;
}

static int entry_unwrap(const struct raft_buffer *buf, struct ctl_event *ev)
{
	const uint8_t *p = buf->base;

	if (buf->len < 4 || buf->len % 8)
		return RMQNS_EINVAL;
	size_t n = rd_be32(p);
	if (n > buf->len - 4 || buf->len - 4 - n >= 8)
		return RMQNS_EINVAL;
	for (size_t i = 4 + n; i < buf->len; i++)
		if (p[i])
			return RMQNS_EINVAL;
	return ctl_event_decode(p + 4, n, ev);
}

static int fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
	struct ctl_state *state = fsm->data;
	struct ctl_event ev;
	int rc;

	*result = NULL;
	if (buf->len == 0)
		return 0; /* an empty entry is a no-op */
	if (entry_unwrap(buf, &ev) != 0) {
		/* every node refuses it alike: the states stay equal */
		log_error_limited("controller: log entry of %zu bytes is not an event; skipped", buf->len);
		return RAFT_MALFORMED;
	}
	rc = ctl_state_apply(state, &ev);
	ctl_event_clear(&ev);
	if (rc == RMQNS_ENOMEM) {
		/* this node's state would part from the others' for good */
		log_error("controller: out of memory applying a committed event; stopping");
		abort();
	}
	return rc ? RAFT_MALFORMED : 0;
}

static int fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n_bufs)
{
	const struct ctl_state *state = fsm->data;
	struct buf img = BUF_INIT;
	struct raft_buffer *b = malloc(sizeof *b);

	if (!b)
		return RAFT_NOMEM;
	if (ctl_state_snapshot(state, &img) != 0) {
		free(b);
		buf_free(&img);
		return RAFT_NOMEM;
	}
	b->base = img.data;
	b->len = img.len;
	*bufs = b;
	*n_bufs = 1;
	return 0;
}

static int fsm_snapshot_finalize(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n_bufs)
{
	(void)fsm;
	for (unsigned i = 0; i < *n_bufs; i++)
		free((*bufs)[i].base);
	free(*bufs);
	*bufs = NULL;
	*n_bufs = 0;
	return 0;
}

static int fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	struct ctl_state *state = fsm->data;

	if (ctl_state_restore(state, buf->base, buf->len) != 0) {
		log_error_limited("controller: snapshot of %zu bytes does not restore", buf->len);
		return RAFT_MALFORMED;
	}
	raft_free(buf->base);
	return 0;
}

void ctl_fsm_init(struct raft_fsm *fsm, struct ctl_state *state)
{
	*fsm = (struct raft_fsm){ .version = 2, .data = state, .apply = fsm_apply,
				  .snapshot = fsm_snapshot, .restore = fsm_restore,
				  .snapshot_finalize = fsm_snapshot_finalize };
}
