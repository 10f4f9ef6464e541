#!/usr/bin/env python3
"""Hostile HTTP clients for the bounded attack specs (test tooling only).

    http_attack.py HOST PORT MODE CONNECTIONS SECONDS [PATH]

MODE is one of
  slowread  each connection pipelines GET PATH as fast as the server takes
            the requests, and never reads an answer
  idle      each connection is opened and sends nothing
  post      each connection POSTs PATH with a body of just under 3 MiB,
            all of it but the last byte, and never reads
  hugepost  each connection POSTs PATH declaring 100 MiB and sends as
            much of it as the server takes
  slowloris each connection sends the start of GET PATH and then one more
            byte of a header every half second, never ending the headers
  slowbody  each connection POSTs PATH declaring 1 MB and sends its body
            one byte every half second
  watch     each connection GETs PATH (a watch) and reads what comes,
            keeping the stream open
  noread    each connection GETs PATH (a watch) once and never reads

Prints "ready N" once the connections are open and their first bytes
sent (N: how many the server accepted and has not closed), goes on
pushing for SECONDS, then prints "done N" and exits.
"""
import errno
import selectors
import socket
import sys
import time

TRICKLE_EVERY = 0.5


def request(mode, host, path):
    """The first bytes to send, what to send once they are out (None: nothing),
    and what to trickle a byte at a time (None: nothing)."""
    if mode == "slowread":
        return ("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path, host)).encode() * 64, None, None
    if mode == "post":
        n = 3 * 1024 * 1024 - 1
        head = ("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                "Content-Length: %d\r\n\r\n" % (path, host, n)).encode()
        return head + b"{" + b" " * (n - 2), None, None
    if mode == "hugepost":
        n = 100 * 1024 * 1024
        head = ("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                "Content-Length: %d\r\n\r\n" % (path, host, n)).encode()
        return head, b" " * 65536, None
    if mode == "slowloris":
        return ("GET %s HTTP/1.1\r\nHost: %s\r\nX-Trickle: " % (path, host)).encode(), None, b"a"
    if mode == "slowbody":
        head = ("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                "Content-Length: 1000000\r\n\r\n{" % (path, host)).encode()
        return head, None, b" "
    if mode in ("watch", "noread"):
        return ("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path, host)).encode(), None, None
    return b"", None, None


def main():
    host, port, mode, count, secs = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
    path = sys.argv[6] if len(sys.argv) > 6 else "/"
    first, more, trickle = request(mode, host, path)
    reading = mode == "watch"
    sel = selectors.DefaultSelector()
    socks = {}
    for _ in range(count):
        s = socket.socket()
        if not reading:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # take little, read nothing
        try:
            s.connect((host, port))
        except OSError:
            s.close()
            continue
        s.setblocking(False)
        socks[s] = [first, 0]
        events = (selectors.EVENT_WRITE if first or more else 0) | (selectors.EVENT_READ if reading else 0)
        if events:
            sel.register(s, events)

    def forget(s):
        try:
            sel.unregister(s)
        except (KeyError, ValueError):
            pass
        s.close()
        del socks[s]

    def alive():
        # a connection the server closed reads as EOF or a reset; data is left unread
        n = 0
        for s in list(socks):
            if reading:
                n += 1
                continue
            try:
                if s.recv(1, socket.MSG_PEEK) == b"":
                    raise ConnectionResetError
                n += 1
            except BlockingIOError:
                n += 1
            except OSError:
                forget(s)
        return n

    def stop_writing(s):
        if reading:
            sel.modify(s, selectors.EVENT_READ)
        else:
            sel.unregister(s)

    next_trickle = [time.monotonic() + TRICKLE_EVERY]

    def push(until):
        while time.monotonic() < until and (sel.get_map() or trickle):
            now = time.monotonic()
            if trickle and now >= next_trickle[0]:
                next_trickle[0] = now + TRICKLE_EVERY
                for s, (data, off) in list(socks.items()):
                    if off >= len(data):
                        try:
                            s.send(trickle)
                        except OSError:
                            pass
            if not sel.get_map():
                time.sleep(min(0.1, max(0.0, until - time.monotonic())))
                continue
            for key, ev in sel.select(timeout=0.1):
                s = key.fileobj
                if s not in socks:
                    continue
                if ev & selectors.EVENT_READ:
                    try:
                        if s.recv(65536) == b"":
                            forget(s)
                            continue
                    except BlockingIOError:
                        pass
                    except OSError:
                        forget(s)
                        continue
                if not ev & selectors.EVENT_WRITE:
                    continue
                data, off = socks[s]
                if off >= len(data):
                    continue
                try:
                    off += s.send(data[off:off + 262144])
                except OSError as e:
                    if e.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                        continue
                    stop_writing(s)
                    continue
                if off >= len(data):
                    if mode == "slowread":
                        off = 0                  # pipeline again, forever
                    elif mode == "hugepost":
                        data, off = more, 0
                    else:
                        stop_writing(s)          # the rest is trickled, or never sent
                        off = len(data)
                socks[s] = [data, off]

    if mode == "post":
        for s in socks:
            socks[s][0] = first[:-1]
    push(time.monotonic() + 1.0)
    print("ready", alive(), flush=True)
    push(time.monotonic() + secs)
    if not sel.get_map() and not trickle:
        time.sleep(max(0.0, secs))
    print("done", alive(), flush=True)


if __name__ == "__main__":
    main()
