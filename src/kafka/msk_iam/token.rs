//! The token an MSK IAM listener accepts over SASL/OAUTHBEARER.
//!
//! It is a SigV4-*presigned* URL, base64url-encoded without padding: a `GET` of
//! `https://kafka.<region>.amazonaws.com/?Action=kafka-cluster:Connect`, signed for service
//! `kafka-cluster` with the signature and its parameters in the query (`X-Amz-Expires` is the
//! token's validity, at most 900 s), then a `User-Agent` parameter naming the client, added
//! after signing. This is what AWS's signers build (`aws-msk-iam-sasl-signer-python`'s
//! `MSKAuthTokenProvider`, the Java library's `IAMOAuthBearerLoginCallbackHandler`); the broker
//! recomputes the signature with the caller's credential, so every byte that is signed must be
//! what they sign. The query is written in botocore's order and encoding (RFC 3986 unreserved
//! characters kept, everything else `%XX`), which `tests/msk_iam/botocore_token.py` reproduces
//! for a fixed clock.
//!
//! Signing is `aws-sigv4`, the signer of the AWS SDK for Rust we already ship (the
//! `aws-msk-iam-sasl-signer` crate wraps the same signer and would add its own copy of
//! `aws-config`).

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    sign, SignableBody, SignableRequest, SignatureLocation, SigningSettings,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use base64::Engine;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The SigV4 service name MSK's IAM listeners check.
pub const SERVICE: &str = "kafka-cluster";
/// The action a token asks for: connecting; what the client may then do is the IAM policy's.
pub const ACTION: &str = "kafka-cluster:Connect";
/// The longest validity MSK accepts, and what AWS's signers use.
pub const MAX_VALIDITY: Duration = Duration::from_secs(900);

/// Everything but RFC 3986's unreserved characters is escaped, as AWS's canonical form wants.
const AWS_QUERY: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// The signer's parameters, in the order botocore writes them (the signature comes last).
const SIGNED_ORDER: [&str; 7] = [
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Date",
    "X-Amz-Expires",
    "X-Amz-SignedHeaders",
    "X-Amz-Security-Token",
    "X-Amz-Signature",
];

/// A token, and when the broker stops accepting it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub value: String,
    pub expires_at: SystemTime,
}

/// The host a token is signed for (not the broker's: MSK checks this one).
pub fn signed_host(region: &str) -> String {
    format!("kafka.{region}.amazonaws.com")
}

/// The token for `credentials` in `region`, signed at `now` and valid for `validity` (the
/// signature's clock has whole seconds; the expiry counts from there).
pub fn token(
    credentials: &Credentials,
    region: &str,
    now: SystemTime,
    validity: Duration,
    user_agent: &str,
) -> Result<Token, String> {
    let signed_at = UNIX_EPOCH
        + Duration::from_secs(
            now.duration_since(UNIX_EPOCH)
                .map_err(|_| "the clock is before 1970".to_string())?
                .as_secs(),
        );
    let url = format!("https://{}/?Action={}", signed_host(region), escape(ACTION));
    let signed = presign(credentials, region, signed_at, validity, &url)?;
    let mut query = url;
    for name in SIGNED_ORDER {
        if let Some((_, value)) = signed.iter().find(|(n, _)| *n == name) {
            query.push_str(&format!("&{name}={}", escape(value)));
        }
    }
    query.push_str(&format!("&User-Agent={}", escape(user_agent)));
    Ok(Token {
        value: base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(query),
        expires_at: signed_at + validity,
    })
}

/// SigV4 query parameters for a `GET` of `url` with an empty body (whose SHA-256 is signed,
/// as botocore does over https).
fn presign(
    credentials: &Credentials,
    region: &str,
    signed_at: SystemTime,
    validity: Duration,
    url: &str,
) -> Result<Vec<(&'static str, String)>, String> {
    let identity: Identity = credentials.clone().into();
    let mut settings = SigningSettings::default();
    settings.signature_location = SignatureLocation::QueryParams;
    settings.expires_in = Some(validity);
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(SERVICE)
        .time(signed_at)
        .settings(settings)
        .build()
        .map_err(|e| format!("signing parameters: {e}"))?
        .into();
    let request = SignableRequest::new("GET", url, std::iter::empty(), SignableBody::Bytes(&[]))
        .map_err(|e| format!("signing {url}: {e}"))?;
    let (instructions, _signature) = sign(request, &params)
        .map_err(|e| format!("signing {url}: {e}"))?
        .into_parts();
    let (_headers, query) = instructions.into_parts();
    Ok(query
        .into_iter()
        .map(|(name, value)| (name, value.into_owned()))
        .collect())
}

fn escape(value: &str) -> String {
    utf8_percent_encode(value, AWS_QUERY).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(token: &Token) -> String {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&token.value)
            .expect("base64url without padding");
        String::from_utf8(bytes).unwrap()
    }

    fn at(rfc3339: &str) -> SystemTime {
        chrono::DateTime::parse_from_rfc3339(rfc3339)
            .unwrap()
            .into()
    }

    fn query(url: &str) -> Vec<(String, String)> {
        let (_, q) = url.split_once('?').unwrap();
        q.split('&')
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect()
    }

    #[test]
    fn long_term_credential_token_field_by_field() {
        let creds = Credentials::new("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG", None, None, "test");
        let now = at("2026-12-06T02:45:30.789Z");
        let t = token(&creds, "eu-west-3", now, MAX_VALIDITY, "mirrorslice/0.1.0").unwrap();
        assert!(!t.value.contains('='), "no padding: {}", t.value);
        assert_eq!(t.expires_at, at("2026-12-06T03:00:30Z"));
        let url = decoded(&t);
        assert!(
            url.starts_with("https://kafka.eu-west-3.amazonaws.com/?"),
            "{url}"
        );
        let names: Vec<_> = query(&url).into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            names,
            [
                "Action",
                "X-Amz-Algorithm",
                "X-Amz-Credential",
                "X-Amz-Date",
                "X-Amz-Expires",
                "X-Amz-SignedHeaders",
                "X-Amz-Signature",
                "User-Agent"
            ]
        );
        let q: std::collections::HashMap<_, _> = query(&url).into_iter().collect();
        assert_eq!(q["Action"], "kafka-cluster%3AConnect");
        assert_eq!(q["X-Amz-Algorithm"], "AWS4-HMAC-SHA256");
        assert_eq!(
            q["X-Amz-Credential"],
            "AKIDEXAMPLE%2F20261206%2Feu-west-3%2Fkafka-cluster%2Faws4_request"
        );
        assert_eq!(q["X-Amz-Date"], "20261206T024530Z");
        assert_eq!(q["X-Amz-Expires"], "900");
        assert_eq!(q["X-Amz-SignedHeaders"], "host");
        assert_eq!(q["User-Agent"], "mirrorslice%2F0.1.0");
        // Computed independently with botocore (tests/msk_iam/botocore_token.py, same inputs).
        assert_eq!(q["X-Amz-Signature"], BOTOCORE_SIGNATURE);
    }

    const BOTOCORE_SIGNATURE: &str =
        "66c5a2e17cf6d6907fad320e37f867185787a1779e47eb37e4cc7b63c2e203fc";

    #[test]
    fn session_token_is_signed_and_escaped() {
        let creds = Credentials::new("ASIAEXAMPLE", "secret", Some("tok/en+=".into()), None, "t");
        let t = token(
            &creds,
            "us-east-1",
            at("2026-01-02T03:04:05Z"),
            MAX_VALIDITY,
            "x",
        )
        .unwrap();
        let url = decoded(&t);
        let names: Vec<_> = query(&url).into_iter().map(|(k, _)| k).collect();
        assert_eq!(names[6], "X-Amz-Security-Token", "{url}");
        assert_eq!(names[7], "X-Amz-Signature", "{url}");
        assert!(
            url.contains("X-Amz-Security-Token=tok%2Fen%2B%3D&"),
            "{url}"
        );
        // The token is part of what is signed: another token, another signature.
        let other = Credentials::new("ASIAEXAMPLE", "secret", Some("other".into()), None, "t");
        let u = token(
            &other,
            "us-east-1",
            at("2026-01-02T03:04:05Z"),
            MAX_VALIDITY,
            "x",
        )
        .unwrap();
        let sig = |u: &str| query(u).into_iter().find(|(k, _)| k == "X-Amz-Signature");
        assert_ne!(sig(&url), sig(&decoded(&u)));
    }
}
