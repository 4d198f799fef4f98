//! MSK IAM authentication: Java's `AWS_MSK_IAM` and `IAMOAuthBearerLoginCallbackHandler`
//! settings ([`settings`]), served by librdkafka's OAUTHBEARER mechanism with MSK's IAM token
//! ([`token`]) signed by the caller's AWS credential ([`credentials`]).
//!
//! How a client gets its tokens: librdkafka asks for them with an event on the client's main
//! queue, answered by the client context's `generate_oauth_token` ([`generate`]) when the
//! client polls; and every client is also handed one when created and then on a timer
//! ([`register`], see `refresh.rs`), because most clients do not poll often enough, or at all.
//! Credentials are cached for the process ([`credentials`]); tokens are signed afresh each
//! time (see [`token_for`]).

pub mod credentials;
mod refresh;
pub mod settings;
pub mod token;

pub use refresh::{refresh_all, register, Registration};

use rdkafka::client::{Client, OAuthToken};
use rdkafka::config::ClientConfig;
use rdkafka::ClientContext;
use settings::IamSettings;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What tokens say in their `User-Agent` parameter (MSK logs it).
pub const USER_AGENT: &str = concat!("mirrorslice/", env!("CARGO_PKG_VERSION"));
/// Overrides the token validity (`X-Amz-Expires`, seconds, 1..=900). For tests that watch
/// tokens being refreshed; MSK's own signers always use 900.
pub const VALIDITY_ENV: &str = "MIRRORSLICE_MSK_IAM_TOKEN_SECONDS";

/// The MSK IAM settings of a librdkafka config made by [`crate::kafka::client_config`].
pub fn settings_of(config: &ClientConfig) -> Option<IamSettings> {
    IamSettings::decode(config.get("sasl.oauthbearer.config")?)
}

/// A token for `settings`, signed now. Not cached: a token handed to librdkafka with all its
/// validity left gives the client the most time (a fifth of it) between librdkafka asking for
/// the next one and the expiry, which a client blocked in a request must outlast. Signing is a
/// few microseconds; the credential is what is cached.
pub fn token_for(settings: &IamSettings) -> Result<token::Token, String> {
    let validity = validity()?;
    let now = SystemTime::now();
    let credential = credentials::credentials(&settings.credential, &settings.region)?;
    let mut t = token::token(&credential, &settings.region, now, validity, USER_AGENT)?;
    // A token signed with a credential that expires sooner dies with it: librdkafka must
    // refresh before that.
    if let Some(expiry) = credential.expiry() {
        t.expires_at = t.expires_at.min(expiry);
    }
    tracing::debug!(
        region = %settings.region,
        access_key_id = credential.access_key_id(),
        valid_for = ?t.expires_at.duration_since(now).unwrap_or_default(),
        "MSK IAM token signed"
    );
    Ok(t)
}

/// Whether tokens can be made for `settings`: the validity setting is sound and a credential is
/// found (and cached for the tokens to come).
pub fn check(settings: &IamSettings) -> Result<(), String> {
    validity()?;
    credentials::credentials(&settings.credential, &settings.region).map(drop)
}

/// Forget every cached credential (tests that change the environment).
pub fn forget_cached() {
    credentials::forget_all();
}

/// The MSK IAM part of a `ClientContext` impl: librdkafka's token requests answered by
/// [`generate`]. Every client context of ours has it.
macro_rules! answer_token_requests {
    () => {
        const ENABLE_REFRESH_OAUTH_TOKEN: bool = true;
        fn generate_oauth_token(
            &self,
            config: Option<&str>,
        ) -> Result<rdkafka::client::OAuthToken, Box<dyn std::error::Error>> {
            $crate::kafka::msk_iam::generate(config)
        }
    };
}
pub(crate) use answer_token_requests;

/// `generate_oauth_token` of every client context: librdkafka passes the client's
/// `sasl.oauthbearer.config`.
pub fn generate(
    oauthbearer_config: Option<&str>,
) -> Result<OAuthToken, Box<dyn std::error::Error>> {
    let settings = oauthbearer_config
        .and_then(IamSettings::decode)
        .ok_or("OAUTHBEARER without a token source: mirrorslice signs MSK IAM tokens only")?;
    let t = token_for(&settings)?;
    Ok(OAuthToken {
        token: t.value,
        principal_name: principal(&settings),
        lifetime_ms: millis(t.expires_at),
    })
}

/// The token's validity: 900 s, or [`VALIDITY_ENV`].
pub(crate) fn validity() -> Result<Duration, String> {
    let Ok(text) = std::env::var(VALIDITY_ENV) else {
        return Ok(token::MAX_VALIDITY);
    };
    match text.trim().parse::<u64>() {
        Ok(s) if (1..=token::MAX_VALIDITY.as_secs()).contains(&s) => Ok(Duration::from_secs(s)),
        _ => Err(format!(
            "{VALIDITY_ENV}={text:?}: expected whole seconds from 1 to 900"
        )),
    }
}

/// librdkafka wants a principal name; the broker decides the real one from the signature.
pub(crate) fn principal(settings: &IamSettings) -> String {
    match &settings.credential.role_arn {
        Some(role) => role.clone(),
        None => "mirrorslice-msk-iam".to_string(),
    }
}

pub(crate) fn millis(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A client whose librdkafka handle [`prime`] can reach.
pub trait HasClient {
    type Context: ClientContext;
    fn raw_client(&self) -> &Client<Self::Context>;
}

impl<C: rdkafka::consumer::ConsumerContext> HasClient for rdkafka::consumer::BaseConsumer<C> {
    type Context = C;
    fn raw_client(&self) -> &Client<C> {
        rdkafka::consumer::Consumer::client(self)
    }
}

impl<C: rdkafka::producer::ProducerContext> HasClient for rdkafka::producer::BaseProducer<C> {
    type Context = C;
    fn raw_client(&self) -> &Client<C> {
        rdkafka::producer::Producer::client(self)
    }
}

impl<C: rdkafka::producer::ProducerContext + 'static> HasClient
    for rdkafka::producer::ThreadedProducer<C>
{
    type Context = C;
    fn raw_client(&self) -> &Client<C> {
        rdkafka::producer::Producer::client(self)
    }
}

impl<C: ClientContext + 'static> HasClient for rdkafka::producer::FutureProducer<C> {
    type Context = rdkafka::producer::future_producer::FutureProducerContext<C>;
    fn raw_client(&self) -> &Client<Self::Context> {
        rdkafka::producer::Producer::client(self)
    }
}

impl<C: ClientContext> HasClient for rdkafka::admin::AdminClient<C> {
    type Context = C;
    fn raw_client(&self) -> &Client<C> {
        self.inner()
    }
}
