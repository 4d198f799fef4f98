"""moto's server for the local stack, serving one request at a time.

Real DynamoDB applies a conditional write atomically. moto's own server (`python3 -m
moto.server`) handles requests on concurrent threads, and its DynamoDB backend checks a
condition and then writes without a lock, so two concurrent conditional PutItems on one key
can both succeed: tests/lease_dynamodb.rs once saw two winners of one lease. The lease table
relies on that atomicity, so this launcher runs the same moto application behind a lock.

Usage: python3 infra/local/moto_server.py -H 127.0.0.1 -p 18000
"""

import argparse
import os
import threading

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple


def serialized(app):
    """A WSGI app that runs `app` for one request at a time, its response read in full."""
    lock = threading.Lock()

    def serve(environ, start_response):
        with lock:
            response = app(environ, start_response)
            try:
                return [b"".join(response)]
            finally:
                close = getattr(response, "close", None)
                if close is not None:
                    close()

    return serve


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, default=5000)
    args = parser.parse_args()
    os.environ.setdefault("MOTO_PORT", str(args.port))
    app = DomainDispatcherApplication(create_backend_app)
    # Threaded, so a slow or idle connection never blocks accepting others; the lock orders
    # the requests themselves.
    run_simple(args.host, args.port, serialized(app), threaded=True)


if __name__ == "__main__":
    main()
