#!/usr/bin/env python3
"""An OTLP receiver for barrage's tests, decoding with code barrage did not write.

Serves OTLP/gRPC (TraceService and MetricsService Export) and OTLP/HTTP (POST /v1/traces,
/v1/metrics, protobuf bodies) on 127.0.0.1, each on a free port, and prints
`grpc PORT` and `http PORT` on stdout. Every request received is one JSON line in OUT:
{"transport", "signal", "headers": {name: value}, "body": MessageToDict(request)}.
Stops when stdin closes or on SIGTERM.

    otlp_receiver.py OUT [--fail-first N]

--fail-first N answers the first N requests of each transport with UNAVAILABLE / 503, to
exercise the sender's retries.
"""

import json
import signal
import sys
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

LOCK = threading.Lock()
OUT = None
FAIL_FIRST = 0
FAILED = {"grpc": 0, "http": 0}


def should_fail(transport):
    with LOCK:
        if FAILED[transport] < FAIL_FIRST:
            FAILED[transport] += 1
            return True
    return False


def record(transport, signal_name, headers, message):
    line = json.dumps({"transport": transport, "signal": signal_name, "headers": headers, "body": MessageToDict(message)})
    with LOCK:
        OUT.write(line + "\n")
        OUT.flush()


class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
    def Export(self, request, context):
        if should_fail("grpc"):
            context.abort(grpc.StatusCode.UNAVAILABLE, "failing on purpose")
        record("grpc", "metrics", dict(context.invocation_metadata()), request)
        return metrics_service_pb2.ExportMetricsServiceResponse()


class Traces(trace_service_pb2_grpc.TraceServiceServicer):
    def Export(self, request, context):
        if should_fail("grpc"):
            context.abort(grpc.StatusCode.UNAVAILABLE, "failing on purpose")
        record("grpc", "traces", dict(context.invocation_metadata()), request)
        return trace_service_pb2.ExportTraceServiceResponse()


PATHS = {
    "/v1/metrics": ("metrics", metrics_service_pb2.ExportMetricsServiceRequest, metrics_service_pb2.ExportMetricsServiceResponse),
    "/v1/traces": ("traces", trace_service_pb2.ExportTraceServiceRequest, trace_service_pb2.ExportTraceServiceResponse),
}


class Http(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path not in PATHS or self.headers.get("Content-Type") != "application/x-protobuf":
            return self.answer(404 if self.path not in PATHS else 415, b"")
        if should_fail("http"):
            return self.answer(503, b"")
        name, request_type, response_type = PATHS[self.path]
        message = request_type()
        message.ParseFromString(body)
        record("http", name, {k.lower(): v for k, v in self.headers.items()}, message)
        self.answer(200, response_type().SerializeToString())

    def answer(self, code, body):
        self.send_response(code)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    global OUT, FAIL_FIRST
    args = sys.argv[1:]
    if "--fail-first" in args:
        i = args.index("--fail-first")
        FAIL_FIRST = int(args[i + 1])
        del args[i : i + 2]
    OUT = open(args[0], "a", encoding="utf-8")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), server)
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), server)
    grpc_port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    http = ThreadingHTTPServer(("127.0.0.1", 0), Http)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    print(f"grpc {grpc_port}", flush=True)
    print(f"http {http.server_address[1]}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    stop.wait()
    http.shutdown()
    server.stop(0)
    OUT.close()


if __name__ == "__main__":
    main()
