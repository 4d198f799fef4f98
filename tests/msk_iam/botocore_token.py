#!/usr/bin/env python3
"""Prints the MSK IAM OAUTHBEARER token that AWS's Python signer (aws-msk-iam-sasl-signer-python,
MSKAuthTokenProvider.generate_auth_token) makes, for given credentials and a fixed signing time.

The URL is built as that signer builds it, with botocore: SigV4QueryAuth("kafka-cluster", region,
expires) on AWSRequest(GET, https://kafka.<region>.amazonaws.com/, params={Action:
kafka-cluster:Connect}), then User-Agent added as a query parameter after signing (unsigned) and
the URL encoded base64url without padding. The clock is fixed by patching botocore.auth's
get_current_datetime (what SigV4Auth.add_auth reads), as botocore's own signer tests patch it.

    python3 tests/msk_iam/botocore_token.py --access-key AKID --secret-key SECRET \
        --region eu-west-3 --time 20250101T000000Z [--session-token T] [--expires 900] \
        [--user-agent aws-msk-iam-sasl-signer-python/1.0.2] [--url]

--time now signs at the current time; --url prints the decoded URL instead of the token.
Needs only botocore (not the signer package itself).
"""

import argparse
import base64
import datetime
import sys
from unittest import mock

import botocore.auth
from botocore.auth import SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

# The signer's user agent: "aws-msk-iam-sasl-signer-python/<its version>".
DEFAULT_USER_AGENT = "aws-msk-iam-sasl-signer-python/1.0.2"


def signed_url(access_key, secret_key, session_token, region, when, expires, user_agent):
    credentials = Credentials(access_key, secret_key, session_token)
    signer = SigV4QueryAuth(credentials, "kafka-cluster", region, expires=expires)
    request = AWSRequest(
        method="GET",
        url=f"https://kafka.{region}.amazonaws.com/",
        params={"Action": "kafka-cluster:Connect"},
    )
    with mock.patch.object(botocore.auth, "get_current_datetime", return_value=when):
        signer.add_auth(request)
    request.params = {"User-Agent": user_agent}
    return request.prepare().url


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--access-key", required=True)
    parser.add_argument("--secret-key", required=True)
    parser.add_argument("--session-token")
    parser.add_argument("--region", required=True)
    parser.add_argument("--time", required=True, help="yyyymmddTHHMMSSZ (UTC), or now")
    parser.add_argument("--expires", type=int, default=900)
    parser.add_argument("--user-agent", default=DEFAULT_USER_AGENT)
    parser.add_argument("--url", action="store_true", help="print the URL, not the token")
    args = parser.parse_args()
    if args.time == "now":
        when = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None, microsecond=0)
    else:
        try:
            when = datetime.datetime.strptime(args.time, "%Y%m%dT%H%M%SZ")
        except ValueError:
            parser.error(f"--time {args.time}: expected yyyymmddTHHMMSSZ or now")
    url = signed_url(
        args.access_key,
        args.secret_key,
        args.session_token,
        args.region,
        when,
        args.expires,
        args.user_agent,
    )
    if args.url:
        print(url)
    else:
        print(base64.urlsafe_b64encode(url.encode("utf-8")).decode("ascii").rstrip("="))
    return 0


if __name__ == "__main__":
    sys.exit(main())
