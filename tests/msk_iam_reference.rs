//! Our MSK IAM tokens against AWS's own signers, for the same credential and region:
//! - botocore (what AWS's Python signer, aws-msk-iam-sasl-signer-python, signs with), at a fixed
//!   clock: the same token, byte for byte (`tests/msk_iam/botocore_token.py`);
//! - AWS's Java library (software.amazon.msk:aws-msk-iam-auth, `tests/java/MskIamReference.java`),
//!   at its own clock: signed again at its `X-Amz-Date`, ours has every signed parameter equal,
//!   signature included; only the query order, the path (`/` or none) and the user agent differ.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use base64::Engine;
use mirrorslice::kafka::msk_iam::token::token;

const UA: &str = "mirrorslice/0.1.0";

fn decode(token: &str) -> String {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim())
        .unwrap_or_else(|e| panic!("not base64url without padding ({e}): {token}"));
    String::from_utf8(bytes).unwrap()
}

/// `20261206T024530Z` as a time.
fn at(amz_date: &str) -> SystemTime {
    let t = chrono::NaiveDateTime::parse_from_str(amz_date, "%Y%m%dT%H%M%SZ").unwrap();
    t.and_utc().into()
}

fn ours(c: &Credentials, region: &str, amz_date: &str, expires: u64) -> String {
    let t = token(c, region, at(amz_date), Duration::from_secs(expires), UA).unwrap();
    decode(&t.value)
}

fn botocore(c: &Credentials, region: &str, amz_date: &str, expires: u64) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/msk_iam/botocore_token.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script)
        .args(["--access-key", c.access_key_id()])
        .args(["--secret-key", c.secret_access_key()])
        .args(["--region", region, "--time", amz_date])
        .args(["--expires", &expires.to_string(), "--user-agent", UA]);
    if let Some(t) = c.session_token() {
        cmd.args(["--session-token", t]);
    }
    let out = cmd
        .output()
        .expect("python3 (with botocore: moto brings it)");
    assert!(
        out.status.success(),
        "botocore_token.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    decode(&String::from_utf8_lossy(&out.stdout))
}

#[test]
fn tokens_equal_botocores_byte_for_byte() {
    let long_term = Credentials::new(
        "AKIDEXAMPLE",
        "wJalrXUtnFEMI/K7MDENG+bPxRfiCY",
        None,
        None,
        "t",
    );
    let temporary = Credentials::new(
        "ASIAEXAMPLE",
        "secret/with+specials=",
        Some("FwoGZX+IvYXdz/EBYa==".into()),
        None,
        "t",
    );
    for (c, region, amz_date, expires) in [
        (&long_term, "eu-west-3", "20261206T024530Z", 900),
        (&temporary, "us-east-1", "20250101T000000Z", 900),
        (&temporary, "ap-southeast-2", "20240229T235959Z", 60),
    ] {
        assert_eq!(
            ours(c, region, amz_date, expires),
            botocore(c, region, amz_date, expires),
            "{region} {amz_date}"
        );
    }
}

/// `name=value` pairs of a URL's query, in order.
fn query(url: &str) -> Vec<(String, String)> {
    let (_, q) = url
        .split_once('?')
        .unwrap_or_else(|| panic!("no query: {url}"));
    q.split('&')
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect()
}

#[test]
fn tokens_match_aws_java_librarys_signed_parameters() {
    // Maven and a JDK come with the Apache Kafka stack.
    if common::kafka_only("the Java library is fetched with the Apache Kafka stack's Maven")
        .is_none()
    {
        return;
    }
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/MskIamReference.java");
    for session_token in [None, Some("FwoGZX+IvYXdz/EBYa==")] {
        let c = Credentials::new(
            "AKIAIOSFODNN7EXAMPLE",
            "wJalrXUtnFEMI/K7MDENG",
            session_token.map(String::from),
            None,
            "t",
        );
        let mut cmd = Command::new(common::stack_script());
        cmd.arg("msk-iam-exec")
            .arg(&program)
            .args(["token", "eu-west-3"])
            .env("AWS_ACCESS_KEY_ID", c.access_key_id())
            .env("AWS_SECRET_ACCESS_KEY", c.secret_access_key())
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("AWS_CONFIG_FILE", "/dev/null")
            .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
            .env_remove("AWS_SESSION_TOKEN");
        if let Some(t) = session_token {
            cmd.env("AWS_SESSION_TOKEN", t);
        }
        let out = cmd.output().expect("stack.sh msk-iam-exec");
        assert!(
            out.status.success(),
            "MskIamReference token: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let java = decode(&String::from_utf8_lossy(&out.stdout));
        assert!(
            java.starts_with("https://kafka.eu-west-3.amazonaws.com"),
            "{java}"
        );
        let mut java_q = query(&java);
        let amz_date = (java_q.iter())
            .find(|(k, _)| k == "X-Amz-Date")
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no X-Amz-Date: {java}"));
        // The Java library derives X-Amz-Expires from its clock (expiry minus signing time),
        // so it says 899 when a second turns between the two reads; sign ours with the same.
        let expires: u64 = (java_q.iter())
            .find(|(k, _)| k == "X-Amz-Expires")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or_else(|| panic!("no X-Amz-Expires: {java}"));
        assert!((899..=900).contains(&expires), "{java}");
        let mine = ours(&c, "eu-west-3", &amz_date, expires);
        let mut mine_q = query(&mine);
        // The user agent names the client and is not signed.
        for q in [&mut java_q, &mut mine_q] {
            let ua = q
                .iter()
                .position(|(k, _)| k == "User-Agent")
                .expect("a User-Agent");
            q.remove(ua);
            q.sort();
        }
        assert_eq!(mine_q, java_q, "\nours: {mine}\njava: {java}");
    }
}
