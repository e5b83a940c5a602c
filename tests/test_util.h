/* test_util.h -- the scaffolding the tests share (C11; C++ for tests/test_gpu.cu).

   Checks: the counters `failures` and `checks`, and CHECK(cond, fmt, ...), which counts a check
   and, when cond is false, counts a failure and prints "FAIL file:line: " and the message. A test
   that reports failures its own way defines TEST_UTIL_NO_CHECK before the include.

   PRNG, only when the includer picks one by defining its seed before the include:
     TEST_XORSHIFT64_SEED      xorshift64 (shifts 13, 7, 17): rnd() returns the new state
     TEST_XORSHIFT64STAR_SEED  xorshift64* (shifts 12, 25, 27): rnd() returns the new state
                               times 0x2545f4914f6cdd1d
   Either gives the state rng_state (starting at the seed) and rnd(), and the helpers below, each
   drawing one rnd(). They are static inline, so the helpers a test does not use do not warn. */
#ifndef CKPT_TEST_UTIL_H
#define CKPT_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>

/* Sanitizer builds (CKPT_TEST_SANITIZED, from CMake) and unoptimised ones run fewer random cases:
   the sanitizers look for memory errors and undefined behaviour, which the reduced counts reach. */
#if !defined(__OPTIMIZE__) || defined(CKPT_TEST_SANITIZED)
#define TEST_REDUCED 1
#else
#define TEST_REDUCED 0
#endif

#ifndef TEST_UTIL_NO_CHECK
static int failures = 0, checks = 0;
#define CHECK(cond, ...) do { checks++; if (!(cond)) { failures++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)
#endif

#if defined(TEST_XORSHIFT64_SEED) && defined(TEST_XORSHIFT64STAR_SEED)
#error "test_util.h: define one of TEST_XORSHIFT64_SEED and TEST_XORSHIFT64STAR_SEED"
#endif

#if defined(TEST_XORSHIFT64_SEED) || defined(TEST_XORSHIFT64STAR_SEED)
#ifdef TEST_XORSHIFT64_SEED
static uint64_t rng_state = TEST_XORSHIFT64_SEED;
static inline uint64_t rnd(void) {
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return rng_state;
}
#else
static uint64_t rng_state = TEST_XORSHIFT64STAR_SEED;
static inline uint64_t rnd(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}
#endif
static inline int rnd_int(int lo, int hi) { return lo + (int)(rnd() % (uint64_t)(hi - lo + 1)); } /* [lo,hi] */
static inline int rnd_chance(int percent) { return (int)(rnd() % 100u) < percent; }
static inline double rnd_unit(void) { return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0); } /* [0,1) */
static inline uint64_t rnd_u64(uint64_t lo, uint64_t hi) { return lo + rnd() % (hi - lo + 1); } /* [lo,hi] */
static inline float rnd_float(void) { return (float)((double)(rnd() >> 11) / 9007199254740992.0) * 2.0f - 1.0f; } /* [-1,1) */
#endif

#endif
