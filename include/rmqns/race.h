/* Hand-off annotations for ThreadSanitizer, and the read-side section
 * over RCU-published state. liburcu's queues synchronise
 * with inline assembly TSan cannot see, so a producer marks an object
 * released before it queues it and the consumer marks it acquired after it
 * takes it. Outside TSan builds the macros compile to nothing. */
#ifndef RMQNS_RACE_H
#define RMQNS_RACE_H

#if defined(__SANITIZE_THREAD__)
#define RMQNS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RMQNS_TSAN 1
#endif
#endif

#ifdef RMQNS_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define race_release(p) __tsan_release((void *)(p))
#define race_acquire(p) __tsan_acquire((void *)(p))
#else
#define race_release(p) ((void)(p))
#define race_acquire(p) ((void)(p))
#endif

/* TSan cannot see urcu's grace periods either: every reader releases this
 * token as it leaves a read-side section (race_reader_done, just before
 * rcu_read_unlock) and every free that waited for a grace period acquires
 * it (race_grace_passed). Builds with -DRMQNS_TSAN_RECLAIM free that way;
 * other TSan builds keep what they replace until teardown. */
extern int race_grace_token;
#define race_reader_done() race_release(&race_grace_token)
#define race_grace_passed() race_acquire(&race_grace_token)
/* A read-side section over the state published through RCU (route tables,
 * options, KV tables): rcu_read_lock()/rcu_read_unlock() plus
 * race_reader_done. Readers of any of it use these. */
void state_read_lock(void);
void state_read_unlock(void);

#if defined(RMQNS_TSAN) && !defined(RMQNS_TSAN_RECLAIM)
#define RMQNS_TSAN_KEEP 1
#endif

#endif
