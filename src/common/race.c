/* The grace token of race.h: one int that ThreadSanitizer builds use as the
 * synchronisation point standing for an RCU grace period. */
#include "rmqns/race.h"

int race_grace_token;
