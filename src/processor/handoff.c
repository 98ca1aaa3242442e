/* The count of registrations handed to the registrar and not yet applied
 * (processor.h): the pool reads it before it takes from the broker lane,
 * the registration handler moves it, and neither calls the other. */
#include "rmqns/processor.h"

void handoff_begin(struct handoff_count *h)
{
	atomic_fetch_add(&h->n, 1);
}

void handoff_end(struct handoff_count *h)
{
	if (atomic_fetch_sub(&h->n, 1) == PROCESSOR_HANDOFF_MAX && h->reopened)
		h->reopened(h->arg);
}
