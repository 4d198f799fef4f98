//! Tokens handed to clients directly, at creation and then on a timer, whether or not the
//! client polls.
//!
//! librdkafka asks for a new token with an event on the client's main queue, which only a
//! polling client answers. Most clients of a slice poll rarely or never (admin clients,
//! metadata readers, internal-topic readers and writers between their uses, a consumer blocked
//! in a request), and the broker ends each session when its token expires (KIP-368): the
//! connection then re-authenticates with whatever token the client holds. So every MSK IAM
//! client is registered here when created and handed a fresh token every quarter of the
//! validity by one thread, until its [`Registration`] is dropped, which [`crate::kafka::Managed`]
//! does before the client itself.

use super::settings::IamSettings;
use super::token::Token;
use super::{millis, principal, settings_of, token_for, validity};
use rdkafka::client::Client;
use rdkafka::config::ClientConfig;
use rdkafka::ClientContext;
use rdkafka_sys::types::RDKafka;
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

/// A registered client: handed fresh tokens until this is dropped.
#[derive(Debug)]
pub struct Registration {
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        // Under the lock the refresh thread holds while it hands tokens: once removed, the
        // client is never touched again, so it may be destroyed.
        registry().remove(&self.id);
    }
}

struct Registered {
    native: *mut RDKafka,
    settings: IamSettings,
}

// SAFETY: librdkafka's API is thread-safe, and the pointer is only used while the client is
// registered, that is alive (see `Registration::drop`).
unsafe impl Send for Registered {}

fn registry() -> MutexGuard<'static, HashMap<u64, Registered>> {
    static REGISTRY: OnceLock<Mutex<HashMap<u64, Registered>>> = OnceLock::new();
    REGISTRY
        .get_or_init(Default::default)
        .lock()
        .expect("MSK IAM client registry")
}

/// Hands `client` its first token and registers it for fresh ones; `None` if it is not an MSK
/// IAM client. A failure to make the token is handed over too: librdkafka reports it as the
/// client's authentication error instead of waiting for a token.
pub fn register<C: ClientContext>(
    config: &ClientConfig,
    client: &Client<C>,
) -> Option<Registration> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let settings = settings_of(config)?;
    let native = client.native_ptr();
    // SAFETY: the client is alive: the caller holds it.
    unsafe { hand_token(native, &token_for(&settings), &settings) };
    start_refreshing();
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    registry().insert(id, Registered { native, settings });
    Some(Registration { id })
}

/// The refresh thread, started once.
fn start_refreshing() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let spawned = std::thread::Builder::new()
            .name("msk-iam-refresh".into())
            .spawn(|| loop {
                let period = validity().unwrap_or(super::token::MAX_VALIDITY) / 4;
                std::thread::sleep(period.max(Duration::from_secs(1)));
                refresh_all();
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "no thread to refresh MSK IAM tokens");
        }
    });
}

/// Hands every registered client a fresh token now: one token per cluster's settings, signed
/// before the registry is locked, so a credential fetched meanwhile (STS, instance metadata)
/// never holds up a client being created or destroyed.
pub fn refresh_all() {
    let registered: Vec<IamSettings> = registry().values().map(|c| c.settings.clone()).collect();
    let mut tokens: Vec<(IamSettings, Result<Token, String>)> = Vec::new();
    for settings in registered {
        if !tokens.iter().any(|(s, _)| *s == settings) {
            let token = token_for(&settings);
            tokens.push((settings, token));
        }
    }
    for client in registry().values() {
        // Registered after the signing: handed its own token then.
        let Some((_, token)) = tokens.iter().find(|(s, _)| *s == client.settings) else {
            continue;
        };
        // SAFETY: registered, so alive (the registry lock is held).
        unsafe { hand_token(client.native, token, &client.settings) };
    }
}

/// Sets `token` on the client, or the reason there is none.
///
/// # Safety
/// `native` must be a live librdkafka client.
unsafe fn hand_token(native: *mut RDKafka, token: &Result<Token, String>, settings: &IamSettings) {
    let mut err = [0 as std::os::raw::c_char; 512];
    match token {
        Ok(t) => {
            let value = CString::new(t.value.as_str()).expect("base64 has no NUL");
            let principal = CString::new(principal(settings)).unwrap_or_default();
            // librdkafka copies the strings.
            let code = rdkafka_sys::rd_kafka_oauthbearer_set_token(
                native,
                value.as_ptr(),
                millis(t.expires_at),
                principal.as_ptr(),
                std::ptr::null_mut(),
                0,
                err.as_mut_ptr(),
                err.len(),
            );
            if code != rdkafka_sys::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
                // librdkafka wrote a NUL-terminated message into `err`.
                let why = CStr::from_ptr(err.as_ptr()).to_string_lossy();
                tracing::warn!(?code, reason = %why, "MSK IAM token refused by librdkafka");
            }
        }
        Err(why) => {
            let why = CString::new(why.replace('\0', " ")).expect("NULs replaced");
            rdkafka_sys::rd_kafka_oauthbearer_set_token_failure(native, why.as_ptr());
        }
    }
}
