/*
 * The compiled twin of segcompact.format.columns.PyColumnBuilder: v2 records decoded straight
 * into Arrow-ready column buffers.
 *
 * Wire layout (DefaultRecord.java), inside a batch after decompression:
 *
 *     length: varint              bytes that follow
 *     attributes: int8
 *     timestampDelta: varlong     from the batch's base timestamp
 *     offsetDelta: varint         from the batch's base offset
 *     keyLength: varint           -1 for a null key
 *     key: byte[]
 *     valueLength: varint         -1 for a null value
 *     value: byte[]
 *     headersCount: varint
 *     Header: headerKeyLength varint, headerKey utf-8, headerValueLength varint (-1 null), value
 *
 * The decoding rules and error messages are those of record.iter_records; tests compare the two
 * builders on the same inputs, corrupt ones included. Two deliberate differences, both on input
 * the Python builder cannot store either (it raises OverflowError from array.append there):
 * a varlong whose value does not fit in 64 bits, and an offset or timestamp that overflows int64
 * once its delta is added, are rejected here with ValueError (once the rest of the batch has
 * decoded, so corruption is reported first, as iter_records does).
 *
 * Memory: every buffer grows geometrically; nothing is sized from a claimed count or length
 * before that claim has been checked against the payload bytes that remain. An append that
 * fails (corrupt data, no memory) truncates every buffer back to where it was, so earlier
 * appends stay intact. finish() copies the columns out once and keeps the capacity for the
 * next chunk; dealloc frees it. The decode loop runs without the GIL for payloads of some size; a
 * `busy` flag makes concurrent use of one builder from two threads an error, not a race.
 *
 * What is stored (Store): a builder made without values keeps each value's validity alone (a
 * first pass that ranks records needs no more), one without headers none of them; an append
 * given `keep` flags stores the records flagged only (a second pass builds its winners). Every
 * record is checked all the same, so errors and their order do not depend on what is stored.
 */
#define PY_SSIZE_T_CLEAN
/* The stable ABI of CPython 3.11+: one wheel (abi3) for every later Python. */
#define Py_LIMITED_API 0x030B0000
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MIN_RECORD_SIZE 7
#define INT_MAX_BYTES 5
#define LONG_MAX_BYTES 10
/* Below this many payload bytes the decode is too short to be worth dropping the GIL. */
#define NOGIL_THRESHOLD 4096

#if defined(__GNUC__) || defined(__clang__)
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define LIKELY(x) (x)
#define UNLIKELY(x) (x)
#endif

/* ---------------------------------------------------------------------------------------- */
/* Growable byte buffers.                                                                     */

typedef struct {
    char *data;
    size_t len;
    size_t cap;
} Buf;

/* The columns, in ColumnBuffers order. Offset columns are stored without their leading 0,
 * which finish() prepends; that keeps a fresh builder free of allocations. */
enum {
    B_OFFSET,         /* int64 per record */
    B_TIMESTAMP,      /* int64 per record */
    B_ATTRIBUTES,     /* int8 per record */
    B_BATCH,          /* int32 per record */
    B_KEY_OFFSETS,    /* int32 per record */
    B_KEY_DATA,
    B_KEY_VALID,      /* one byte per record */
    B_VALUE_OFFSETS,
    B_VALUE_DATA,
    B_VALUE_VALID,
    B_HEADER_OFFSETS, /* int32 per record: headers so far */
    B_HKEY_OFFSETS,   /* int32 per header */
    B_HKEY_DATA,
    B_HVALUE_OFFSETS,
    B_HVALUE_DATA,
    B_HVALUE_VALID,
    NBUF
};

static int
buf_grow(Buf *b, size_t extra)
{
    size_t need, cap;
    char *p;
    if (extra > SIZE_MAX - b->len)
        return -1;
    need = b->len + extra;
    cap = b->cap ? b->cap : 256;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    p = realloc(b->data, cap); /* callable without the GIL */
    if (p == NULL)
        return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

static inline int
buf_reserve(Buf *b, size_t extra)
{
    if (LIKELY(b->cap - b->len >= extra))
        return 0;
    return buf_grow(b, extra);
}

/* Callers have reserved room. */
static inline void
put_i64(Buf *b, int64_t v)
{
    memcpy(b->data + b->len, &v, 8); /* host order: little-endian on every supported target */
    b->len += 8;
}

static inline void
put_i32(Buf *b, int32_t v)
{
    memcpy(b->data + b->len, &v, 4);
    b->len += 4;
}

static inline void
put_u8(Buf *b, uint8_t v)
{
    b->data[b->len++] = (char)v;
}

/* ---------------------------------------------------------------------------------------- */
/* Errors, recorded without the GIL and raised with it.                                      */

enum {
    E_NONE,
    E_NOMEM,
    E_COLUMN_FULL,     /* a column past Arrow's int32 offsets */
    E_VARINT_PAST,     /* a = position */
    E_VARINT_LONG,     /* a = max bytes, b = position */
    E_VARINT_RANGE,    /* a = value */
    E_VARLONG_RANGE,   /* a = position */
    E_RECORD_LENGTH,   /* a = record, b = length, c = bytes left */
    E_LENGTH_NEGATIVE, /* what, b = length */
    E_LENGTH_PAST,     /* what, b = length, c = bytes left */
    E_HEADER_COUNT,    /* a = record, b = count, c = bytes left */
    E_HEADER_KEY_NULL,
    E_RECORD_TRAILING, /* a = record, b = bytes */
    E_BATCH_TRAILING,  /* a = bytes, b = count */
    E_OFFSET_OVERFLOW, /* a = record, b = base, c = delta */
    E_TIME_OVERFLOW,   /* a = record, b = base, c = delta */
    E_TIME_RANGE,      /* a = record, b = timestamp */
    E_DELTA_NEGATIVE,  /* a = record, b = delta */
    E_DELTA_ORDER,     /* a = record, b = delta, c = previous delta */
    E_DELTA_PAST,      /* a = record, b = delta, c = last offset delta */
};

/* The milliseconds an Arrow timestamp in microseconds (Spark's) holds either side of 1970. */
#define TS_MAX_MS (INT64_MAX / 1000)

typedef struct {
    int code;
    const char *what;
    int64_t a, b, c;
} DecodeError;

static void
raise_error(const DecodeError *e)
{
    long long a = (long long)e->a, b = (long long)e->b, c = (long long)e->c;
    switch (e->code) {
    case E_NOMEM:
        PyErr_NoMemory();
        break;
    case E_COLUMN_FULL:
        PyErr_SetString(PyExc_OverflowError,
                        "column builder holds more than 2 GiB in one column; finish() sooner");
        break;
    case E_VARINT_PAST:
        PyErr_Format(PyExc_ValueError, "varint runs past the end of the data at byte %lld", a);
        break;
    case E_VARINT_LONG:
        PyErr_Format(PyExc_ValueError, "varint longer than %lld bytes at byte %lld", a, b);
        break;
    case E_VARINT_RANGE:
        PyErr_Format(PyExc_ValueError, "varint value %lld does not fit in 32 bits", a);
        break;
    case E_VARLONG_RANGE:
        PyErr_Format(PyExc_ValueError, "varlong at byte %lld does not fit in 64 bits", a);
        break;
    case E_RECORD_LENGTH:
        PyErr_Format(PyExc_ValueError, "record %lld claims %lld bytes; %lld remain in the batch",
                     a, b, c);
        break;
    case E_LENGTH_NEGATIVE:
        PyErr_Format(PyExc_ValueError, "%s length %lld is negative", e->what, b);
        break;
    case E_LENGTH_PAST:
        PyErr_Format(PyExc_ValueError, "%s of %lld bytes runs past its record (%lld left)",
                     e->what, b, c);
        break;
    case E_HEADER_COUNT:
        PyErr_Format(PyExc_ValueError, "record %lld claims %lld headers in %lld bytes", a, b, c);
        break;
    case E_HEADER_KEY_NULL:
        PyErr_SetString(PyExc_ValueError, "header key is null");
        break;
    case E_RECORD_TRAILING:
        PyErr_Format(PyExc_ValueError, "record %lld has %lld bytes past its last field", a, b);
        break;
    case E_BATCH_TRAILING:
        PyErr_Format(PyExc_ValueError,
                     "%lld bytes remain after the %lld records the batch declares", a, b);
        break;
    case E_OFFSET_OVERFLOW:
        PyErr_Format(PyExc_ValueError,
                     "record %lld: base offset %lld + delta %lld overflows 64 bits", a, b, c);
        break;
    case E_TIME_OVERFLOW:
        PyErr_Format(PyExc_ValueError,
                     "record %lld: base timestamp %lld + delta %lld overflows 64 bits", a, b, c);
        break;
    case E_TIME_RANGE:
        PyErr_Format(PyExc_ValueError,
                     "record %lld: timestamp %lld ms is out of range (a timestamp in "
                     "microseconds holds +-%lld ms)",
                     a, b, (long long)TS_MAX_MS);
        break;
    case E_DELTA_NEGATIVE:
        PyErr_Format(PyExc_ValueError, "record %lld: offset delta %lld is negative", a, b);
        break;
    case E_DELTA_ORDER:
        PyErr_Format(PyExc_ValueError,
                     "record %lld: offset delta %lld is not above the previous record's %lld", a,
                     b, c);
        break;
    case E_DELTA_PAST:
        PyErr_Format(PyExc_ValueError,
                     "record %lld: offset delta %lld is past the batch's last offset delta %lld",
                     a, b, c);
        break;
    default:
        PyErr_SetString(PyExc_SystemError, "_crecords: unknown decode error");
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Varints: every read is bounded by the end of the payload, as in varint.decode_varlong.    */

/* Zigzag varint of at most `max_bytes` bytes; a varint's (5) value must fit int32. A varlong's
 * (10) tenth byte may only carry bit 63: more sets *wide, and the caller reports it once the
 * batch has proved well-formed otherwise, as iter_records reports corruption first. */
static inline int
read_zigzag(const uint8_t *buf, int64_t end_all, int64_t *pos, int max_bytes,
            int64_t *out, int *wide, DecodeError *err)
{
    int64_t p = *pos;
    uint64_t raw = 0;
    int i, shift = 0;
    int64_t value;
    if (LIKELY(p < end_all) && !(buf[p] & 0x80)) { /* one byte: most lengths and deltas */
        raw = buf[p];
        *pos = p + 1;
        *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
        return 0;
    }
    for (i = 0; i < max_bytes; i++) {
        uint8_t b;
        if (UNLIKELY(p >= end_all)) {
            err->code = E_VARINT_PAST;
            err->a = p;
            return -1;
        }
        b = buf[p++];
        if (shift == 63 && wide != NULL && (b & 0x7E) && !(b & 0x80))
            *wide = 1;
        raw |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            value = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
            if (max_bytes == INT_MAX_BYTES && (value < INT32_MIN || value > INT32_MAX)) {
                err->code = E_VARINT_RANGE;
                err->a = value;
                return -1;
            }
            *pos = p;
            *out = value;
            return 0;
        }
        shift += 7;
    }
    err->code = E_VARINT_LONG;
    err->a = max_bytes;
    err->b = *pos;
    return -1;
}

#define READ_VARINT(p, out) read_zigzag(buf, end_all, (p), INT_MAX_BYTES, (out), NULL, err)
#define READ_VARLONG(p, out, wide) \
    read_zigzag(buf, end_all, (p), LONG_MAX_BYTES, (out), (wide), err)

/* A length-prefixed field ending by `end`; *n is -1 for null. On return *pos is at its data. */
static inline int
read_sized(const uint8_t *buf, int64_t end_all, int64_t end, int64_t *pos,
           int64_t *n, const char *what, DecodeError *err)
{
    if (READ_VARINT(pos, n))
        return -1;
    if (*n == -1)
        return 0;
    if (UNLIKELY(*n < -1)) {
        err->code = E_LENGTH_NEGATIVE;
        err->what = what;
        err->b = *n;
        return -1;
    }
    if (UNLIKELY(*pos + *n > end)) {
        err->code = E_LENGTH_PAST;
        err->what = what;
        err->b = *n;
        err->c = end - *pos;
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Appending binary values.                                                                  */

/* One entry of a binary column: offsets and validity have room reserved by the caller. */
static inline int
add_binary(Buf *offsets, Buf *data, Buf *valid, const uint8_t *src, int64_t n, DecodeError *err)
{
    if (n < 0) {
        put_u8(valid, 0);
    }
    else {
        if (UNLIKELY((size_t)n > (size_t)INT32_MAX - data->len)) {
            err->code = E_COLUMN_FULL;
            return -1;
        }
        if (n > 0) { /* an empty column may have no buffer yet: no NULL + 0 */
            if (UNLIKELY(buf_reserve(data, (size_t)n))) {
                err->code = E_NOMEM;
                return -1;
            }
            memcpy(data->data + data->len, src, (size_t)n);
            data->len += (size_t)n;
        }
        if (valid != NULL)
            put_u8(valid, 1);
    }
    put_i32(offsets, (int32_t)data->len);
    return 0;
}

/* The bytes `s[0:n]` decode to with Python's bytes.decode("utf-8", "replace"), re-encoded:
 * well-formed UTF-8 is copied and each maximal ill-formed subpart becomes U+FFFD (EF BF BD),
 * which is what PyColumnBuilder stores for a header key. `out` has room for 3 * n bytes. */
static size_t
utf8_replace(const uint8_t *s, size_t n, uint8_t *out)
{
    size_t i = 0, o = 0;
    while (i < n) {
        uint8_t c = s[i];
        int need;
        uint8_t lo = 0x80, hi = 0xBF;
        size_t j;
        int k, ok;
        if (c < 0x80) {
            out[o++] = c;
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            need = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0)
                lo = 0xA0; /* no overlong forms */
            else if (c == 0xED)
                hi = 0x9F; /* no surrogates */
        }
        else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F; /* nothing past U+10FFFF */
        }
        else {
            need = 0; /* not a start byte */
        }
        j = i + 1;
        ok = need > 0;
        for (k = 0; ok && k < need; k++) {
            uint8_t b;
            if (j >= n) {
                ok = 0;
                break;
            }
            b = s[j];
            if (k == 0 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) {
                ok = 0;
                break;
            }
            j++;
        }
        if (ok) {
            memcpy(out + o, s + i, j - i);
            o += j - i;
        }
        else {
            out[o++] = 0xEF;
            out[o++] = 0xBF;
            out[o++] = 0xBD;
        }
        i = j;
    }
    return o;
}

static inline int
add_header_key(Buf *offsets, Buf *data, const uint8_t *src, int64_t n, DecodeError *err)
{
    int64_t i;
    size_t written;
    for (i = 0; i < n; i++) {
        if (src[i] & 0x80)
            break;
    }
    if (LIKELY(i == n)) /* ASCII, the usual case */
        return add_binary(offsets, data, NULL, src, n, err);
    /* n is bounded by the payload, so 3 * n cannot overflow; a replacement is 3 bytes. */
    if (UNLIKELY(buf_reserve(data, 3 * (size_t)n))) {
        err->code = E_NOMEM;
        return -1;
    }
    written = utf8_replace(src, (size_t)n, (uint8_t *)data->data + data->len);
    if (UNLIKELY(written > (size_t)INT32_MAX - data->len)) {
        err->code = E_COLUMN_FULL;
        return -1;
    }
    data->len += written;
    put_i32(offsets, (int32_t)data->len);
    return 0;
}

static inline int
checked_add(int64_t a, int64_t b, int64_t *out)
{
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b))
        return -1;
    *out = a + b;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The decode loop: iter_records, writing columns instead of Record objects.                 */

/* Room for `rows` more records in every column that takes a fixed size per record. */
static int
reserve_rows(Buf *bufs, size_t rows)
{
    return buf_reserve(&bufs[B_OFFSET], 8 * rows) || buf_reserve(&bufs[B_TIMESTAMP], 8 * rows) ||
           buf_reserve(&bufs[B_ATTRIBUTES], rows) || buf_reserve(&bufs[B_BATCH], 4 * rows) ||
           buf_reserve(&bufs[B_KEY_OFFSETS], 4 * rows) || buf_reserve(&bufs[B_KEY_VALID], rows) ||
           buf_reserve(&bufs[B_VALUE_OFFSETS], 4 * rows) ||
           buf_reserve(&bufs[B_VALUE_VALID], rows) ||
           buf_reserve(&bufs[B_HEADER_OFFSETS], 4 * rows);
}

/* Where a scan (bufs NULL) cuts the records: after at most `records` records or once a slice
 * holds `bytes` bytes of payload; `out` gets each slice's end: its position and the records
 * up to it (int64 each). */
typedef struct {
    Buf *out;
    int64_t records, bytes;
} Cuts;

/* What an append stores: every field, or (a first pass that ranks records before it builds
 * them) values as their validity alone, no headers; and all records, or those `keep` flags (one
 * byte per record, nonzero for those to store): every record is checked all the same. */
typedef struct {
    int values, headers;
    const uint8_t *keep;
} Store;

static const Store STORE_ALL = {1, 1, NULL};

/* Decode into `bufs` what `store` says; or, with `bufs` NULL, check every record as decoding
 * would without storing any, and record in `cuts` where to slice the payload. */
static int
decode(Buf *bufs, const uint8_t *buf, int64_t end_all, int64_t count, int64_t base_offset,
       int64_t base_timestamp, int32_t batch, int64_t last_delta, const Store *store, Cuts *cuts,
       DecodeError *err)
{
    int64_t cut_record = 0, cut_pos = 0; /* where the current slice starts */
    int64_t pos = 0;
    int64_t i;
    int64_t previous = -1; /* the offset delta before: deltas rise within 0..last_delta */
    /* A varlong past 64 bits or an absolute offset or timestamp past int64 is reported only if
     * the batch is otherwise well-formed: iter_records reports corruption first. */
    DecodeError overflow = {E_NONE, NULL, 0, 0, 0};
    /* A timestamp Arrow's column cannot hold, reported only when nothing overflowed. */
    DecodeError range = {E_NONE, NULL, 0, 0, 0};
    int64_t reserved = 0;
    for (i = 0; i < count; i++) {
        int64_t length, ts_delta, off_delta, key_n, value_n, n_headers, h;
        int64_t offset = 0, timestamp = 0;
        int64_t end, p, key_at, value_at;
        uint8_t attributes;
        int wide = 0;
        /* Whether this record is stored at all, and its headers with it. */
        int stored = bufs != NULL && (store->keep == NULL || store->keep[i]);
        int headers = stored && store->headers;

        /* Room for the fixed columns, in steps no larger than what is decoded already: a
         * claimed count, even one checked against the payload, never sizes more than twice. */
        if (UNLIKELY(i == reserved) && bufs != NULL) {
            int64_t step = i > 1024 ? i : 1024;
            if (step > count - i)
                step = count - i;
            if (reserve_rows(bufs, (size_t)step)) {
                err->code = E_NOMEM;
                return -1;
            }
            reserved += step;
        }

        if (READ_VARINT(&pos, &length))
            return -1;
        end = pos + (int64_t)length;
        if (length < MIN_RECORD_SIZE - 1 || end > end_all) {
            err->code = E_RECORD_LENGTH;
            err->a = i;
            err->b = length;
            err->c = end_all - pos;
            return -1;
        }
        attributes = buf[pos];
        p = pos + 1;
        if (READ_VARLONG(&p, &ts_delta, &wide) || READ_VARINT(&p, &off_delta))
            return -1;
        if (wide && overflow.code == E_NONE) {
            overflow.code = E_VARLONG_RANGE;
            overflow.a = pos + 1;
        }
        if (read_sized(buf, end_all, end, &p, &key_n, "key", err))
            return -1;
        key_at = p;
        if (key_n > 0)
            p += (int64_t)key_n;
        if (read_sized(buf, end_all, end, &p, &value_n, "value", err))
            return -1;
        value_at = p;
        if (value_n > 0)
            p += (int64_t)value_n;
        if (READ_VARINT(&p, &n_headers))
            return -1;
        /* Each header takes at least two bytes; (end - p) may be negative (floor division). */
        if (n_headers < 0 || end < p || n_headers > (end - p) / 2) {
            err->code = E_HEADER_COUNT;
            err->a = i;
            err->b = n_headers;
            err->c = end - p;
            return -1;
        }
        if (headers && n_headers > INT32_MAX - (int64_t)(bufs[B_HKEY_OFFSETS].len / 4)) {
            err->code = E_COLUMN_FULL;
            return -1;
        }
        if (headers && n_headers > 0 &&
            (buf_reserve(&bufs[B_HKEY_OFFSETS], 4 * (size_t)n_headers) ||
             buf_reserve(&bufs[B_HVALUE_OFFSETS], 4 * (size_t)n_headers) ||
             buf_reserve(&bufs[B_HVALUE_VALID], (size_t)n_headers))) {
            err->code = E_NOMEM;
            return -1;
        }
        for (h = 0; h < n_headers; h++) {
            int64_t hkey_n, hvalue_n;
            int64_t hkey_at;
            if (read_sized(buf, end_all, end, &p, &hkey_n, "header key", err))
                return -1;
            if (hkey_n < 0) {
                err->code = E_HEADER_KEY_NULL;
                return -1;
            }
            hkey_at = p;
            p += (int64_t)hkey_n;
            if (read_sized(buf, end_all, end, &p, &hvalue_n, "header value", err))
                return -1;
            if (headers &&
                (add_header_key(&bufs[B_HKEY_OFFSETS], &bufs[B_HKEY_DATA], buf + hkey_at, hkey_n,
                                err) ||
                 add_binary(&bufs[B_HVALUE_OFFSETS], &bufs[B_HVALUE_DATA],
                            &bufs[B_HVALUE_VALID], buf + p, hvalue_n, err)))
                return -1;
            if (hvalue_n > 0)
                p += (int64_t)hvalue_n;
        }
        if (p != end) {
            err->code = E_RECORD_TRAILING;
            err->a = i;
            err->b = end - p;
            return -1;
        }
        if (UNLIKELY(off_delta < 0 || off_delta <= previous || off_delta > last_delta)) {
            err->code = off_delta < 0           ? E_DELTA_NEGATIVE
                        : off_delta <= previous ? E_DELTA_ORDER
                                                : E_DELTA_PAST;
            err->a = i;
            err->b = off_delta;
            err->c = off_delta <= previous ? previous : last_delta;
            return -1;
        }
        previous = off_delta;
        if (checked_add(base_offset, off_delta, &offset) && overflow.code == E_NONE) {
            overflow.code = E_OFFSET_OVERFLOW;
            overflow.a = i;
            overflow.b = base_offset;
            overflow.c = off_delta;
        }
        if (checked_add(base_timestamp, ts_delta, &timestamp) && overflow.code == E_NONE) {
            overflow.code = E_TIME_OVERFLOW;
            overflow.a = i;
            overflow.b = base_timestamp;
            overflow.c = ts_delta;
        }
        else if ((timestamp > TS_MAX_MS || timestamp < -TS_MAX_MS) && range.code == E_NONE) {
            range.code = E_TIME_RANGE;
            range.a = i;
            range.b = timestamp;
        }
        pos = end;
        if (bufs == NULL) {
            if (i + 1 - cut_record >= cuts->records || pos - cut_pos >= cuts->bytes ||
                i + 1 == count) {
                if (buf_reserve(cuts->out, 16)) {
                    err->code = E_NOMEM;
                    return -1;
                }
                put_i64(cuts->out, pos);
                put_i64(cuts->out, i + 1);
                cut_record = i + 1;
                cut_pos = pos;
            }
            continue;
        }
        if (!stored)
            continue;
        if (!store->values && value_n > 0)
            value_n = 0; /* its validity alone: a null value stays null */
        put_i64(&bufs[B_OFFSET], offset);
        put_i64(&bufs[B_TIMESTAMP], timestamp);
        put_u8(&bufs[B_ATTRIBUTES], attributes);
        put_i32(&bufs[B_BATCH], batch);
        if (add_binary(&bufs[B_KEY_OFFSETS], &bufs[B_KEY_DATA], &bufs[B_KEY_VALID],
                       buf + key_at, key_n, err) ||
            add_binary(&bufs[B_VALUE_OFFSETS], &bufs[B_VALUE_DATA], &bufs[B_VALUE_VALID],
                       buf + value_at, value_n, err))
            return -1;
        put_i32(&bufs[B_HEADER_OFFSETS], (int32_t)(bufs[B_HKEY_OFFSETS].len / 4));
    }
    if (pos != end_all) {
        err->code = E_BATCH_TRAILING;
        err->a = end_all - pos;
        err->b = count;
        return -1;
    }
    if (overflow.code != E_NONE || range.code != E_NONE) {
        *err = overflow.code != E_NONE ? overflow : range;
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The CColumnBuilder type.                                                                  */

typedef struct {
    PyObject_HEAD
    Buf bufs[NBUF];
    /* Buffer lengths after the last successful append: what __len__ and nbytes report and
     * what a failed append rolls back to. Only changed with the GIL held. */
    size_t committed[NBUF];
    int busy;
    int values, headers; /* what appends store of each record: see Store */
} CColumnBuilder;

static PyObject *column_buffers_type = NULL; /* segcompact.format.columns.ColumnBuffers */

static void
builder_clear(CColumnBuilder *self)
{
    int k;
    for (k = 0; k < NBUF; k++) {
        free(self->bufs[k].data);
        self->bufs[k].data = NULL;
        self->bufs[k].len = self->bufs[k].cap = 0;
        self->committed[k] = 0;
    }
}

static int
builder_busy(CColumnBuilder *self)
{
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "CColumnBuilder is in use by another call");
        return 1;
    }
    return 0;
}

static PyObject *
builder_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"values", "headers", NULL};
    int values = 1, headers = 1;
    CColumnBuilder *self;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$pp:CColumnBuilder", kwlist, &values,
                                     &headers))
        return NULL;
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    self = (CColumnBuilder *)alloc(type, 0); /* zeroed: empty buffers */
    if (self != NULL) {
        self->values = values;
        self->headers = headers;
    }
    return (PyObject *)self;
}

static void
builder_dealloc(CColumnBuilder *self)
{
    PyTypeObject *type = Py_TYPE((PyObject *)self);
    freefunc release = (freefunc)PyType_GetSlot(type, Py_tp_free);
    builder_clear(self);
    release(self);
    Py_DECREF(type); /* instances of a heap type hold a reference to it */
}

static Py_ssize_t
builder_len(CColumnBuilder *self)
{
    return (Py_ssize_t)(self->committed[B_OFFSET] / 8);
}

static PyObject *
builder_nbytes(CColumnBuilder *self, void *closure)
{
    (void)closure;
    return PyLong_FromSize_t(self->committed[B_KEY_DATA] + self->committed[B_VALUE_DATA] +
                             self->committed[B_HKEY_DATA] + self->committed[B_HVALUE_DATA]);
}

static PyObject *bytes_of(const Buf *b);

/* A batch's claimed records count, checked against its payload's bytes as iter_records does. */
static int
records_count(PyObject *count_obj, Py_ssize_t len, long long *count)
{
    int overflow;
    PyObject *count_index = PyNumber_Index(count_obj);
    if (count_index == NULL)
        return -1;
    *count = PyLong_AsLongLongAndOverflow(count_index, &overflow);
    if (*count == -1 && PyErr_Occurred()) {
        Py_DECREF(count_index);
        return -1;
    }
    if (overflow || *count < 0 || *count > len / MIN_RECORD_SIZE) {
        PyErr_Format(PyExc_ValueError,
                     "records count %S is larger than %zd bytes of records can hold",
                     count_index, len);
        Py_DECREF(count_index);
        return -1;
    }
    Py_DECREF(count_index);
    return 0;
}

PyDoc_STRVAR(cuts_doc,
             "cuts(payload, count, base_offset, base_timestamp, last_offset_delta, records, "
             "bytes)\n--\n\n"
             "Check the batch's records as append would, storing none; where to slice the "
             "payload so that each slice holds at most ``records`` records and (but for a single "
             "record) ``bytes`` bytes: for each slice, its end position and the records up to it, "
             "as int64 pairs (little-endian).");

static PyObject *
builder_cuts(CColumnBuilder *self, PyObject *args)
{
    Py_buffer view;
    PyObject *count_obj, *result = NULL;
    long long base_offset, base_timestamp, count, last_delta, max_records, max_bytes;
    int status;
    DecodeError err = {E_NONE, NULL, 0, 0, 0};
    Buf out = {NULL, 0, 0};
    Cuts cuts;
    (void)self;

    if (!PyArg_ParseTuple(args, "y*OLLLLL:cuts", &view, &count_obj, &base_offset,
                          &base_timestamp, &last_delta, &max_records, &max_bytes))
        return NULL;
    if (max_records < 1 || max_bytes < 1) {
        PyErr_SetString(PyExc_ValueError, "cuts: records and bytes must be positive");
        goto done;
    }
    if (records_count(count_obj, view.len, &count) < 0)
        goto done;
    cuts.out = &out;
    cuts.records = max_records;
    cuts.bytes = max_bytes;
    Py_BEGIN_ALLOW_THREADS
    status = decode(NULL, (const uint8_t *)view.buf, view.len, count, base_offset,
                    base_timestamp, 0, last_delta, &STORE_ALL, &cuts, &err);
    Py_END_ALLOW_THREADS
    if (status != 0)
        raise_error(&err);
    else
        result = bytes_of(&out);
done:
    free(out.data);
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(append_doc,
             "append(payload, count, base_offset, base_timestamp, batch, last_offset_delta, "
             "keep=None)\n"
             "--\n\n"
             "Decode ``count`` records (offset deltas rising within 0..last_offset_delta) and "
             "store those ``keep`` flags (one byte per record, nonzero to store; all without "
             "it); on corrupt data raise ValueError and leave earlier appends intact.");

static PyObject *
builder_append(CColumnBuilder *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"payload", "count",  "base_offset",       "base_timestamp",
                             "batch",   "last_offset_delta", "keep", NULL};
    Py_buffer view, keep = {0};
    PyObject *count_obj, *keep_obj = Py_None;
    long long base_offset, base_timestamp, count, last_delta;
    int batch, status, k;
    DecodeError err = {E_NONE, NULL, 0, 0, 0};
    Store store = {self->values, self->headers, NULL};

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "y*OLLiL|O:append", kwlist, &view, &count_obj,
                                     &base_offset, &base_timestamp, &batch, &last_delta,
                                     &keep_obj))
        return NULL;
    if (builder_busy(self) || records_count(count_obj, view.len, &count) < 0)
        goto fail;
    if (keep_obj != Py_None) {
        if (PyObject_GetBuffer(keep_obj, &keep, PyBUF_SIMPLE) < 0)
            goto fail;
        if (keep.len != count) {
            PyErr_Format(PyExc_ValueError, "keep holds %zd flags for %lld records", keep.len,
                         count);
            goto fail;
        }
        store.keep = (const uint8_t *)keep.buf;
    }

    self->busy = 1;
    if (view.len >= NOGIL_THRESHOLD) {
        Py_BEGIN_ALLOW_THREADS
        status = decode(self->bufs, (const uint8_t *)view.buf, view.len, count, base_offset,
                        base_timestamp, batch, last_delta, &store, NULL, &err);
        Py_END_ALLOW_THREADS
    }
    else {
        status = decode(self->bufs, (const uint8_t *)view.buf, view.len, count, base_offset,
                        base_timestamp, batch, last_delta, &store, NULL, &err);
    }
    self->busy = 0;
    PyBuffer_Release(&view);
    if (keep.obj != NULL)
        PyBuffer_Release(&keep);

    if (status != 0) {
        for (k = 0; k < NBUF; k++)
            self->bufs[k].len = self->committed[k];
        raise_error(&err);
        return NULL;
    }
    for (k = 0; k < NBUF; k++)
        self->committed[k] = self->bufs[k].len;
    Py_RETURN_NONE;

fail:
    PyBuffer_Release(&view);
    if (keep.obj != NULL)
        PyBuffer_Release(&keep);
    return NULL;
}

static PyObject *
bytes_of(const Buf *b)
{
    return PyBytes_FromStringAndSize(b->len ? b->data : "", (Py_ssize_t)b->len);
}

/* An offsets column with its leading 0. */
static PyObject *
offsets_of(const Buf *b)
{
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(b->len + 4));
    if (out != NULL) {
        char *p = PyBytes_AsString(out);
        memset(p, 0, 4);
        if (b->len)
            memcpy(p + 4, b->data, b->len);
    }
    return out;
}

/* ColumnBuffers' fields in order (segcompact.format.columns): each made from one buffer, as a
 * count of its entries, its bytes, or an offsets column with its leading 0. */
enum { F_COUNT, F_BYTES, F_OFFSETS };
static const struct {
    int kind;
    int buf;
    size_t width; /* F_COUNT: bytes per entry */
} FIELDS[] = {
    {F_COUNT, B_OFFSET, 8},          {F_BYTES, B_OFFSET, 0},
    {F_BYTES, B_TIMESTAMP, 0},       {F_BYTES, B_ATTRIBUTES, 0},
    {F_BYTES, B_BATCH, 0},           {F_OFFSETS, B_KEY_OFFSETS, 0},
    {F_BYTES, B_KEY_DATA, 0},        {F_BYTES, B_KEY_VALID, 0},
    {F_OFFSETS, B_VALUE_OFFSETS, 0}, {F_BYTES, B_VALUE_DATA, 0},
    {F_BYTES, B_VALUE_VALID, 0},     {F_OFFSETS, B_HEADER_OFFSETS, 0},
    {F_COUNT, B_HKEY_OFFSETS, 4},    {F_OFFSETS, B_HKEY_OFFSETS, 0},
    {F_BYTES, B_HKEY_DATA, 0},       {F_OFFSETS, B_HVALUE_OFFSETS, 0},
    {F_BYTES, B_HVALUE_DATA, 0},     {F_BYTES, B_HVALUE_VALID, 0},
};
#define N_FIELDS ((Py_ssize_t)(sizeof(FIELDS) / sizeof(FIELDS[0])))

PyDoc_STRVAR(finish_doc,
             "finish()\n--\n\nHand over the buffers as a ColumnBuffers and start empty.");

static PyObject *
builder_finish(CColumnBuilder *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *fields, *cls, *result = NULL;
    const Buf *b = self->bufs;
    Py_ssize_t i;

    if (builder_busy(self))
        return NULL;
    if (column_buffers_type == NULL) {
        PyObject *mod = PyImport_ImportModule("segcompact.format.columns");
        if (mod == NULL)
            return NULL;
        cls = PyObject_GetAttrString(mod, "ColumnBuffers");
        Py_DECREF(mod);
        if (cls == NULL)
            return NULL;
        if (column_buffers_type == NULL) /* the import may have let another thread in */
            column_buffers_type = cls;
        else
            Py_DECREF(cls);
    }
    fields = PyTuple_New(N_FIELDS);
    if (fields == NULL)
        return NULL;
    /* Allocating may run arbitrary code (GC finalizers); keep this builder out of its reach. */
    self->busy = 1;
    for (i = 0; i < N_FIELDS; i++) {
        const Buf *buf = &b[FIELDS[i].buf];
        PyObject *item;
        switch (FIELDS[i].kind) {
        case F_COUNT:
            item = PyLong_FromSize_t(buf->len / FIELDS[i].width);
            break;
        case F_OFFSETS:
            item = offsets_of(buf);
            break;
        default:
            item = bytes_of(buf);
        }
        if (item == NULL || PyTuple_SetItem(fields, i, item) < 0)
            break; /* PyTuple_SetItem drops item when it fails */
    }
    self->busy = 0;
    if (i < N_FIELDS)
        goto done;
    result = PyObject_Call(column_buffers_type, fields, NULL);
    if (result != NULL) {
        /* Keep the capacity: the next chunk then neither copies on growth nor faults pages in,
         * and the peak is unchanged (this chunk's bytes were just copied out at full size). */
        int k;
        for (k = 0; k < NBUF; k++)
            self->bufs[k].len = self->committed[k] = 0;
    }
done:
    Py_DECREF(fields); /* PyTuple_New's NULL slots are skipped by tuple dealloc */
    return result;
}

/* ---------------------------------------------------------------------------------------- */
/* Encoding: ColumnBuffers' records back into v2 record bytes (record.encode_records' twin).   */

static inline uint64_t
zigzag64(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline size_t
varint_size(uint64_t z)
{
    size_t n = 1;
    while (z > 0x7F) {
        z >>= 7;
        n++;
    }
    return n;
}

static inline void
put_varint(Buf *b, uint64_t z)
{
    while (z > 0x7F) {
        b->data[b->len++] = (char)((z & 0x7F) | 0x80);
        z >>= 7;
    }
    b->data[b->len++] = (char)z;
}

/* ColumnBuffers' buffer fields, by index; the others are counts (records, header_count) or
 * not read (batch). */
enum {
    C_RECORDS = 0, C_OFFSET, C_TIMESTAMP, C_ATTRIBUTES, C_BATCH, C_KEY_OFFSETS, C_KEY_DATA,
    C_KEY_VALID, C_VALUE_OFFSETS, C_VALUE_DATA, C_VALUE_VALID, C_HEADER_OFFSETS, C_HEADER_COUNT,
    C_HKEY_OFFSETS, C_HKEY_DATA, C_HVALUE_OFFSETS, C_HVALUE_DATA, C_HVALUE_VALID, C_FIELDS
};

static inline int32_t
i32_at(const Py_buffer *b, Py_ssize_t i)
{
    int32_t v;
    memcpy(&v, (const char *)b->buf + 4 * i, 4);
    return v;
}

static inline int64_t
i64_at(const Py_buffer *b, Py_ssize_t i)
{
    int64_t v;
    memcpy(&v, (const char *)b->buf + 8 * i, 8);
    return v;
}

/* Entry i of a binary column: its bytes, or length -1 where not valid (valid may be NULL). */
static int
entry_of(const Py_buffer *offsets, const Py_buffer *data, const Py_buffer *valid, Py_ssize_t i,
         const char *what, const char **p, int64_t *len)
{
    int32_t start = i32_at(offsets, i), end = i32_at(offsets, i + 1);
    if (valid != NULL && !((const char *)valid->buf)[i]) {
        *len = -1;
        return 0;
    }
    if (start < 0 || end < start || end > data->len) {
        PyErr_Format(PyExc_ValueError, "%s %zd: offsets %d..%d outside %zd bytes", what, i,
                     (int)start, (int)end, data->len);
        return -1;
    }
    *p = (const char *)data->buf + start;
    *len = end - start;
    return 0;
}

static inline size_t
sized_size(int64_t len)
{
    return len < 0 ? 1 : varint_size(zigzag64(len)) + (size_t)len;
}

static inline void
put_sized(Buf *b, const char *p, int64_t len)
{
    put_varint(b, zigzag64(len));
    if (len > 0) {
        memcpy(b->data + b->len, p, (size_t)len);
        b->len += (size_t)len;
    }
}

static int
encode_range(const Py_buffer *c, Py_ssize_t n_headers, Py_ssize_t start, Py_ssize_t stop,
             int64_t base_offset, int64_t base_timestamp, Buf *out)
{
    Py_ssize_t i, h;
    for (i = start; i < stop; i++) {
        int64_t offset = i64_at(&c[C_OFFSET], i), timestamp = i64_at(&c[C_TIMESTAMP], i);
        int64_t offset_delta, time_delta, key_len, value_len, hk_len, hv_len;
        int32_t first = i32_at(&c[C_HEADER_OFFSETS], i), last = i32_at(&c[C_HEADER_OFFSETS], i + 1);
        const char *key = NULL, *value = NULL, *hk = NULL, *hv = NULL;
        size_t body;
        if (__builtin_sub_overflow(offset, base_offset, &offset_delta) ||
            offset_delta < INT32_MIN || offset_delta > INT32_MAX) {
            PyErr_Format(PyExc_ValueError, "varint out of range: offset %lld from base %lld",
                         (long long)offset, (long long)base_offset);
            return -1;
        }
        if (__builtin_sub_overflow(timestamp, base_timestamp, &time_delta)) {
            PyErr_Format(PyExc_ValueError, "varlong out of range: timestamp %lld from base %lld",
                         (long long)timestamp, (long long)base_timestamp);
            return -1;
        }
        if (first < 0 || last < first || last > n_headers) {
            PyErr_Format(PyExc_ValueError, "record %zd: headers %d..%d outside %zd headers", i,
                         (int)first, (int)last, n_headers);
            return -1;
        }
        if (entry_of(&c[C_KEY_OFFSETS], &c[C_KEY_DATA], &c[C_KEY_VALID], i, "key", &key,
                     &key_len) < 0 ||
            entry_of(&c[C_VALUE_OFFSETS], &c[C_VALUE_DATA], &c[C_VALUE_VALID], i, "value",
                     &value, &value_len) < 0)
            return -1;
        body = 1 + varint_size(zigzag64(time_delta)) + varint_size(zigzag64(offset_delta)) +
               sized_size(key_len) + sized_size(value_len) +
               varint_size(zigzag64(last - first));
        for (h = first; h < last; h++) {
            if (entry_of(&c[C_HKEY_OFFSETS], &c[C_HKEY_DATA], NULL, h, "header key", &hk,
                         &hk_len) < 0 ||
                entry_of(&c[C_HVALUE_OFFSETS], &c[C_HVALUE_DATA], &c[C_HVALUE_VALID], h,
                         "header value", &hv, &hv_len) < 0)
                return -1;
            body += sized_size(hk_len) + sized_size(hv_len);
        }
        if (body > INT32_MAX) {
            PyErr_Format(PyExc_ValueError, "varint out of range: record %zd is %zu bytes", i, body);
            return -1;
        }
        if (buf_reserve(out, varint_size(zigzag64((int64_t)body)) + body) < 0) {
            PyErr_NoMemory();
            return -1;
        }
        put_varint(out, zigzag64((int64_t)body));
        put_u8(out, (uint8_t)((const char *)c[C_ATTRIBUTES].buf)[i]);
        put_varint(out, zigzag64(time_delta));
        put_varint(out, zigzag64(offset_delta));
        put_sized(out, key, key_len);
        put_sized(out, value, value_len);
        put_varint(out, zigzag64(last - first));
        for (h = first; h < last; h++) {
            entry_of(&c[C_HKEY_OFFSETS], &c[C_HKEY_DATA], NULL, h, "header key", &hk, &hk_len);
            entry_of(&c[C_HVALUE_OFFSETS], &c[C_HVALUE_DATA], &c[C_HVALUE_VALID], h,
                     "header value", &hv, &hv_len);
            put_sized(out, hk, hk_len);
            put_sized(out, hv, hv_len);
        }
    }
    return 0;
}

/* Each buffer's length against the counts: (field, bytes per record, bytes per header, extra). */
static const struct {
    int field;
    Py_ssize_t per_record, per_header, extra;
} LENGTHS[] = {
    {C_OFFSET, 8, 0, 0},         {C_TIMESTAMP, 8, 0, 0},       {C_ATTRIBUTES, 1, 0, 0},
    {C_KEY_OFFSETS, 4, 0, 4},    {C_KEY_VALID, 1, 0, 0},       {C_VALUE_OFFSETS, 4, 0, 4},
    {C_VALUE_VALID, 1, 0, 0},    {C_HEADER_OFFSETS, 4, 0, 4},  {C_HKEY_OFFSETS, 0, 4, 4},
    {C_HVALUE_OFFSETS, 0, 4, 4}, {C_HVALUE_VALID, 0, 1, 0},
};

PyDoc_STRVAR(encode_doc,
             "encode_records(columns, start, stop, base_offset, base_timestamp)\n--\n\n"
             "The length-prefixed v2 bytes of records start..stop of a ColumnBuffers "
             "(record.encode_records' twin; timestamps in ms, the batch column unread).");

static PyObject *
encode_records_c(PyObject *module, PyObject *args)
{
    PyObject *columns, *item, *result = NULL;
    Py_buffer c[C_FIELDS];
    int got[C_FIELDS] = {0};
    Py_ssize_t start, stop, n, n_headers, k;
    long long base_offset, base_timestamp;
    Buf out = {NULL, 0, 0};
    (void)module;

    if (!PyArg_ParseTuple(args, "OnnLL:encode_records", &columns, &start, &stop, &base_offset,
                          &base_timestamp))
        return NULL;
    if (!PySequence_Check(columns) || PySequence_Size(columns) != C_FIELDS) {
        PyErr_SetString(PyExc_TypeError, "columns must be a ColumnBuffers");
        return NULL;
    }
    item = PySequence_GetItem(columns, C_RECORDS);
    n = item ? PyLong_AsSsize_t(item) : -1;
    Py_XDECREF(item);
    item = PySequence_GetItem(columns, C_HEADER_COUNT);
    n_headers = item ? PyLong_AsSsize_t(item) : -1;
    Py_XDECREF(item);
    if (PyErr_Occurred())
        return NULL;
    for (k = 0; k < C_FIELDS; k++) {
        if (k == C_RECORDS || k == C_BATCH || k == C_HEADER_COUNT)
            continue;
        item = PySequence_GetItem(columns, k);
        if (item == NULL)
            goto done;
        if (PyObject_GetBuffer(item, &c[k], PyBUF_SIMPLE) < 0) {
            Py_DECREF(item);
            goto done;
        }
        Py_DECREF(item);
        got[k] = 1;
    }
    for (k = 0; k < (Py_ssize_t)(sizeof(LENGTHS) / sizeof(LENGTHS[0])); k++) {
        Py_ssize_t want = LENGTHS[k].per_record * n + LENGTHS[k].per_header * n_headers +
                          LENGTHS[k].extra;
        if (c[LENGTHS[k].field].len != want) {
            PyErr_Format(PyExc_ValueError,
                         "column %zd holds %zd bytes, not the %zd of %zd records and %zd headers",
                         (Py_ssize_t)LENGTHS[k].field, c[LENGTHS[k].field].len, want, n,
                         n_headers);
            goto done;
        }
    }
    if (start < 0 || stop < start || stop > n) {
        PyErr_Format(PyExc_ValueError, "records %zd..%zd outside 0..%zd", start, stop, n);
        goto done;
    }
    if (encode_range(c, n_headers, start, stop, base_offset, base_timestamp, &out) == 0)
        result = bytes_of(&out);
done:
    free(out.data);
    for (k = 0; k < C_FIELDS; k++) {
        if (got[k])
            PyBuffer_Release(&c[k]);
    }
    return result;
}

static PyMethodDef module_methods[] = {
    {"encode_records", (PyCFunction)encode_records_c, METH_VARARGS, encode_doc},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef builder_methods[] = {
    {"append", (PyCFunction)(void (*)(void))builder_append, METH_VARARGS | METH_KEYWORDS,
     append_doc},
    {"finish", (PyCFunction)builder_finish, METH_NOARGS, finish_doc},
    {"cuts", (PyCFunction)builder_cuts, METH_VARARGS, cuts_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef builder_getset[] = {
    {"nbytes", (getter)builder_nbytes, NULL,
     "Bytes of keys, values and headers held so far (to bound a chunk).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(builder_doc,
             "CColumnBuilder(*, values=True, headers=True)\n--\n\n"
             "The compiled column builder: without ``values``, each value is stored as its "
             "validity alone (empty or null); without ``headers``, no header is stored.");

static PyType_Slot builder_slots[] = {
    {Py_tp_dealloc, (void *)builder_dealloc},
    {Py_sq_length, (void *)builder_len},
    {Py_tp_doc, (void *)builder_doc},
    {Py_tp_methods, builder_methods},
    {Py_tp_getset, builder_getset},
    {Py_tp_new, (void *)builder_new},
    {0, NULL},
};

static PyType_Spec builder_spec = {
    .name = "segcompact.format._crecords.CColumnBuilder",
    .basicsize = sizeof(CColumnBuilder),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = builder_slots,
};

static struct PyModuleDef crecords_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "segcompact.format._crecords",
    .m_doc = "The compiled v2 record codec: CColumnBuilder, twin of PyColumnBuilder, and "
             "encode_records, twin of columns.encode_columns.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__crecords(void)
{
    PyObject *m, *type;
    m = PyModule_Create(&crecords_module);
    if (m == NULL)
        return NULL;
    type = PyType_FromSpec(&builder_spec);
    if (type == NULL || PyModule_AddObject(m, "CColumnBuilder", type) < 0) {
        Py_XDECREF(type);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
