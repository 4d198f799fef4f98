#!/usr/bin/env python3
"""Checks that an IAM listener of the local stack ends a session when its token expires, unless
the client re-authenticates with a fresh token first (KIP-368, as Amazon MSK does), speaking
Kafka's protocol by hand so no client library's own re-authentication hides what the broker does.

    eval "$(MIRRORSLICE_BROKER=kafka infra/local/stack.sh env)"
    python3 tests/msk_iam/reauth_probe.py "$MIRRORSLICE_STACK_A_IAM" [--expires 10]

Tokens come from botocore_token.py (beside this file), signed for the stack's IAM credentials
(MIRRORSLICE_STACK_IAM_*) and valid --expires seconds. Two connections:
  1. authenticates once: the broker reports a session lifetime no longer than the token's, answers
     requests until then, and closes the connection at the first request after it;
  2. re-authenticates on the same connection with a fresh token before the first expires: it keeps
     serving past the first token's expiry, and ends at the second's.
Exit 0 if all of that held; one line per step on stderr.
"""

import argparse
import base64
import datetime
import os
import socket
import ssl
import struct
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ beside the tests
import botocore_token  # noqa: E402

SASL_HANDSHAKE, API_VERSIONS, SASL_AUTHENTICATE = 17, 18, 36


def log(msg):
    print(f"{datetime.datetime.now().time().isoformat(timespec='milliseconds')} {msg}", file=sys.stderr)


class Conn:
    def __init__(self, bootstrap, ca):
        host, port = bootstrap.rsplit(":", 1)
        context = ssl.create_default_context(cafile=ca)
        raw = socket.create_connection((host, int(port)), timeout=10)
        self.sock = context.wrap_socket(raw, server_hostname=host)
        self.correlation = 0

    def request(self, api_key, version, body):
        """Sends a request (header v1) and returns the response body, or None if the broker
        closed the connection."""
        self.correlation += 1
        client_id = b"reauth-probe"
        header = struct.pack(">hhih", api_key, version, self.correlation, len(client_id)) + client_id
        frame = header + body
        try:
            self.sock.sendall(struct.pack(">i", len(frame)) + frame)
            size = struct.unpack(">i", self._read(4))[0]
            response = self._read(size)
        except (ConnectionError, ssl.SSLError, EOFError, socket.timeout):
            return None
        (correlation,) = struct.unpack(">i", response[:4])
        assert correlation == self.correlation, "correlation id mismatch"
        return response[4:]

    def _read(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def authenticate(self, token):
        """SaslHandshake v1 + SaslAuthenticate v1 (OAUTHBEARER initial response); returns the
        session lifetime in ms the broker reports."""
        mechanism = b"OAUTHBEARER"
        body = self.request(SASL_HANDSHAKE, 1, struct.pack(">h", len(mechanism)) + mechanism)
        if body is None or struct.unpack(">h", body[:2])[0] != 0:
            raise RuntimeError(f"SaslHandshake failed: {body!r}")
        auth = b"n,,\x01auth=Bearer " + token.encode() + b"\x01\x01"
        body = self.request(SASL_AUTHENTICATE, 1, struct.pack(">i", len(auth)) + auth)
        if body is None:
            raise RuntimeError("SaslAuthenticate: connection closed")
        (error,) = struct.unpack(">h", body[:2])
        (n,) = struct.unpack(">h", body[2:4])
        message = body[4 : 4 + n].decode() if n >= 0 else None
        rest = body[4 + max(n, 0) :]
        (n,) = struct.unpack(">i", rest[:4])
        (lifetime,) = struct.unpack(">q", rest[4 + max(n, 0) : 12 + max(n, 0)])
        if error != 0:
            raise RuntimeError(f"SaslAuthenticate error {error}: {message}")
        return lifetime

    def alive(self):
        """Whether an ApiVersions request is answered."""
        return self.request(API_VERSIONS, 0, b"") is not None


def token(expires):
    """A token signed now for the stack's credentials, and the time (epoch s) it expires."""
    now = int(time.time())
    url = botocore_token.signed_url(
        os.environ["MIRRORSLICE_STACK_IAM_ACCESS_KEY_ID"],
        os.environ["MIRRORSLICE_STACK_IAM_SECRET_ACCESS_KEY"],
        None,
        os.environ["MIRRORSLICE_STACK_IAM_REGION"],
        datetime.datetime.fromtimestamp(now, datetime.timezone.utc).replace(tzinfo=None),
        expires,
        "mirrorslice-reauth-probe/1",
    )
    return base64.urlsafe_b64encode(url.encode()).decode().rstrip("="), now + expires


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bootstrap", help="an IAM listener, e.g. $MIRRORSLICE_STACK_A_IAM")
    parser.add_argument("--expires", type=int, default=10, help="token lifetime, seconds")
    parser.add_argument("--ca", default=os.path.join(os.environ.get("MIRRORSLICE_STACK_TLS_DIR", ""), "ca.pem"))
    args = parser.parse_args()
    failures = []

    def check(ok, what):
        log(("ok: " if ok else "FAILED: ") + what)
        if not ok:
            failures.append(what)

    # 1. No re-authentication: the session ends with the token.
    conn = Conn(args.bootstrap, args.ca)
    t1, t1_expires = token(args.expires)
    lifetime = conn.authenticate(t1)
    check(0 < lifetime <= args.expires * 1000, f"session lifetime {lifetime} ms within the token's {args.expires} s")
    check(conn.alive(), "requests answered while the token is valid")
    time.sleep(max(0.0, t1_expires + 1.5 - time.time()))
    check(not conn.alive(), "connection closed at the first request after the token expired")

    # 2. Re-authentication with a fresh token before expiry keeps the connection.
    conn = Conn(args.bootstrap, args.ca)
    t2, t2_expires = token(args.expires)
    conn.authenticate(t2)
    time.sleep(max(0.0, t2_expires - args.expires / 3 - time.time()))
    t3, t3_expires = token(args.expires)
    lifetime = conn.authenticate(t3)
    check(lifetime > args.expires * 1000 / 2, f"re-authenticated with a fresh token: new session lifetime {lifetime} ms")
    time.sleep(max(0.0, t2_expires + 1.5 - time.time()))
    check(conn.alive(), "connection still served after the first token expired")
    time.sleep(max(0.0, t3_expires + 1.5 - time.time()))
    check(not conn.alive(), "connection closed after the fresh token expired too")

    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
