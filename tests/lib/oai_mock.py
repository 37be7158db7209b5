#!/usr/bin/env python3
"""A scripted OpenAI-compatible server for e2e_chat_remote.sh: what llama-server
does not do on demand. `oai_mock.py PORT [CLOSELOG]`; the model named in the
request picks the behaviour:
  missing    404 with an error object (vLLM's "model does not exist")
  midstream  three content chunks, then an error event, then the end
  silent     two content chunks, then nothing for 60 s (a timeout)
  noprobs    reasoning_content, then content without logprobs, finish_reason stop
  slow       a content chunk every 50 ms for up to 60 s; the moment the client
             closes the connection (seen within 5 ms: the socket polled between
             chunks) is appended to CLOSELOG as "closed EPOCH_NS"
GET /v1/models lists them, like vLLM with "max_model_len" for noprobs only
(a server with a models list that says the context for some models and no
/props: every other path is a 404)."""
import http.server
import json
import select
import socket
import sys
import time

MODELS = ["noprobs", "midstream", "silent", "missing", "slow"]
CLOSELOG = sys.argv[2] if len(sys.argv) > 2 else None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/v1/models":
            self.reply(200, {"object": "list", "data": [dict({"id": m, "object": "model", "owned_by": "vllm"},
                                                             **({"max_model_len": 4096} if m == "noprobs" else {}))
                                                        for m in MODELS]})
        else:
            self.reply(404, {"error": {"message": "not found", "code": 404}})

    def chunk(self, obj):
        data = ("data: " + json.dumps(obj) + "\n\n").encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def delta(self, **d):
        self.chunk({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d, "finish_reason": None}]})

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        model = req.get("model", "")
        if model not in MODELS or model == "missing":
            self.reply(404, {"error": {"message": "The model `%s` does not exist." % model, "type": "NotFoundError",
                                       "code": 404}})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if model == "noprobs":
            self.delta(reasoning_content="The user says hello.")
            for w in ["Hello", " from", " the", " mock", "."]:
                self.delta(content=w)
            self.chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 9, "completion_tokens": 5}})
            self.chunk_done()
        elif model == "midstream":
            for w in ["Three", " words", " then"]:
                self.delta(content=w)
            self.chunk({"error": {"message": "out of memory on the device", "type": "server_error", "code": 500}})
            self.chunk_done()
        elif model == "slow":
            self.slow()
        elif model == "silent":
            for w in ["Waiting", " for"]:
                self.delta(content=w)
            time.sleep(60)

    def closed(self, wait):
        """Whether the client closed the connection (EOF readable) within wait s."""
        r, _, _ = select.select([self.connection], [], [], wait)
        if not r:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def slow(self):
        t_end = time.time() + 60
        i = 0
        while time.time() < t_end:
            try:
                self.delta(content=" word%d" % i)
            except OSError:
                break
            i += 1
            t_next = time.time() + 0.05
            gone = False
            while not gone and time.time() < t_next:
                gone = self.closed(0.005)
            if gone:
                break
        t = time.time_ns()
        if CLOSELOG:
            with open(CLOSELOG, "a") as f:
                f.write("closed %d\n" % t)
        self.close_connection = True

    def chunk_done(self):
        data = b"data: [DONE]\n\n"
        self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
        self.wfile.flush()


http.server.ThreadingHTTPServer.daemon_threads = True
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
