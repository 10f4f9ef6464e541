/* The HTTP server's bounds (httpd_int.h): who may hold the server and how
 * much. A new connection at the limit takes the place of one that holds
 * the server without using it, or a probe slot (ebb__http_admit); every
 * byte queued for a client is weighed against the total before it is
 * queued (ebb__http_make_room); the sweep ends what waits too long. Each
 * end is counted in the server's stats (refused, dropped). */
#include "base/httpd_int.h"

/* A request head still not complete after this, at max_connections, gives
 * its place to a new connection: a client sends its head at once. */
#define HEAD_GRACE_MS 1000u

/* ---- the connection limit ------------------------------------------------------- */

static size_t open_conns(const struct ebb_httpd *h)
{
    return h->nconns - h->closing_conns - h->probe_conns;
}

/* When a trickling connection started: its request's first byte, or its
 * accept while it is still in its TLS handshake. */
static uint64_t trickle_since(const struct conn *c)
{
    return conn_handshaking(c) ? c->accepted : c->reading_since;
}

/* At the connection limit, a new connection takes the place of one that
 * holds the server without using it: the one idle the longest between
 * requests, else the one that has not read its answers the longest
 * (stalled, or held with its pipeline waiting), else the one that has
 * trickled the head of its request the longest (over HEAD_GRACE_MS):
 * neither idle clients, slow readers nor slowloris hold the server.
 * false: all are busy with a request (the new one may take a probe slot). */
static bool drop_for_new(struct ebb_httpd *h)
{
    struct conn *idle = NULL, *slow = NULL, *trickle = NULL;
    uint64_t now = uv_now(h->loop);

    for (struct conn *c = h->conns; c != NULL; c = c->next) {
        if (c->closing || c->in_handler || c->probe_slot)
            continue;
        if (conn_handshaking(c)) {
            /* a TLS handshake is a few round trips: past HEAD_GRACE_MS, a trickle */
            if (now - c->accepted >= HEAD_GRACE_MS &&
                (trickle == NULL || c->accepted < trickle_since(trickle)))
                trickle = c;
        } else if (!c->shutting && c->req.state == REQ_READING && c->reading_since == 0 &&
                   c->queued == 0 && c->in_off == c->in_len) {
            if (idle == NULL || c->last_active < idle->last_active)
                idle = c;
        } else if (c->queued > 0 && (c->stalled || c->held)) {
            if (slow == NULL || c->last_written < slow->last_written)
                slow = c;
        } else if (!c->shutting && c->req.state == REQ_READING && c->reading_since != 0 &&
                   !c->head_done && now - c->reading_since >= HEAD_GRACE_MS) {
            if (trickle == NULL || c->reading_since < trickle_since(trickle))
                trickle = c;
        }
    }
    if (idle == NULL && slow == NULL && trickle == NULL)
        return false;
    h->dropped++;
    if (idle != NULL)
        ebb__http_conn_close(idle);
    else if (slow != NULL)
        ebb__http_conn_lost(slow);
    else
        ebb__http_conn_close(trickle);
    return true;
}

/* The probe slots are full: a new connection takes the slot of the oldest
 * whose request is not complete (a probe sends its request at once).
 * false: every slot holds a probe being answered. */
static bool drop_probe_for_new(struct ebb_httpd *h)
{
    struct conn *oldest = NULL;

    for (struct conn *c = h->conns; c != NULL; c = c->next)
        if (c->probe_slot && !c->closing && !c->in_handler && c->req.state == REQ_READING &&
            (oldest == NULL || c->accepted < oldest->accepted))
            oldest = c;
    if (oldest == NULL)
        return false;
    h->dropped++;
    ebb__http_conn_close(oldest);
    return true;
}

/* Probes are always answered: a new connection at max_connections takes
 * the place of one that holds the server without using it (idle the
 * longest, not reading its answers the longest, trickling the head of its
 * request for over HEAD_GRACE_MS: drop_for_new), else a probe slot:
 * EBB_HTTPD_PROBE_SLOTS more connections that answer GET or HEAD of
 * /healthz, /readyz, /livez (and their subpaths) and refuse anything else
 * with the API server's 429 (dispatch; a slot reads no body, at most
 * PROBE_HEAD_MAX of head, for at most PROBE_TIMEOUT_MS). With the slots
 * full, a new connection takes the slot of the oldest whose request is not
 * complete (drop_probe_for_new): a probe sends its request at once, so
 * only more than EBB_HTTPD_PROBE_SLOTS connections arriving between a
 * probe's connect and its request keep it out. A probe's answer (up to
 * PROBE_ANSWER_MAX, on a connection with nothing else queued) is never
 * refused for want of room in the total (ebb_http_respond). */
int ebb__http_admit(struct ebb_httpd *h)
{
    bool slot = false;

    if (open_conns(h) >= h->opts.max_connections && !drop_for_new(h)) {
        /* at the limit, every connection busy with a request: a probe slot */
        slot = h->probe_conns < EBB_HTTPD_PROBE_SLOTS || drop_probe_for_new(h);
    }
    if (slot)
        return ADMIT_PROBE_SLOT;
    /* no slot either (each answers a probe): refused */
    return open_conns(h) >= h->opts.max_connections ? ADMIT_REFUSE : ADMIT_CONN;
}

/* ---- the total of queued bytes ---------------------------------------------------- */

/* Every byte queued for a client counts: answers, stream chunks written or
 * held, all in c->queued + c->hold.cap (conn_unsent) and their sum
 * h->queued, checked here against max_total_queued for all (and
 * max_queued per stream, by the stream calls) before it is queued, with
 * the reservations of writes (h->reserved). Over the total, the
 * connections that do not read their answers (stalled: nothing taken
 * since the sweep before) or, with `streams`, that stream, are ended, the
 * one that holds the most first, as the API server ends a watcher that
 * falls behind; an answer still without room is replaced by 429, a
 * stream write fails (the stream ends). Over the total only by: status
 * lines, headers and chunk framing; probe answers (ebb__http_admit); one
 * answer larger than the total when nothing else is queued; the answer
 * of a write past its reservation.
 *
 * false, and nothing ended for it, when the one that holds the most is
 * `self` (may be NULL), or when none can be ended. */
bool ebb__http_make_room(struct ebb_httpd *h, struct conn *self, size_t more, bool streams)
{
    while (h->queued + h->reserved + more > h->opts.max_total_queued) {
        struct conn *worst = NULL;
        for (struct conn *c = h->conns; c != NULL; c = c->next)
            if (!c->closing && conn_unsent(c) > 0 &&
                (c->stalled || (streams && c->req.state == REQ_STREAMING)) &&
                (worst == NULL || conn_unsent(c) > conn_unsent(worst)))
                worst = c;
        if (worst == NULL || worst == self)
            return false;
        h->dropped++;
        ebb__http_conn_lost(worst);
    }
    return true;
}

/* ---- deadlines ---------------------------------------------------------------------- */

/* Close connections idle between requests, sending a request too slowly,
 * or not reading what they were sent. */
void ebb__http_sweep(uv_timer_t *t)
{
    struct ebb_httpd *h = t->data;
    uint64_t now = uv_now(h->loop);

    for (struct conn *c = h->conns; c != NULL; c = c->next) {
        size_t q;
        if (c->closing)
            continue;
        /* libuv's queue shrinks as the client takes bytes, in the middle of
         * a long answer too */
        q = uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp);
        c->stalled = c->queued > 0 && q >= c->queue_seen;
        if (q < c->queue_seen)
            c->last_written = now;
        c->queue_seen = q;
        if (c->queued > 0 && now - c->last_written >= h->opts.write_timeout_ms) {
            h->dropped++;           /* a slow reader: nothing taken for that long */
            ebb__http_conn_lost(c);
        } else if (c->shutting) {
            continue;
        } else if (conn_handshaking(c) && now - c->accepted >= h->opts.handshake_timeout_ms) {
            h->dropped++;           /* a TLS handshake that does not finish */
            h->handshakes_failed++;
            ebb__http_conn_close(c);
        } else if (c->req.state == REQ_READING && c->reading_since != 0 &&
                   now - c->reading_since >= h->opts.request_timeout_ms) {
            h->dropped++;           /* trickles a request in: a slow sender */
            ebb__http_conn_close(c);
        } else if (c->probe_slot && c->req.state == REQ_READING &&
                   now - c->accepted >= PROBE_TIMEOUT_MS) {
            h->dropped++;           /* a probe slot waits for a probe, not for ever */
            ebb__http_conn_close(c);
        } else if (c->req.state == REQ_READING && c->queued == 0 &&
                   now - c->last_active >= h->opts.idle_timeout_ms) {
            ebb__http_conn_close(c);
        }
    }
    ebb__http_make_room(h, NULL, 0, false);   /* one answer larger than the total may be read on */
}
