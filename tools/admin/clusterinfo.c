/* ClusterInfo to sorted broker rows (clusterinfo.h). */
#include <stdlib.h>
#include <string.h>

#include "clusterinfo.h"

static int broker_row_cmp(const void *pa, const void *pb)
{
	const struct broker_row *a = pa, *b = pb;
	int c = strcmp(a->cluster, b->cluster);
	if (c == 0)
		c = strcmp(a->name, b->name);
	if (c == 0)
		c = (a->id > b->id) - (a->id < b->id);
	return c;
}

static int broker_rows_push(struct broker_rows *out, size_t *cap, const struct broker_row *row)
{
	if (out->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct broker_row *nv = realloc(out->v, ncap * sizeof *nv);
		if (!nv)
			return -1;
		out->v = nv;
		*cap = ncap;
	}
	out->v[out->n++] = *row;
	return 0;
}

int broker_rows_build(json_t *info, struct broker_rows *out)
{
	json_t *brokers = json_object_get(info, "brokerAddrTable");
	json_t *clusters = json_object_get(info, "clusterAddrTable");
	const char *cluster;
	json_t *names;
	size_t cap = 0;

	memset(out, 0, sizeof *out);
	out->info = info;
	if (!json_is_object(brokers) || !json_is_object(clusters))
		return -1;
	json_object_foreach(clusters, cluster, names) {
		size_t i;
		json_t *name;
		json_array_foreach(names, i, name) {
			json_t *group = json_object_get(brokers, json_string_value(name) ? json_string_value(name) : "");
			json_t *addrs = json_object_get(group, "brokerAddrs");
			const char *id;
			json_t *addr;
			if (!json_is_object(addrs))
				continue;
			json_object_foreach(addrs, id, addr) {
				struct broker_row row = {
					.cluster = cluster,
					.name = json_string_value(name),
					.addr = json_string_value(addr) ? json_string_value(addr) : "",
					.id = strtoll(id, NULL, 10),
					.acting_master_enabled = json_is_true(json_object_get(group, "enableActingMaster")),
				};
				row.role = row.id == 0 ? ROLE_MASTER : ROLE_SLAVE;
				if (broker_rows_push(out, &cap, &row) < 0)
					return -1;
			}
		}
	}
	if (out->n > 1)
		qsort(out->v, out->n, sizeof *out->v, broker_row_cmp);
	return 0;
}

void broker_rows_free(struct broker_rows *rows)
{
	free(rows->v);
	json_decref(rows->info);
	memset(rows, 0, sizeof *rows);
}

const char *broker_role_name(enum broker_role role)
{
	switch (role) {
	case ROLE_MASTER: return "master";
	case ROLE_SLAVE: return "slave";
	case ROLE_ACTING_MASTER: return "acting master";
	}
	return "?";
}
