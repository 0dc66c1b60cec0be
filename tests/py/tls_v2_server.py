"""A minimal HTTPS server answering every POST with one fixed v2 inference response, for
`acceval qps`'s TLS options (tests/serve.rs). Standard library only.

usage: tls_v2_server.py CERT.pem KEY.pem [CLIENT_CA.pem]
With CLIENT_CA the server requires a client certificate signed by it. Prints the port.
"""

import json
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BODY = json.dumps(
    {"model_name": "m", "outputs": [{"name": "y", "shape": [1], "datatype": "FP32", "data": [1.0]}]}
).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args):
        pass


cert, key = sys.argv[1], sys.argv[2]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
if len(sys.argv) > 3:
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(sys.argv[3])
srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print(srv.server_address[1], flush=True)
srv.serve_forever()
