//! MSK IAM authentication: Java's `AWS_MSK_IAM` and `IAMOAuthBearerLoginCallbackHandler`
//! settings ([`settings`]), served by librdkafka's OAUTHBEARER mechanism with MSK's IAM token
//! ([`token`]) signed by the caller's AWS credential ([`credentials`]).
//!
//! How a client gets its tokens:
//! * librdkafka asks for one when the client is created and again at 80 % of the token's
//!   lifetime, as an event on the client's main queue. Clients that poll that queue (consumers,
//!   producers) answer it in their context's `generate_oauth_token` ([`generate`]).
//! * Clients that never poll it (admin clients, metadata-only consumers, the probe) would wait
//!   forever, and a polled client may make a blocking request before its first poll: so every
//!   client is handed a token as soon as it exists ([`prime`]), and a shared admin client
//!   again each time it is reused.
//! * Tokens are cached per cluster settings and credential for the process: any token for the
//!   same credential and region is as good as another, so a slice signs about one per cluster,
//!   however many clients it opens (MSK does not tie a token to a connection).

pub mod credentials;
pub mod settings;
pub mod token;

use rdkafka::client::{Client, OAuthToken};
use rdkafka::config::ClientConfig;
use rdkafka::ClientContext;
use settings::IamSettings;
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What tokens say in their `User-Agent` parameter (MSK logs it).
pub const USER_AGENT: &str = concat!("mirrorslice/", env!("CARGO_PKG_VERSION"));
/// Overrides the token validity (`X-Amz-Expires`, seconds, 1..=900). For tests that watch
/// tokens being refreshed; MSK's own signers always use 900.
pub const VALIDITY_ENV: &str = "MIRRORSLICE_MSK_IAM_TOKEN_SECONDS";

static SIGNED: AtomicU64 = AtomicU64::new(0);

/// How many tokens this process has signed (cache hits not counted).
pub fn tokens_signed() -> u64 {
    SIGNED.load(Ordering::Relaxed)
}

/// The MSK IAM settings of a librdkafka config made by [`crate::kafka::client_config`].
pub fn settings_of(config: &ClientConfig) -> Option<IamSettings> {
    IamSettings::decode(config.get("sasl.oauthbearer.config")?)
}

/// A token for `settings`, from the cache while it has more than half its validity left.
pub fn token_for(settings: &IamSettings) -> Result<token::Token, String> {
    let key = settings.encode();
    let validity = validity()?;
    let now = SystemTime::now();
    let cache = tokens();
    if let Some(t) = cache.lock().expect("token cache").get(&key) {
        if t.expires_at
            .duration_since(now)
            .is_ok_and(|left| left > validity / 2)
        {
            return Ok(t.clone());
        }
    }
    let credential = credentials::credentials(&settings.credential, &settings.region)?;
    let mut t = token::token(&credential, &settings.region, now, validity, USER_AGENT)?;
    // A token signed with a credential that expires sooner dies with it: librdkafka must
    // refresh before that.
    if let Some(expiry) = credential.expiry() {
        t.expires_at = t.expires_at.min(expiry);
    }
    SIGNED.fetch_add(1, Ordering::Relaxed);
    tracing::debug!(
        region = %settings.region,
        access_key_id = credential.access_key_id(),
        valid_for = ?t.expires_at.duration_since(now).unwrap_or_default(),
        "MSK IAM token signed"
    );
    cache.lock().expect("token cache").insert(key, t.clone());
    Ok(t)
}

fn tokens() -> &'static Mutex<HashMap<String, token::Token>> {
    static TOKENS: OnceLock<Mutex<HashMap<String, token::Token>>> = OnceLock::new();
    TOKENS.get_or_init(Default::default)
}

/// Forget every cached token and credential (tests that change the environment).
pub fn forget_cached() {
    tokens().lock().expect("token cache").clear();
    credentials::forget_all();
}

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

/// Hands a new client its first token (see the module documentation); nothing for a client
/// that is not MSK IAM. A failure is handed over too: librdkafka then reports it as the
/// client's authentication error instead of waiting for a token.
pub fn prime<C: ClientContext>(config: &ClientConfig, client: &Client<C>) {
    let Some(settings) = settings_of(config) else {
        return;
    };
    let native = client.native_ptr();
    let mut err = [0 as std::os::raw::c_char; 512];
    match token_for(&settings) {
        Ok(t) => {
            let value = CString::new(t.value).expect("base64 has no NUL");
            let principal = CString::new(principal(&settings)).unwrap_or_default();
            // SAFETY: the client is alive for this call; librdkafka copies the strings.
            let code = unsafe {
                rdkafka_sys::rd_kafka_oauthbearer_set_token(
                    native,
                    value.as_ptr(),
                    millis(t.expires_at),
                    principal.as_ptr(),
                    std::ptr::null_mut(),
                    0,
                    err.as_mut_ptr(),
                    err.len(),
                )
            };
            if code != rdkafka_sys::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
                // SAFETY: librdkafka wrote a NUL-terminated message into `err`.
                let why = unsafe { std::ffi::CStr::from_ptr(err.as_ptr()) };
                tracing::warn!(?code, reason = %why.to_string_lossy(), "MSK IAM token refused by librdkafka");
            }
        }
        Err(why) => {
            let why = CString::new(why.replace('\0', " ")).expect("NULs replaced");
            // SAFETY: as above.
            unsafe { rdkafka_sys::rd_kafka_oauthbearer_set_token_failure(native, why.as_ptr()) };
        }
    }
}

/// Keeps handing `client` fresh tokens for as long as it lives, for a long-lived client that
/// never polls for them (a shared admin client: its connections re-authenticate when the
/// broker's session ends, with whatever token it holds). Nothing for a client that is not MSK
/// IAM. One thread for all of them, every quarter of the token validity: the tokens it hands
/// over have at least half their validity left.
pub fn keep_fresh<T>(config: &ClientConfig, client: &std::sync::Arc<T>)
where
    T: HasClient + Send + Sync + 'static,
{
    type Refresh = Box<dyn Fn() -> bool + Send>;
    static KEPT: OnceLock<Mutex<Vec<Refresh>>> = OnceLock::new();
    if settings_of(config).is_none() {
        return;
    }
    let (weak, config) = (std::sync::Arc::downgrade(client), config.clone());
    let refresh: Refresh = Box::new(move || match weak.upgrade() {
        Some(c) => {
            prime(&config, c.raw_client());
            true
        }
        None => false,
    });
    let mut started = false;
    let kept = KEPT.get_or_init(|| {
        started = true;
        Mutex::new(Vec::new())
    });
    kept.lock().expect("kept clients").push(refresh);
    if started {
        let spawned = std::thread::Builder::new()
            .name("msk-iam-refresh".into())
            .spawn(move || loop {
                let period = validity().unwrap_or(token::MAX_VALIDITY) / 4;
                std::thread::sleep(period.max(Duration::from_secs(1)));
                kept.lock()
                    .expect("kept clients")
                    .retain(|refresh| refresh());
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "no thread to refresh MSK IAM tokens of admin clients");
        }
    }
}

/// The token's validity: 900 s, or [`VALIDITY_ENV`].
fn validity() -> Result<Duration, String> {
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
fn principal(settings: &IamSettings) -> String {
    match &settings.credential.role_arn {
        Some(role) => role.clone(),
        None => "mirrorslice-msk-iam".to_string(),
    }
}

fn millis(t: SystemTime) -> i64 {
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
