"""Scrape /metrics: N requests each on a new connection, then M on one
kept-alive connection; prints requests/s of each (spec/bench/metrics_tls).
    python3 spec/bench/scrape.py https|http HOST PORT N M
"""
import http.client
import ssl
import sys
import time


# one context for every connection (making one loads the system's CAs)
CTX = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
CTX.check_hostname = False
CTX.verify_mode = ssl.CERT_NONE   # the self-signed certificate


def conn(scheme, host, port):
    if scheme == "https":
        return http.client.HTTPSConnection(host, port, context=CTX, timeout=10)
    return http.client.HTTPConnection(host, port, timeout=10)


def get(c):
    c.request("GET", "/metrics")
    r = c.getresponse()
    body = r.read()
    if r.status != 200 or b"ebb_leader" not in body:
        sys.exit("unexpected answer: %d" % r.status)
    return len(body)


def main():
    scheme, host, port, n, m = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    t = time.perf_counter()
    for _ in range(n):
        c = conn(scheme, host, port)
        size = get(c)
        c.close()
    new = n / (time.perf_counter() - t)
    c = conn(scheme, host, port)
    t = time.perf_counter()
    for _ in range(m):
        get(c)
    kept = m / (time.perf_counter() - t)
    c.close()
    print("  %s: %.0f scrapes/s on a new connection each, %.0f/s kept alive (%d bytes of /metrics)"
          % (scheme, new, kept, size))


main()
