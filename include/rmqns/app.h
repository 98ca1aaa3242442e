/* The running NameServer: the components a request handler may reach. One
 * instance lives in main(); handlers get a pointer to it. */
#ifndef RMQNS_APP_H
#define RMQNS_APP_H

struct acl;
struct config;
struct ctl_port;
struct kv_store;
struct kv_writer;
struct route_db;
struct registrar;
struct server;
struct processor_pool;

struct app {
	struct config *config;       /* options; read with config_get_* */
	struct kv_store *kv;         /* KV config, RCU-read, written by kv_writer */
	struct kv_writer *kv_writer; /* the KV store's single writer */
	struct route_db *route;      /* route tables, RCU-read, registrar-written */
	struct registrar *registrar; /* the single writer of everything else */
	struct server *server;       /* boss and reactors */
	struct processor_pool *pool;
	struct acl *acl;             /* the ACL check (acl.h); NULL = none */
	struct ctl_port *controller; /* the embedded controller; NULL = not enabled */
	int controller_port;         /* its port, named when a controller code comes here; 0 = none */
};

#endif
