/* kube/gunzip.h: a gzip-encoded answer's body (Content-Encoding: gzip),
 * inflated as its bytes come (engine/kube/gunzip.c), for kube_http.c.
 *
 * Nothing of the body is held: each piece it decodes to is handed on at
 * once through the caller's buffer, so whoever takes the pieces bounds
 * what they decode to (an answer of 64 KiB that decodes to 64 MiB is as
 * large as a 64 MiB one). Members one after another are one body (RFC
 * 1952); each member's trailer (CRC and size) is checked. Loop thread. */
#ifndef EBB_KUBE_GUNZIP_H
#define EBB_KUBE_GUNZIP_H

#include <stdbool.h>
#include <stddef.h>

struct inflate_state;

struct ebb__gunzip {
    struct inflate_state *z;      /* from the body's first byte; NULL: none yet */
    bool end;                     /* the last member read has ended */
};

/* Takes a piece p[0, n) of what the body decodes to; false: stop. */
typedef bool (*ebb__gunzip_fn)(void *ud, const char *p, size_t n);

/* The body's next bytes in[0, n), inflated into buf[0, cap) piece by
 * piece, each handed to fn. 0: all of `in` read and handed on; 1: fn
 * said stop; EBB_ENOMEM; EBB_EIO: the encoding is broken, *why says how
 * (a static string). */
int ebb__gunzip_feed(struct ebb__gunzip *g, const char *in, size_t n, unsigned char *buf,
                     size_t cap, ebb__gunzip_fn fn, void *ud, const char **why);

/* The body ended inside a member: a cut document (a body with no byte is
 * none). */
bool ebb__gunzip_cut(const struct ebb__gunzip *g);

/* Back to no body (frees what it held); g may be reused. */
void ebb__gunzip_reset(struct ebb__gunzip *g);

#endif
