#!/usr/bin/env python3
"""An origin that continues barrage's traces, as an instrumented service would.

Written against the OpenTelemetry Python SDK, not barrage: it reads each request's W3C
`traceparent` with the SDK's own propagator, makes a SERVER span whose parent is the span
barrage sent, and exports its spans over OTLP/HTTP to the receiver the test runs. Its head
sampler is the SDK's ParentBased(ALWAYS_OFF): it keeps exactly the requests barrage marked
sampled, as a production service honouring the flag does.

Usage: traced_origin.py OTLP_TRACES_URL
Listens on 127.0.0.1 on a free port and prints `port N` on stdout. Stops, flushing its
spans, when stdin closes or on SIGTERM.
"""

import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.propagate import extract
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased

BODY = b"traced\n"


def main():
    provider = TracerProvider(
        resource=Resource.create({"service.name": "traced-origin"}),
        sampler=ParentBased(root=ALWAYS_OFF),
    )
    # Small batches, often: the test reads the receiver soon after the run.
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=sys.argv[1]), schedule_delay_millis=200)
    )
    tracer = provider.get_tracer("traced-origin")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            context = extract(dict(self.headers.items()))
            with tracer.start_as_current_span(
                "GET", context=context, kind=trace.SpanKind.SERVER,
                attributes={"http.request.method": "GET", "url.path": self.path},
            ):
                self.send_response(200)
                self.send_header("Content-Length", str(len(BODY)))
                self.end_headers()
                self.wfile.write(BODY)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"port {server.server_address[1]}", flush=True)

    def stop(*_):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    threading.Thread(target=lambda: (sys.stdin.read(), stop()), daemon=True).start()
    server.serve_forever()
    provider.shutdown()


if __name__ == "__main__":
    main()
