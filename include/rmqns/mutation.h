/* A change queued for the registrar (registrar.h): the type alone, so that
 * the modules owning the state (route, config) can define their changes
 * without the registrar's API. */
#ifndef RMQNS_MUTATION_H
#define RMQNS_MUTATION_H

#include <urcu/wfcqueue.h>

struct mutation;

/* Runs on the registrar thread; applies the change, answers whoever waits,
 * and frees the mutation. */
typedef void (*mutation_apply_fn)(struct mutation *m);

struct mutation {
	struct cds_wfcq_node node;
	mutation_apply_fn apply;
	/* Frees the mutation unapplied and unanswered: used for what is still
	 * queued at the shutdown deadline (registrar_set_deadline). NULL = the
	 * mutation is always applied (it is cheap, or must not be lost). */
	mutation_apply_fn drop;
};

#endif
