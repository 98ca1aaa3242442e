/* What the HTTP endpoint shows of the embedded controller: its line in
 * /healthz, its series in /metrics and the /controller JSON. Each reads
 * only what the controller's thread published, so a stalled controller
 * shows as stalled instead of holding the HTTP thread. */
#ifndef RMQNS_HTTP_CONTROLLER_H
#define RMQNS_HTTP_CONTROLLER_H

#include <stdbool.h>
#include <stdint.h>

struct buf;
struct ctl_node;

/* Appends "controller: ok|STALLED, last turn N ms ago\n"; false when the
 * thread has not turned within stall_ms. now: CLOCK_MONOTONIC ms. */
bool http_controller_health(struct ctl_node *node, uint64_t now, uint64_t stall_ms, struct buf *out);
/* The rmqns_controller_* families. 0 or RMQNS_ENOMEM. */
int http_controller_metrics(struct ctl_node *node, uint64_t now, struct buf *out);
/* The /controller document; 0, RMQNS_EAGAIN before the first view, or
 * RMQNS_ENOMEM. */
int http_controller_json(struct ctl_node *node, struct buf *out);

#endif
