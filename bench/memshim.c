// A heap meter for peak-memory benchmarks: preloaded into a process (LD_PRELOAD), it counts the live
// bytes of every malloc-family allocation and their high-water mark, so that graft and PyTorch are
// measured by one instrument. The process reads and resets the meter through two C functions:
//   long memshim_live(void);        // bytes allocated now (usable sizes)
//   long memshim_reset_peak(void);  // sets the high-water mark to the live bytes, returns them
//   long memshim_peak(void);        // the high-water mark since the last reset
// Build: gcc -O2 -shared -fPIC bench/memshim.c -o memshim.so   (bench/run_memory.sh does it)
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

// glibc's own entry points: calling them avoids dlsym (which itself allocates) during start-up
extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void* __libc_memalign(size_t, size_t);
extern void __libc_free(void*);

static _Atomic long live_bytes, peak_bytes;

static void* count(void* p) {
  if (p) {
    long now = atomic_fetch_add(&live_bytes, (long)malloc_usable_size(p)) + (long)malloc_usable_size(p);
    long peak = atomic_load(&peak_bytes);
    while (now > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, now)) {
    }
  }
  return p;
}

static void uncount(void* p) {
  if (p) atomic_fetch_sub(&live_bytes, (long)malloc_usable_size(p));
}

void* malloc(size_t n) { return count(__libc_malloc(n)); }
void* calloc(size_t k, size_t n) { return count(__libc_calloc(k, n)); }
void free(void* p) {
  uncount(p);
  __libc_free(p);
}
void* realloc(void* p, size_t n) {
  uncount(p);
  return count(__libc_realloc(p, n));
}
void* memalign(size_t a, size_t n) { return count(__libc_memalign(a, n)); }
void* aligned_alloc(size_t a, size_t n) { return count(__libc_memalign(a, n)); }
void* valloc(size_t n) { return count(__libc_memalign(4096, n)); }
int posix_memalign(void** out, size_t a, size_t n) {
  void* p = count(__libc_memalign(a, n));
  if (!p && n) return ENOMEM;
  *out = p;
  return 0;
}

long memshim_live(void) { return atomic_load(&live_bytes); }
long memshim_peak(void) { return atomic_load(&peak_bytes); }
long memshim_reset_peak(void) {
  long now = atomic_load(&live_bytes);
  atomic_store(&peak_bytes, now);
  return now;
}
