/* tl_threads.h: the host build's split of a layer's rows across threads (POSIX threads).
 *
 * A kernel hands tl_parallel_rows a function over a range of rows [begin, end) with its own
 * scratch `col`, and the context's tl_threads. With TL_HOST_THREADS defined (the host build that
 * tractile runs from Python defines it and links with -pthread) and a count above 1, the rows are
 * split into up to that many contiguous parts, each a whole number of `block` rows, run by the
 * calling thread (with the arena's scratch) and the workers of the context's pool (each with
 * scratch on its own stack: TL_THREAD_COL_BYTES at most; layers needing more stay on one thread).
 * Every output is computed by one thread exactly as on one, so results do not depend on the
 * thread count nor on which thread runs which part.
 *
 * The pool lives in the context (no heap, no globals): its count - 1 workers are started by the
 * first layer that splits and are reused by every later one. Between jobs a worker spins for
 * TL_THREADS_SPIN_NS (the next layer of a run finds it awake), then sleeps on a condition
 * variable (an idle model costs no CPU). tl_threads_release stops and joins them (the context's
 * NAME_release); a context copied byte for byte does not share its original's pool (it starts its
 * own). Parts are claimed one at a time by whoever is free, so a worker that is slow to wake or
 * failed to start only leaves more parts to the calling thread: a run never waits on it.
 * Without TL_HOST_THREADS (microcontrollers, generated projects) this is a plain call. */
#ifndef TL_THREADS_H
#define TL_THREADS_H

#include <stddef.h>
#include <stdint.h>

#define TL_THREADS_MAX 64
#define TL_THREAD_COL_BYTES (256 * 1024)
/* multiply-adds below which a layer is not worth splitting (about 0.1 ms of int8 work with AVX2) */
#define TL_THREADS_MIN_WORK (1L << 22)
/* how long a worker waits for the next job awake before it sleeps */
#ifndef TL_THREADS_SPIN_NS
#define TL_THREADS_SPIN_NS 200000L
#endif

typedef void (*tl_rows_fn)(const void *args, int32_t begin, int32_t end, void *col);

/* whether [a, a + a_bytes) and [b, b + b_bytes) share no byte (outputs overlapping their inputs
 * must be computed in order, on one thread) */
static inline int tl_disjoint(const void *a, size_t a_bytes, const void *b, size_t b_bytes) {
  const uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return x + a_bytes <= y || y + b_bytes <= x;
}

#ifdef TL_HOST_THREADS
#include <pthread.h>
#include <sched.h>
#include <time.h>

typedef struct {
  /* the job: generation << 16 | next unclaimed part << 8 | parts (claimed by compare-and-swap) */
  uint64_t word;
  int32_t finished; /* parts of the job done */
  int32_t sleepers; /* workers blocked on `wake` */
  int32_t stop;
  int32_t workers; /* threads started */
  tl_rows_fn fn;
  const void *args;
  int32_t rows, block;
  const void *self; /* the pool's own address while it is started (a byte copy of a context has another) */
  pthread_mutex_t lock;
  pthread_cond_t wake;
  pthread_t ids[TL_THREADS_MAX];
} tl_pool;
#endif

/* the context's threads: how many, and (host build) the pool that runs them */
typedef struct {
  int32_t count;
#ifdef TL_HOST_THREADS
  tl_pool pool;
#endif
} tl_threads;

/* the rows [*first, *last) of part `part` of `parts` (whole blocks but the last) */
static inline void tl_rows_part(int32_t rows, int32_t block, int32_t parts, int32_t part, int32_t *first,
                                int32_t *last) {
  const int32_t blocks = (rows + block - 1) / block;
  const int32_t end = (int32_t)((int64_t)blocks * (part + 1) / parts) * block;
  *first = (int32_t)((int64_t)blocks * part / parts) * block;
  *last = end < rows ? end : rows;
}

#ifdef TL_HOST_THREADS
static inline void tl_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || (defined(__ARM_ARCH) && __ARM_ARCH >= 7)
  __asm__ __volatile__("yield");
#endif
}

static inline int64_t tl_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* claims the next part of the pool's job and runs it with `col`; 0 (and the word seen in *seen)
 * when every part is claimed */
static inline int tl_pool_run_part(tl_pool *p, void *col, uint64_t *seen) {
  uint64_t w = __atomic_load_n(&p->word, __ATOMIC_ACQUIRE);
  for (;;) {
    const int32_t parts = (int32_t)(w & 0xff), part = (int32_t)((w >> 8) & 0xff);
    int32_t first, last;
    if (part >= parts) {
      *seen = w;
      return 0;
    }
    if (__atomic_compare_exchange_n(&p->word, &w, w + 0x100, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      /* the job cannot change before this part is finished: its fields are stable */
      tl_rows_part(p->rows, p->block, parts, part, &first, &last);
      p->fn(p->args, first, last, col);
      __atomic_fetch_add(&p->finished, 1, __ATOMIC_RELEASE);
      return 1;
    }
  }
}

/* a worker waits for the job word to change from `seen`: awake for TL_THREADS_SPIN_NS, then asleep */
static inline void tl_pool_wait(tl_pool *p, uint64_t seen) {
  const int64_t start = tl_now_ns();
  uint32_t i;
  for (i = 1;; ++i) {
    if (__atomic_load_n(&p->word, __ATOMIC_ACQUIRE) != seen || __atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) return;
    tl_pause();
    if (!(i & 63) && tl_now_ns() - start > TL_THREADS_SPIN_NS) break;
  }
  pthread_mutex_lock(&p->lock);
  __atomic_fetch_add(&p->sleepers, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&p->word, __ATOMIC_SEQ_CST) == seen && !__atomic_load_n(&p->stop, __ATOMIC_SEQ_CST))
    pthread_cond_wait(&p->wake, &p->lock);
  __atomic_fetch_sub(&p->sleepers, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&p->lock);
}

static inline void *tl_pool_worker(void *pool) {
  tl_pool *p = (tl_pool *)pool;
  union {
    unsigned char bytes[TL_THREAD_COL_BYTES];
    double align_float;
    int64_t align_int;
  } col;
  uint64_t seen = 0;
  while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
    if (!tl_pool_run_part(p, col.bytes, &seen)) tl_pool_wait(p, seen);
  }
  return NULL;
}

#if defined(__linux__) && defined(_GNU_SOURCE)
/* worker `index` of `workers` pinned to a CPU of the caller's allowed set other than the caller's
 * own, the next ones after it (when there are enough): Linux may wake a sleeping worker on the
 * CPU of the thread that woke it, where the two would share one core for the whole layer
 * (measured on a 2-vCPU VM: a third of cold runs took 1.6-2x as long as the split should) */
static inline void tl_pool_pin(pthread_t id, int32_t index, int32_t workers) {
  cpu_set_t allowed, one;
  const int cpu = sched_getcpu();
  int c, skip = index;
  if (cpu < 0 || sched_getaffinity(0, sizeof allowed, &allowed) != 0 || !CPU_ISSET(cpu, &allowed) ||
      CPU_COUNT(&allowed) < workers + 1)
    return;
  for (c = (cpu + 1) % CPU_SETSIZE;; c = (c + 1) % CPU_SETSIZE)
    if (c != cpu && CPU_ISSET(c, &allowed) && !skip--) break;
  CPU_ZERO(&one);
  CPU_SET(c, &one);
  (void)pthread_setaffinity_np(id, sizeof one, &one); /* unpinned on failure: still correct */
}
#endif

/* the started pool of `t` (its workers started now if they were not), or NULL */
static inline tl_pool *tl_pool_of(tl_threads *t) {
  tl_pool *p = &t->pool;
  pthread_attr_t attr;
  int32_t i, want;
  if (p->self == (const void *)p) return p;
  p->word = 0;
  p->finished = p->sleepers = p->stop = p->workers = 0;
  if (pthread_mutex_init(&p->lock, NULL) != 0) return NULL;
  if (pthread_cond_init(&p->wake, NULL) != 0) {
    pthread_mutex_destroy(&p->lock);
    return NULL;
  }
  p->self = p;
  want = (t->count < TL_THREADS_MAX ? t->count : TL_THREADS_MAX) - 1;
  if (pthread_attr_init(&attr) != 0) return p;
  if (pthread_attr_setstacksize(&attr, TL_THREAD_COL_BYTES + (256 * 1024)) == 0) {
    for (i = 0; i < want; ++i) {
      if (pthread_create(&p->ids[p->workers], &attr, tl_pool_worker, p) != 0) break; /* the rest: not used */
#if defined(__linux__) && defined(_GNU_SOURCE)
      tl_pool_pin(p->ids[p->workers], p->workers, want);
#endif
      ++p->workers;
    }
  }
  pthread_attr_destroy(&attr);
  return p;
}

/* fn over rows [0, rows) in `parts` parts on the pool's workers and the calling thread */
static inline void tl_pool_run(tl_pool *p, tl_rows_fn fn, const void *args, int32_t rows, int32_t block,
                               int32_t parts, void *col) {
  const uint64_t generation = (__atomic_load_n(&p->word, __ATOMIC_ACQUIRE) >> 16) + 1;
  uint64_t seen;
  uint32_t i;
  p->fn = fn;
  p->args = args;
  p->rows = rows;
  p->block = block;
  __atomic_store_n(&p->finished, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&p->word, generation << 16 | (uint64_t)parts, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST) > 0) {
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
  }
  while (tl_pool_run_part(p, col, &seen)) {
  }
  for (i = 1; __atomic_load_n(&p->finished, __ATOMIC_ACQUIRE) < parts; ++i) { /* parts other threads run */
    tl_pause();
    if (!(i & 1023)) sched_yield();
  }
}
#endif

/* a context's threads after init: one */
static inline void tl_threads_init(tl_threads *t) { t->count = 1; }

/* stops and joins the workers of the context's pool (none started, or a copy's: nothing to do);
 * the next layer that splits starts them again */
static inline void tl_threads_release(tl_threads *t) {
#ifdef TL_HOST_THREADS
  tl_pool *p = &t->pool;
  int32_t i;
  if (p->self != (const void *)p) return;
  pthread_mutex_lock(&p->lock);
  __atomic_store_n(&p->stop, 1, __ATOMIC_SEQ_CST);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  for (i = 0; i < p->workers; ++i) pthread_join(p->ids[i], NULL);
  pthread_cond_destroy(&p->wake);
  pthread_mutex_destroy(&p->lock);
  p->workers = 0;
  p->self = NULL;
#else
  (void)t;
#endif
}

/* split the large layers across `count` threads (1 to TL_THREADS_MAX; a pool of another size is released) */
static inline void tl_threads_set(tl_threads *t, int32_t count) {
  count = count < 1 ? 1 : count > TL_THREADS_MAX ? TL_THREADS_MAX : count;
  if (count != t->count) tl_threads_release(t);
  t->count = count;
}

/* whether tl_parallel_rows would split a layer of `work` multiply-adds (before its own checks) */
static inline int tl_splits(const tl_threads *threads, int64_t work) {
#ifdef TL_HOST_THREADS
  return threads && threads->count > 1 && work >= TL_THREADS_MIN_WORK;
#else
  (void)threads;
  (void)work;
  return 0;
#endif
}

/* fn over rows [0, rows) on up to threads->count threads (see above; NULL: one); `work`
 * multiply-adds in all */
static inline void tl_parallel_rows(tl_rows_fn fn, const void *args, int32_t rows, int32_t block,
                                    tl_threads *threads, void *col, size_t col_bytes, int64_t work) {
#ifdef TL_HOST_THREADS
  if (tl_splits(threads, work) && col_bytes <= TL_THREAD_COL_BYTES) {
    const int32_t blocks = (rows + block - 1) / block;
    int32_t parts = threads->count < TL_THREADS_MAX ? threads->count : TL_THREADS_MAX;
    tl_pool *p;
    if (parts > blocks) parts = blocks;
    p = parts > 1 ? tl_pool_of(threads) : NULL;
    if (p && p->workers > 0) {
      tl_pool_run(p, fn, args, rows, block, parts, col);
      return;
    }
  }
#else
  (void)block;
  (void)threads;
  (void)col_bytes;
  (void)work;
#endif
  fn(args, 0, rows, col);
}

#endif
