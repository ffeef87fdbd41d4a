"""A minimal OTLP/HTTP JSON receiver: appends each request's path and body
to a file, answers {} and exits after two minutes at the latest."""

import http.server
import json
import os
import sys
import threading

port, out, pid_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        with open(out, "a", encoding="utf-8") as file:
            file.write(json.dumps({"path": self.path, "body": body.decode("utf-8", "replace")}) + "\n")
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", port), Handler)
threading.Timer(120, server.shutdown).start()
with open(pid_file, "w") as file:
    file.write(str(os.getpid()))
server.serve_forever()
