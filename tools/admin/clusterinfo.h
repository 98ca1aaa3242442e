/* ClusterInfo (the GET_BROKER_CLUSTER_INFO body) as rows: one per broker
 * address, in the order mqadmin prints them (cluster, broker name, id).
 * Rows point into the parsed body, which the row set owns. */
#ifndef ADMIN_CLUSTERINFO_H
#define ADMIN_CLUSTERINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

enum broker_role {
	ROLE_MASTER,        /* id 0 */
	ROLE_SLAVE,         /* any other id */
	ROLE_ACTING_MASTER, /* a slave the NameServer routes as id 0 (seen in a route) */
};

struct broker_row {
	const char *cluster;
	const char *name;
	const char *addr;
	int64_t id;
	bool acting_master_enabled; /* the group's enableActingMaster (5.x brokers) */
	enum broker_role role;
};

struct broker_rows {
	struct broker_row *v;
	size_t n;
	json_t *info; /* the ClusterInfo body the rows point into */
};

/* Builds the rows from a parsed ClusterInfo; takes the reference to info
 * (also on failure). Groups no cluster lists are left out, as mqadmin
 * does. 0, or -1 (out of memory, or not a ClusterInfo). */
int broker_rows_build(json_t *info, struct broker_rows *out);
void broker_rows_free(struct broker_rows *rows);

const char *broker_role_name(enum broker_role role);

#endif
