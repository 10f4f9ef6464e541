#!/usr/bin/env python3
"""Load an HTML report in headless Chromium and check it.

    report_check.py REPORT.html [--charts id,id,...] [--screenshot OUT.png] [--width 1280]

Chromium runs with a fresh profile, no network, and the DevTools protocol
on a local port; this script speaks the protocol over a WebSocket (standard
library only). It fails (exit 1) when the page logs an error or a warning to
the console, throws, asks for anything but the file itself, or lacks one of
the charts (an <svg class="chart"> with that id and at least one shape in
it). It prints what it found as JSON. Exit 77 when Chromium is missing.
"""
import argparse
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         "--disable-extensions", "--disable-default-apps", "--mute-audio"]


class WebSocket:
    """Just enough of RFC 6455 for the DevTools protocol: text frames."""

    def __init__(self, url):
        assert url.startswith("ws://")
        hostport, path = url[5:].split("/", 1)
        host, port = hostport.split(":")
        self.s = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, hostport, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.s.recv(1)
            if not chunk:
                raise RuntimeError("websocket handshake: connection closed")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError("websocket handshake: " + head.decode(errors="replace"))
        self.buf = b""

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        hdr = bytes([0x81])
        if n < 126:
            hdr += bytes([0x80 | n])
        elif n < 65536:
            hdr += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            hdr += bytes([0x80 | 127]) + struct.pack(">Q", n)
        self.s.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(1 << 16)
            if not chunk:
                raise RuntimeError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        parts = []
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            op = b0 & 0x0F
            if op == 0x8:
                raise RuntimeError("websocket closed by the browser")
            if op in (0x9, 0xA):
                continue
            parts.append(data)
            if b0 & 0x80:
                return b"".join(parts).decode()


class Page:
    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.events = []

    def call(self, method, **params):
        self.next_id += 1
        want = self.next_id
        self.ws.send(json.dumps({"id": want, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == want:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait(self, method, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            for e in self.events:
                if e["method"] == method:
                    return e
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self.events.append(msg)
        raise RuntimeError("no %s within %d s" % (method, timeout))


CHECK_JS = """
(() => {
  const charts = {};
  for (const svg of document.querySelectorAll('svg.chart')) {
    charts[svg.id] = svg.querySelectorAll('rect,path,circle,line,polyline').length;
  }
  return JSON.stringify({title: document.title, charts: charts,
                         sections: [...document.querySelectorAll('section[id]')].map(s => s.id),
                         height: document.documentElement.scrollHeight,
                         scripts: document.scripts.length,
                         links: document.querySelectorAll('link,img,iframe,object,embed').length});
})()
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--charts", default="")
    ap.add_argument("--screenshot")
    ap.add_argument("--width", type=int, default=1280)
    a = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("chromium is not installed (make deps installs it)", file=sys.stderr)
        return 77
    path = os.path.abspath(a.report)
    url = "file://" + path
    profile = tempfile.mkdtemp(prefix="ebb-report-")
    proc = subprocess.Popen([chromium] + FLAGS + ["--user-data-dir=" + profile, "--remote-debugging-port=0",
                                                  "--window-size=%d,900" % a.width, "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        end = time.time() + 60
        while not os.path.exists(port_file) or os.path.getsize(port_file) == 0:
            if proc.poll() is not None or time.time() > end:
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.1)
        port = int(open(port_file).read().split()[0])
        targets = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=30))
        target = next(t for t in targets if t["type"] == "page")
        page = Page(WebSocket(target["webSocketDebuggerUrl"]))
        for domain in ("Runtime", "Log", "Page", "Network"):
            page.call(domain + ".enable")
        page.call("Page.navigate", url=url)
        page.wait("Page.loadEventFired")
        result = json.loads(page.call("Runtime.evaluate", expression=CHECK_JS, returnByValue=True)["result"]["value"])
        problems = []
        for e in page.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.exceptionThrown":
                problems.append("exception: " + p["exceptionDetails"].get("text", "?"))
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                problems.append("console.%s: %s" % (p["type"], " ".join(str(x.get("value")) for x in p.get("args", []))))
            elif m == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
                problems.append("log %s: %s" % (p["entry"]["level"], p["entry"]["text"]))
            elif m == "Network.requestWillBeSent" and p["request"]["url"] != url:
                problems.append("request: " + p["request"]["url"])
        for cid in filter(None, a.charts.split(",")):
            if result["charts"].get(cid, 0) == 0:
                problems.append("chart %s is missing or empty" % cid)
        if a.screenshot:
            page.call("Emulation.setDeviceMetricsOverride", width=a.width, height=result["height"],
                      deviceScaleFactor=1, mobile=False)
            shot = page.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
            with open(a.screenshot, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
        result["problems"] = problems
        result["bytes"] = os.path.getsize(path)
        print(json.dumps(result, indent=1, sort_keys=True))
        return 1 if problems else 0
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
