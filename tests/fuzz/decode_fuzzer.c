/* libFuzzer harness for the C decoder's record loop (`decode` in _crecords.c), built with
 * AddressSanitizer and UndefinedBehaviorSanitizer by `make fuzz` (and a short run in `make
 * test`). The input is a v2 batch's records section behind an 18-byte prefix:
 *
 *   count: uint16      records the batch claims (held to what the bytes can hold, as
 *                      CColumnBuilder.append does before it calls decode)
 *   base_offset: int64, base_timestamp: int64    (little-endian)
 *   records: the rest
 *
 * The last offset delta is the widest a v2 header holds (INT32_MAX): offset deltas must still
 * rise.
 *
 * Besides what the sanitizers catch, a decode that succeeds must leave columns that agree:
 * one entry per record in each fixed column, offsets that end at their data's length, and a
 * failed one must leave nothing half-counted (the caller rolls back to its committed lengths).
 * The same input is also scanned (decode without columns, as CColumnBuilder.cuts does, slices of
 * at most 1 + count % 7 records or 1 + base_offset % 64 bytes): it must fail alike, or cut the
 * records into rising slices that end at the last record and the last byte.
 * It is also decoded storing less (a Store: values and headers as the prefix's high bits say,
 * and the records whose byte of the records section, taken in turn, is odd): it must fail
 * alike, or store the records kept, with the offsets the whole decode gave them, and no value
 * bytes or headers where it keeps none.
 * The Python API parts of the file are compiled but never called. */
#include "../../src/segcompact/format/_crecords.c"

#define PREFIX 18

static int64_t
le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return (int64_t)v;
}

static int32_t
last_offset(const Buf *offsets)
{
    int32_t v = 0;
    if (offsets->len >= 4)
        memcpy(&v, offsets->data + offsets->len - 4, 4);
    return v;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Buf bufs[NBUF], some[NBUF];
    Buf ends = {NULL, 0, 0};
    DecodeError some_err = {E_NONE, NULL, 0, 0, 0};
    Store store;
    uint8_t *keep;
    int stored;
    size_t kept = 0;
    DecodeError err = {E_NONE, NULL, 0, 0, 0}, scan_err = {E_NONE, NULL, 0, 0, 0};
    Cuts cuts;
    int64_t count, n;
    int status, scanned;

    if (size < PREFIX)
        return 0;
    n = (int64_t)(size - PREFIX);
    count = data[0] | (data[1] << 8);
    if (count > n / MIN_RECORD_SIZE)
        count = n / MIN_RECORD_SIZE;
    memset(bufs, 0, sizeof bufs);
    status = decode(bufs, data + PREFIX, n, count, le64(data + 2), le64(data + 10), 7, INT32_MAX,
                    &STORE_ALL, NULL, &err);
    keep = malloc(count ? (size_t)count : 1);
    if (keep == NULL)
        return 0;
    for (int64_t i = 0; i < count; i++) {
        keep[i] = data[PREFIX + i % n] & 1;
        kept += keep[i];
    }
    store.values = !(data[1] & 0x80);
    store.headers = !(data[1] & 0x40);
    store.keep = keep;
    memset(some, 0, sizeof some);
    stored = decode(some, data + PREFIX, n, count, le64(data + 2), le64(data + 10), 7, INT32_MAX,
                    &store, NULL, &some_err);
    if ((stored == 0) != (status == 0) ||
        (status != 0 && err.code != E_NOMEM && some_err.code != err.code))
        __builtin_trap(); /* what is stored changes no check */
    if (stored == 0) {
        size_t j = 0;
        if (some[B_OFFSET].len != 8 * kept || some[B_KEY_VALID].len != kept ||
            some[B_VALUE_VALID].len != kept || some[B_HEADER_OFFSETS].len != 4 * kept ||
            (size_t)last_offset(&some[B_VALUE_OFFSETS]) != some[B_VALUE_DATA].len ||
            (size_t)last_offset(&some[B_HKEY_OFFSETS]) != some[B_HKEY_DATA].len ||
            (size_t)last_offset(&some[B_HEADER_OFFSETS]) != some[B_HKEY_OFFSETS].len / 4 ||
            (!store.values && some[B_VALUE_DATA].len) ||
            (!store.headers && some[B_HKEY_OFFSETS].len))
            __builtin_trap();
        for (int64_t i = 0; i < count; i++) {
            if (!keep[i])
                continue;
            if (memcmp(some[B_OFFSET].data + 8 * j, bufs[B_OFFSET].data + 8 * i, 8) ||
                memcmp(some[B_KEY_VALID].data + j, bufs[B_KEY_VALID].data + i, 1) ||
                memcmp(some[B_VALUE_VALID].data + j, bufs[B_VALUE_VALID].data + i, 1))
                __builtin_trap(); /* the records kept, as the whole decode has them */
            j++;
        }
    }
    free(keep);
    for (int k = 0; k < NBUF; k++)
        free(some[k].data);
    cuts.out = &ends;
    cuts.records = 1 + count % 7;
    cuts.bytes = 1 + (int64_t)((uint64_t)le64(data + 2) % 64);
    scanned = decode(NULL, data + PREFIX, n, count, le64(data + 2), le64(data + 10), 7, INT32_MAX,
                     &STORE_ALL, &cuts, &scan_err);
    if ((scanned == 0) != (status == 0) ||
        (status != 0 && err.code != E_NOMEM && scan_err.code != err.code))
        __builtin_trap(); /* a scan checks what a decode does */
    if (scanned == 0) {
        int64_t pos = 0, records = 0, at[2];
        for (size_t k = 0; k + 16 <= ends.len; k += 16) {
            memcpy(at, ends.data + k, 16);
            if (at[0] <= pos || at[1] <= records || at[1] - records > cuts.records)
                __builtin_trap();
            pos = at[0];
            records = at[1];
        }
        if (records != count || (count && pos != n))
            __builtin_trap();
    }
    free(ends.data);
    if (status == 0) {
        size_t rows = (size_t)count;
        if (bufs[B_OFFSET].len != 8 * rows || bufs[B_TIMESTAMP].len != 8 * rows ||
            bufs[B_ATTRIBUTES].len != rows || bufs[B_BATCH].len != 4 * rows ||
            bufs[B_KEY_OFFSETS].len != 4 * rows || bufs[B_KEY_VALID].len != rows ||
            bufs[B_VALUE_OFFSETS].len != 4 * rows || bufs[B_VALUE_VALID].len != rows ||
            bufs[B_HEADER_OFFSETS].len != 4 * rows)
            __builtin_trap();
        if ((size_t)last_offset(&bufs[B_KEY_OFFSETS]) != bufs[B_KEY_DATA].len ||
            (size_t)last_offset(&bufs[B_VALUE_OFFSETS]) != bufs[B_VALUE_DATA].len ||
            (size_t)last_offset(&bufs[B_HKEY_OFFSETS]) != bufs[B_HKEY_DATA].len ||
            (size_t)last_offset(&bufs[B_HVALUE_OFFSETS]) != bufs[B_HVALUE_DATA].len ||
            (size_t)last_offset(&bufs[B_HEADER_OFFSETS]) != bufs[B_HKEY_OFFSETS].len / 4)
            __builtin_trap();
        if (bufs[B_KEY_DATA].len + bufs[B_VALUE_DATA].len > (size_t)n)
            __builtin_trap(); /* keys and values are copied from the input, never more */
    }
    else if (err.code == E_NONE) {
        __builtin_trap(); /* a failure must say why */
    }
    for (int k = 0; k < NBUF; k++)
        free(bufs[k].data);
    return 0;
}
