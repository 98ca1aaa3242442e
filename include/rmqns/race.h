/* Hand-off annotations for ThreadSanitizer. liburcu's queues synchronise
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

#endif
