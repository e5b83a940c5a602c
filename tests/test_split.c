/* Model-splitting helpers: ckpt_split_by_bytes against a direct transcription of the seed's
   OffloadModel split rule, on random layer sizes (groups consecutive, non-empty, at most
   min(n, parts)); ckpt_split_segments on random structures (every model boundary kept, no
   segment starting at a no-split layer, the requested count reached whenever a brute-force
   check says it can be, cuts near the middle of the longest segment); bad arguments. */
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"

#include <stdio.h>
#include <string.h>

#define TEST_XORSHIFT64_SEED 88172645463325252ull
#include "test_util.h"

/* The seed's rule, written out: shards are filled in order; a layer moves to the next shard when
   the current one has something, the layer would take it past total/parts, and shards remain. */
static int seed_split(const uint64_t *b, int n, int parts, int *first) {
    uint64_t total = 0, target, cur = 0;
    int i, g = 0;
    if (parts > n) parts = n;
    for (i = 0; i < n; i++) total += b[i];
    target = total / (uint64_t)parts;
    first[0] = 0;
    for (i = 0; i < n; i++) {
        if (cur > 0 && cur + b[i] > target && g < parts - 1) { first[++g] = i; cur = 0; }
        cur += b[i];
    }
    return g + 1;
}

static void by_bytes(void) {
    int trial, same = 0, forced = 0;
    for (trial = 0; trial < 2000; trial++) {
        uint64_t b[40];
        int n = 1 + (int)(rnd() % 40), parts = 1 + (int)(rnd() % 12), first[40], ref[40], ng = 0, nr, i;
        for (i = 0; i < n; i++) b[i] = rnd() % 4 ? rnd() % 1000 : rnd() % 100000;
        CHECK(ckpt_split_by_bytes(b, n, parts, first, &ng) == CKPT_OK, "split");
        CHECK(ng >= 1 && ng <= (parts < n ? parts : n), "%d groups for n %d parts %d", ng, n, parts);
        CHECK(first[0] == 0, "first group starts at 0");
        for (i = 1; i < ng; i++) CHECK(first[i] > first[i - 1] && first[i] < n, "group %d starts at %d", i, first[i]);
        nr = seed_split(b, n, parts, ref);
        /* where the seed's rule never leaves a group empty, the two agree exactly */
        if (nr == ng && memcmp(ref, first, (size_t)ng * sizeof(int)) == 0) same++;
        else {
            forced++;
            CHECK(nr < (parts < n ? parts : n) && ng > nr, "n %d parts %d: differs from the seed's rule though it "
                  "filled every shard (%d groups, seed %d)", n, parts, ng, nr);
        }
    }
    CHECK(same > 1000, "only %d of 2000 splits match the seed's rule", same);
    printf("by_bytes: %d splits equal the seed's rule, %d differ where it would leave groups empty\n", same, forced);
    {   /* a worked example: sizes 5 5 5 5 | 10 | 10 into 3 parts (target 13): 5 5 | 5 5 | 10 10 */
        uint64_t b[6] = {5, 5, 5, 5, 10, 10};
        int first[6], ng;
        ckpt_split_by_bytes(b, 6, 3, first, &ng);
        CHECK(ng == 3 && first[1] == 2 && first[2] == 4, "worked example: %d groups at %d %d", ng, first[1], first[2]);
    }
}

/* Can n layers be cut into exactly `want` segments with these constraints? (every boundary kept) */
static int reachable(int n, const unsigned char *end_after, const unsigned char *nosplit, int want) {
    int allowed = 0, forced = 1, i;
    for (i = 1; i < n; i++) {
        if (end_after[i - 1]) forced++;
        else if (!nosplit[i]) allowed++;
    }
    return want <= forced + allowed;
}

static void segments(void) {
    int trial;
    for (trial = 0; trial < 3000; trial++) {
        unsigned char end_after[30], nosplit[30];
        int n = 1 + (int)(rnd() % 30), want = 1 + (int)(rnd() % 12), first[30], ng = 0, i, nb = 1;
        for (i = 0; i < n; i++) { end_after[i] = rnd() % 8 == 0; nosplit[i] = rnd() % 4 == 0; }
        end_after[n - 1] = 0;
        for (i = 0; i + 1 < n; i++) nb += end_after[i];
        CHECK(ckpt_split_segments(n, end_after, nosplit, want, first, &ng) == CKPT_OK, "segments");
        CHECK(first[0] == 0, "starts at 0");
        for (i = 1; i < ng; i++) {
            CHECK(first[i] > first[i - 1] && first[i] < n, "segment %d starts at %d", i, first[i]);
            CHECK(end_after[first[i] - 1] || !nosplit[first[i]], "segment %d starts at no-split layer %d", i, first[i]);
        }
        for (i = 0; i + 1 < n; i++)
            if (end_after[i]) {
                int j, found = 0;
                for (j = 1; j < ng; j++) found |= first[j] == i + 1;
                CHECK(found, "the model boundary after layer %d was dropped", i);
            }
        if (nb >= want) CHECK(ng == nb, "%d boundaries, %d wanted: %d segments", nb, want, ng);
        else CHECK(ng == want || !reachable(n, end_after, nosplit, want), "%d segments of %d wanted, though reachable", ng, want);
    }
    {   /* 8 plain layers into 4: cuts at 4, then 2 and 6 */
        int first[8], ng;
        ckpt_split_segments(8, NULL, NULL, 4, first, &ng);
        CHECK(ng == 4 && first[1] == 2 && first[2] == 4 && first[3] == 6, "8 into 4: %d at %d %d %d", ng, first[1], first[2], first[3]);
    }
    {   /* a no-split layer at the middle moves the cut next to it */
        unsigned char nosplit[8] = {0, 0, 0, 0, 1, 0, 0, 0};
        int first[8], ng;
        ckpt_split_segments(8, NULL, nosplit, 2, first, &ng);
        CHECK(ng == 2 && (first[1] == 3 || first[1] == 5), "cut next to no-split layer 4: at %d", first[1]);
    }
}

static void errors(void) {
    uint64_t b[3] = {1, 2, 3};
    int first[3], ng;
    CHECK(ckpt_split_by_bytes(NULL, 3, 2, first, &ng) == CKPT_ERR_NULL_ARGUMENT, "NULL sizes");
    CHECK(ckpt_split_by_bytes(b, 0, 2, first, &ng) == CKPT_ERR_BAD_INDEX, "n 0");
    CHECK(ckpt_split_by_bytes(b, 3, 0, first, &ng) == CKPT_ERR_BAD_INDEX, "parts 0");
    CHECK(ckpt_split_by_bytes(b, 3, 9, first, &ng) == CKPT_OK && ng == 3, "more parts than layers: one each (%d)", ng);
    b[0] = UINT64_MAX;
    CHECK(ckpt_split_by_bytes(b, 3, 2, first, &ng) == CKPT_ERR_SIZE_OVERFLOW, "sizes overflow");
    CHECK(ckpt_split_segments(3, NULL, NULL, 2, NULL, &ng) == CKPT_ERR_NULL_ARGUMENT, "NULL first");
    CHECK(ckpt_split_segments(0, NULL, NULL, 2, first, &ng) == CKPT_ERR_BAD_INDEX, "n 0");
    CHECK(ckpt_split_segments(3, NULL, NULL, 0, first, &ng) == CKPT_ERR_BAD_INDEX, "segments 0");
}

int main(void) {
    by_bytes();
    segments();
    errors();
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
