/* tl_threads.h: the host build's fork-join over rows (POSIX threads).
 *
 * A kernel hands tl_parallel_rows a function over a range of rows [begin, end) with its own
 * scratch `col`. With TL_HOST_THREADS defined (the host build that tractile runs from Python
 * defines it and links with -pthread) and threads > 1, the rows are split into that many
 * contiguous ranges, each a whole number of `block` rows: the calling thread runs the first with
 * the arena's scratch, threads created for the call run the others, each with scratch on its own
 * stack (TL_THREAD_COL_BYTES at most; layers needing more stay on one thread). Every output is
 * computed by one thread exactly as on one, so results do not depend on the thread count.
 * Without TL_HOST_THREADS (microcontrollers, generated projects) this is a plain call. */
#ifndef TL_THREADS_H
#define TL_THREADS_H

#include <stddef.h>
#include <stdint.h>

#define TL_THREADS_MAX 64
#define TL_THREAD_COL_BYTES (256 * 1024)
/* multiply-adds below which a layer is not worth creating threads for (about 0.1 ms of int8 work
 * with AVX2 against some 20 us to create and join a thread) */
#define TL_THREADS_MIN_WORK (1L << 22)

typedef void (*tl_rows_fn)(const void *args, int32_t begin, int32_t end, void *col);

/* whether [a, a + a_bytes) and [b, b + b_bytes) share no byte (outputs overlapping their inputs
 * must be computed in order, on one thread) */
static inline int tl_disjoint(const void *a, size_t a_bytes, const void *b, size_t b_bytes) {
  const uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return x + a_bytes <= y || y + b_bytes <= x;
}

#ifdef TL_HOST_THREADS
#include <pthread.h>

typedef struct {
  tl_rows_fn fn;
  const void *args;
  int32_t begin, end;
} tl_rows_task;

static inline void *tl_rows_worker(void *task) {
  const tl_rows_task *t = (const tl_rows_task *)task;
  union {
    unsigned char bytes[TL_THREAD_COL_BYTES];
    double align_float;
    int64_t align_int;
  } col;
  t->fn(t->args, t->begin, t->end, col.bytes);
  return NULL;
}
#endif

/* fn over rows [0, rows) on up to `threads` threads (see above); `work` multiply-adds in all */
static inline void tl_parallel_rows(tl_rows_fn fn, const void *args, int32_t rows, int32_t block, int32_t threads,
                                    void *col, size_t col_bytes, int64_t work) {
#ifdef TL_HOST_THREADS
  const int32_t blocks = (rows + block - 1) / block;
  int32_t n = threads < TL_THREADS_MAX ? threads : TL_THREADS_MAX, i;
  if (n > blocks) n = blocks;
  if (n > 1 && col_bytes <= TL_THREAD_COL_BYTES && work >= TL_THREADS_MIN_WORK) {
    pthread_t ids[TL_THREADS_MAX];
    int started[TL_THREADS_MAX];
    tl_rows_task tasks[TL_THREADS_MAX];
    pthread_attr_t attr;
    const int attr_made = pthread_attr_init(&attr) == 0;
    const int attr_ok = attr_made && pthread_attr_setstacksize(&attr, TL_THREAD_COL_BYTES + (256 * 1024)) == 0;
    for (i = 0; i < n; ++i) {
      const int32_t first = (int32_t)((int64_t)blocks * i / n) * block;
      const int32_t last = (int32_t)((int64_t)blocks * (i + 1) / n) * block;
      tasks[i].fn = fn;
      tasks[i].args = args;
      tasks[i].begin = first;
      tasks[i].end = last < rows ? last : rows;
      started[i] = i > 0 && attr_ok && pthread_create(&ids[i], &attr, tl_rows_worker, &tasks[i]) == 0;
    }
    fn(args, tasks[0].begin, tasks[0].end, col);
    for (i = 1; i < n; ++i) {
      if (started[i])
        pthread_join(ids[i], NULL);
      else
        fn(args, tasks[i].begin, tasks[i].end, col); /* no thread to be had: this one runs the range */
    }
    if (attr_made) pthread_attr_destroy(&attr);
    return;
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
