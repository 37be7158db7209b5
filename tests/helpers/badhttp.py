#!/usr/bin/env python3
"""A misbehaving HTTP server for tests/e2e_remote.sh (127.0.0.1 only).

  badhttp.py PORTFILE FILE [GOOD_URL]
      serves on a free port (written to PORTFILE) by path:
      /trunc.gguf   206 for the asked range of FILE, but the connection is
                    closed after half of the body
      /stall.gguf   accepts the request and never answers
      /loop.gguf    302 to itself (a redirect loop)
      /redir.gguf   302 to GOOD_URL
      /plain.gguf   200 with the whole FILE, ignoring Range
      /slow.gguf    206 for the asked range, dripped: 64 KiB every 50 ms
                    (progress within one request)
"""
import http.server
import os
import re
import socketserver
import sys
import time

PORTFILE, FILE = sys.argv[1], sys.argv[2]
GOOD = sys.argv[3] if len(sys.argv) > 3 else ""
DATA = open(FILE, "rb").read()


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        if self.path == "/stall.gguf":
            time.sleep(30)
            return
        if self.path in ("/loop.gguf", "/redir.gguf"):
            self.send_response(302)
            self.send_header("Location", self.path if self.path == "/loop.gguf" else GOOD)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path == "/plain.gguf":
            self.send_response(200)
            self.send_header("Content-Length", str(len(DATA)))
            self.end_headers()
            self.wfile.write(DATA)
            return
        m = re.match(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        a = int(m.group(1)) if m else 0
        b = min(int(m.group(2)) if m and m.group(2) else len(DATA) - 1, len(DATA) - 1)
        body = DATA[a:b + 1]
        if self.path == "/slow.gguf":
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (a, b, len(DATA)))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                for i in range(0, len(body), 65536):
                    self.wfile.write(body[i:i + 65536])
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                pass
            return
        self.send_response(206)
        self.send_header("Content-Range", "bytes %d-%d/%d" % (a, b, len(DATA)))
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
        except OSError:
            pass
        self.close_connection = True


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


srv = S(("127.0.0.1", 0), H)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
