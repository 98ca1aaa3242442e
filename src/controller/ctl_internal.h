/* Private to src/controller: helpers its files share. */
#ifndef RMQNS_CONTROLLER_CTL_INTERNAL_H
#define RMQNS_CONTROLLER_CTL_INTERNAL_H

#include "rmqns/controller.h"

/* Frees a set and everything it owns (NULL is fine). */
void ctl_set_free(struct ctl_set *set);

#endif
