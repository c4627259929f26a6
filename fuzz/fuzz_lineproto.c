/* fuzz_lineproto.c - libFuzzer target: the line parser (c_server/lib/lineproto.c)
 * against a byte-at-a-time reference parser written from the protocol's text.
 *
 * Input: [k][k split offsets, 2 bytes each, little-endian][stream]. The stream
 * is fed to c1m_line_feed in chunks cut at those offsets (taken modulo the
 * stream length and sorted, so any input is valid and empty chunks happen).
 * Each chunk is copied into its own heap block of exactly its size, so ASan
 * reports any read past the chunk. Checked, after every chunk:
 *   - the oversized verdict comes in the chunk that holds the 1025th byte of
 *     a line, never earlier or later;
 *   - lines and pings counted so far equal the reference's (pongs = pings);
 *   - the carried state never claims a line longer than C1M_LINE_MAX.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lineproto.h"

#define MAX_SPLITS 16

/* The reference: "a line is the bytes before '\n'; `ping` exactly is a ping;
 * a line longer than C1M_LINE_MAX bytes is oversized". Feeds one byte;
 * returns -1 once the current line is too long. */
struct ref {
    size_t len;
    char head[4];
    uint64_t lines, pings;
};

static int ref_byte(struct ref *r, char b)
{
    if (b == '\n') {
        r->lines++;
        if (r->len == 4 && memcmp(r->head, "ping", 4) == 0)
            r->pings++;
        r->len = 0;
        return 0;
    }
    if (r->len < 4)
        r->head[r->len] = b;
    if (++r->len > C1M_LINE_MAX)
        return -1;
    return 0;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t k = data[0] % (MAX_SPLITS + 1);
    if (size < 1 + 2 * k)
        return 0;
    const char *stream = (const char *)data + 1 + 2 * k;
    size_t n = size - 1 - 2 * k;
    size_t cut[MAX_SPLITS + 2];
    cut[0] = 0;
    for (size_t i = 0; i < k; i++) {
        size_t off = (size_t)data[1 + 2 * i] | (size_t)data[2 + 2 * i] << 8;
        cut[1 + i] = n ? off % (n + 1) : 0;
    }
    qsort(cut + 1, k, sizeof(cut[0]), cmp_size);
    cut[k + 1] = n;

    struct ref ref;
    memset(&ref, 0, sizeof(ref));
    struct c1m_line_state st;
    memset(&st, 0, sizeof(st));
    struct c1m_line_result res = {0, 0};
    size_t fed = 0; /* stream bytes the reference has consumed */
    for (size_t c = 0; c <= k; c++) {
        size_t len = cut[c + 1] - cut[c];
        /* exactly len bytes; an empty chunk is the end of a 1-byte block, so
         * that any read from it is past the block too */
        char *block = malloc(len ? len : 1);
        if (!block)
            abort();
        char *chunk = len ? block : block + 1;
        memcpy(chunk, stream + cut[c], len);
        int rc = c1m_line_feed(&st, chunk, len, &res);
        free(block);
        /* the reference over the same bytes, stopping where it says oversized */
        int ref_rc = 0;
        while (fed < cut[c + 1] && ref_rc == 0)
            ref_rc = ref_byte(&ref, stream[fed++]);
        if (rc != ref_rc || res.lines != ref.lines || res.pings != ref.pings)
            abort();
        if (rc < 0)
            return 0; /* the connection is closed: nothing more is fed */
        if (st.len > C1M_LINE_MAX || st.len != ref.len)
            abort();
    }
    return 0;
}
