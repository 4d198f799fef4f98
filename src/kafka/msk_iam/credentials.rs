//! The AWS credential that signs MSK IAM tokens, from the standard chain (`aws-config`:
//! environment, web identity, profiles, the Lambda function's role), a named profile
//! (`awsProfileName`), and a role assumed with it through STS (`awsRoleArn`).
//!
//! librdkafka asks for tokens from whatever thread serves a client's events, sometimes inside
//! the async runtime, and waits for the answer. Credentials are cached per source for the
//! process (a warm Lambda keeps them), so that wait is a signature, not a round trip; when one
//! is missing or near its expiry it is fetched on a thread of its own with a runtime of its
//! own, which works from any caller's thread.

use super::settings::{CredentialSource, DEFAULT_SESSION_NAME};
use aws_config::profile::ProfileFileCredentialsProvider;
use aws_config::{sts::AssumeRoleProvider, BehaviorVersion, Region};
use aws_credential_types::provider::ProvideCredentials;
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_credential_types::Credentials;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// A credential is fetched again this long before it expires; one without an expiry (keys in
/// the environment or a profile) is read again after this long, so a rotation is seen.
const REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

struct Cached {
    credentials: Credentials,
    fetched: Instant,
}

impl Cached {
    fn fresh(&self) -> bool {
        match self.credentials.expiry() {
            Some(expiry) => expiry
                .duration_since(SystemTime::now())
                .is_ok_and(|left| left > REFRESH_MARGIN),
            None => self.fetched.elapsed() < REFRESH_MARGIN,
        }
    }
}

fn cache() -> &'static Mutex<HashMap<CredentialSource, Cached>> {
    static CACHE: OnceLock<Mutex<HashMap<CredentialSource, Cached>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The credential for `source`, cached; `sts_region` is where a role is assumed when the
/// source names none (the cluster's region). Blocks while it is fetched.
pub fn credentials(source: &CredentialSource, sts_region: &str) -> Result<Credentials, String> {
    if let Some(c) = cache().lock().expect("credential cache").get(source) {
        if c.fresh() {
            return Ok(c.credentials.clone());
        }
    }
    let credentials = fetch_blocking(source.clone(), sts_region.to_string())?;
    cache().lock().expect("credential cache").insert(
        source.clone(),
        Cached {
            credentials: credentials.clone(),
            fetched: Instant::now(),
        },
    );
    Ok(credentials)
}

/// Forget every cached credential (tests that change the environment).
pub(super) fn forget_all() {
    cache().lock().expect("credential cache").clear();
}

fn fetch_blocking(source: CredentialSource, sts_region: String) -> Result<Credentials, String> {
    std::thread::Builder::new()
        .name("msk-iam-credentials".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("starting a runtime for AWS credentials: {e}"))?;
            runtime.block_on(fetch(&source, &sts_region))
        })
        .map_err(|e| format!("starting a thread for AWS credentials: {e}"))?
        .join()
        .map_err(|_| "fetching AWS credentials panicked".to_string())?
}

async fn fetch(source: &CredentialSource, sts_region: &str) -> Result<Credentials, String> {
    let sdk = aws_config::defaults(BehaviorVersion::latest()).load().await;
    // A named profile is that profile alone, as in AWS's Java library: keys in the environment
    // (first in the default chain) must not win over it.
    let (base, what) = match &source.profile {
        Some(p) => {
            let provider = ProfileFileCredentialsProvider::builder()
                .profile_name(p)
                .build();
            (
                SharedCredentialsProvider::new(provider),
                format!("AWS profile {p:?}"),
            )
        }
        None => {
            let chain = sdk
                .credentials_provider()
                .ok_or("the default AWS credential chain is empty")?;
            (chain, "the default AWS credential chain".to_string())
        }
    };
    let Some(role) = &source.role_arn else {
        return base
            .provide_credentials()
            .await
            .map_err(|e| format!("no credential from {what}: {}", describe(&e)));
    };
    let session = (source.role_session_name.as_deref()).unwrap_or(DEFAULT_SESSION_NAME);
    let region = source.sts_region.as_deref().unwrap_or(sts_region);
    let mut builder = AssumeRoleProvider::builder(role)
        .session_name(session)
        .region(Region::new(region.to_string()))
        .configure(&sdk);
    if let Some(id) = &source.role_external_id {
        builder = builder.external_id(id);
    }
    builder
        .build_from_provider(base)
        .await
        .provide_credentials()
        .await
        .map_err(|e| {
            format!(
                "assuming role {role} (session {session}, STS in {region}) with {what}: {}",
                describe(&e)
            )
        })
}

/// The whole chain of a credential error: the first line alone is often just "an error
/// occurred".
fn describe(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}
