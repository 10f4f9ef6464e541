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

Prints "ready N" once the connections are open and their first bytes
sent (N: how many the server accepted and has not closed), goes on
pushing for SECONDS, then prints "done N" and exits.
"""
import errno
import selectors
import socket
import sys
import time


def request(mode, host, path):
    if mode == "slowread":
        return ("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path, host)).encode() * 64, None
    if mode == "post":
        n = 3 * 1024 * 1024 - 1
        head = ("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                "Content-Length: %d\r\n\r\n" % (path, host, n)).encode()
        return head + b"{" + b" " * (n - 2), None
    if mode == "hugepost":
        n = 100 * 1024 * 1024
        head = ("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                "Content-Length: %d\r\n\r\n" % (path, host, n)).encode()
        return head, b" " * 65536
    return b"", None


def main():
    host, port, mode, count, secs = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
    path = sys.argv[6] if len(sys.argv) > 6 else "/"
    first, more = request(mode, host, path)
    sel = selectors.DefaultSelector()
    socks = {}
    for _ in range(count):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # take little, read nothing
        try:
            s.connect((host, port))
        except OSError:
            s.close()
            continue
        s.setblocking(False)
        socks[s] = [first, 0]
        if first or more:
            sel.register(s, selectors.EVENT_WRITE)

    def alive():
        # a connection the server closed reads as EOF or a reset; data is left unread
        n = 0
        for s in list(socks):
            try:
                if s.recv(1, socket.MSG_PEEK) == b"":
                    raise ConnectionResetError
                n += 1
            except BlockingIOError:
                n += 1
            except OSError:
                try:
                    sel.unregister(s)
                except (KeyError, ValueError):
                    pass
                s.close()
                del socks[s]
        return n

    def push(until):
        while time.monotonic() < until and sel.get_map():
            for key, _ in sel.select(timeout=0.1):
                s = key.fileobj
                data, off = socks[s]
                try:
                    off += s.send(data[off:off + 262144])
                except OSError as e:
                    if e.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                        continue
                    sel.unregister(s)
                    continue
                if off >= len(data):
                    if mode == "slowread":
                        off = 0                  # pipeline again, forever
                    elif mode == "hugepost":
                        data, off = more, 0
                    else:
                        sel.unregister(s)        # the last byte is never sent
                        off = len(data)
                socks[s] = [data, off]

    if mode == "post":
        for s in socks:
            socks[s][0] = first[:-1]
    push(time.monotonic() + 1.0)
    print("ready", alive(), flush=True)
    push(time.monotonic() + secs)
    if not sel.get_map():
        time.sleep(max(0.0, secs))
    print("done", alive(), flush=True)


if __name__ == "__main__":
    main()
