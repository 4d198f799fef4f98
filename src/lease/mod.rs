//! Task leases: what Connect's group membership does for MM2, done with conditional writes.
//!
//! MM2 relies on a Connect group so that one worker runs each task. A slice has no group, so
//! every task — and the connector-level work — is guarded by a lease keyed
//! `<source>-><target>/<connector>/<task>` (or `.../connector`). Rules every backend keeps:
//!
//! * acquire only when the lease is free or expired;
//! * renew and release only with the same owner and fencing token;
//! * the fencing token only ever increases, so a stale holder can be told from the new one;
//! * no lease, no copying — a task that cannot confirm its lease stops before committing.
//!
//! The CLI uses [`local::LocalLeaseStore`] (kernel file locks under the state directory); the
//! Lambda function uses DynamoDB.

pub mod dynamodb;
pub mod local;

use async_trait::async_trait;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Shortest `mirrorslice.lease.duration`: renewals go out every third of it, and each must
/// have time to reach the table and come back before the lease stops being trusted.
pub const MIN_LEASE_DURATION: Duration = Duration::from_secs(1);

/// How long a lease is granted and how much of it is trusted (`mirrorslice.lease.duration`,
/// `mirrorslice.lease.skew.allowance`).
///
/// A holder trusts its lease until `duration − skew_allowance` after the acquire or renewal
/// request was sent: the allowance covers the clock skew between this process and the table
/// (and the next owner), so the old holder stops before anyone else may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseTiming {
    pub duration: Duration,
    pub skew_allowance: Duration,
}

impl Default for LeaseTiming {
    fn default() -> Self {
        LeaseTiming {
            duration: Duration::from_secs(30),
            skew_allowance: Duration::from_secs(5),
        }
    }
}

impl LeaseTiming {
    /// How long after a request was sent its lease is trusted.
    pub fn trusted_for(&self) -> Duration {
        self.duration.saturating_sub(self.skew_allowance)
    }

    /// How often a held lease is renewed.
    pub fn renew_every(&self) -> Duration {
        (self.duration / 3).max(Duration::from_millis(50))
    }

    /// Why these timings cannot protect a lease, if they cannot: the lease must be trusted for
    /// longer than a renewal period, or one slow renewal would end it.
    pub fn check(&self) -> Result<(), String> {
        if self.duration < MIN_LEASE_DURATION {
            return Err(format!("a lease must last at least {MIN_LEASE_DURATION:?}"));
        }
        if self.skew_allowance * 2 > self.duration {
            return Err(format!(
                "the skew allowance must be at most half the lease duration ({:?})",
                self.duration
            ));
        }
        Ok(())
    }
}

/// One lease as a backend knows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LeaseInfo {
    pub key: String,
    pub owner: String,
    pub fencing_token: u64,
    /// Wall-clock expiry, epoch milliseconds.
    pub expires_at_ms: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error("lease {key}: {message}")]
    Backend { key: String, message: String },
    #[error("lease {key}: {source}")]
    Io {
        key: String,
        #[source]
        source: std::io::Error,
    },
}

#[async_trait]
pub trait LeaseStore: Send + Sync {
    /// Take `key` for `ttl` if it is free or expired; `None` when someone else holds it.
    async fn try_acquire(
        &self,
        key: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<LeaseInfo>, LeaseError>;
    /// Extend a held lease; `None` when it was lost (owner or fencing token changed).
    async fn renew(
        &self,
        lease: &LeaseInfo,
        ttl: Duration,
    ) -> Result<Option<LeaseInfo>, LeaseError>;
    /// Give a held lease back; a lease already lost is not an error.
    async fn release(&self, lease: &LeaseInfo) -> Result<(), LeaseError>;
    /// The current holder, for diagnostics.
    async fn describe(&self, key: &str) -> Result<Option<LeaseInfo>, LeaseError>;
    /// The holder of `key` if its lease is live: `Some` exactly when [`try_acquire`] would
    /// refuse the lease now.
    ///
    /// [`try_acquire`]: LeaseStore::try_acquire
    async fn live_holder(&self, key: &str) -> Result<Option<LeaseInfo>, LeaseError>;
}

/// A lease this process holds, renewed in the background while work runs.
///
/// [`HeldLease::still_owner`] is cheap and synchronous, so the copy loop can ask it before every
/// commit: it is true only while the last successful renewal is comfortably before expiry.
pub struct HeldLease {
    info: Arc<Mutex<LeaseInfo>>,
    ownership: Ownership,
    renewer: Option<tokio::task::JoinHandle<()>>,
    store: Arc<dyn LeaseStore>,
}

impl HeldLease {
    /// Take `key` for `timing.duration` if it is free or expired, and start renewing it; `None`
    /// when someone else holds it. The lease is trusted for [`LeaseTiming::trusted_for`] after
    /// the acquire request was *sent* (see [`HeldLease::start`]).
    pub async fn acquire(
        store: Arc<dyn LeaseStore>,
        key: &str,
        owner: &str,
        timing: LeaseTiming,
    ) -> Result<Option<Self>, LeaseError> {
        let requested_at = Instant::now();
        let info = store.try_acquire(key, owner, timing.duration).await?;
        Ok(info.map(|info| HeldLease::start(store, info, timing, requested_at)))
    }

    /// Start renewing `info` every [`LeaseTiming::renew_every`]. The lease is trusted for
    /// [`LeaseTiming::trusted_for`] after the last successful acquire or renewal *request was
    /// sent* (`requested_at` for the acquire): the store computed the expiry from its clock at
    /// or after that instant, so a slow answer (a stalled table, a frozen process) only shortens
    /// what we trust, never lengthens it.
    pub fn start(
        store: Arc<dyn LeaseStore>,
        info: LeaseInfo,
        timing: LeaseTiming,
        requested_at: Instant,
    ) -> Self {
        let (ttl, valid) = (timing.duration, timing.trusted_for());
        let info = Arc::new(Mutex::new(info));
        let ownership = Ownership {
            valid_until: Arc::new(Mutex::new(requested_at + valid)),
            lost: Arc::new(AtomicBool::new(false)),
        };
        let renewer = {
            let (store, info) = (store.clone(), info.clone());
            let Ownership { valid_until, lost } = ownership.clone();
            tokio::spawn(async move {
                let period = timing.renew_every();
                loop {
                    tokio::time::sleep(period).await;
                    let current = info.lock().expect("lease info").clone();
                    let started = Instant::now();
                    match store.renew(&current, ttl).await {
                        Ok(Some(renewed)) => {
                            *info.lock().expect("lease info") = renewed;
                            *valid_until.lock().expect("lease validity") = started + valid;
                        }
                        Ok(None) => {
                            tracing::error!(lease = %current.key, "lease lost to another owner");
                            lost.store(true, Ordering::SeqCst);
                            return;
                        }
                        Err(e) => {
                            // Keep trying until the lease would expire; still_owner() turns
                            // false on its own when renewals keep failing.
                            tracing::warn!(lease = %current.key, error = %e, "lease renewal failed");
                        }
                    }
                }
            })
        };
        HeldLease {
            info,
            ownership,
            renewer: Some(renewer),
            store,
        }
    }

    pub fn info(&self) -> LeaseInfo {
        self.info.lock().expect("lease info").clone()
    }

    /// True while this process may still act as the lease's owner.
    pub fn still_owner(&self) -> bool {
        self.ownership.still_owner()
    }

    /// A cheap, clonable view of [`still_owner`](Self::still_owner) for blocking code.
    pub fn ownership(&self) -> Ownership {
        self.ownership.clone()
    }

    /// Stop renewing and give the lease back.
    pub async fn release(mut self) -> Result<(), LeaseError> {
        if let Some(r) = self.renewer.take() {
            r.abort();
        }
        if self.ownership.lost.load(Ordering::SeqCst) {
            return Ok(());
        }
        let info = self.info();
        self.store.release(&info).await
    }
}

impl Drop for HeldLease {
    fn drop(&mut self) {
        if let Some(r) = self.renewer.take() {
            r.abort();
        }
    }
}

/// See [`HeldLease::ownership`].
#[derive(Clone)]
pub struct Ownership {
    valid_until: Arc<Mutex<Instant>>,
    lost: Arc<AtomicBool>,
}

impl Ownership {
    pub fn still_owner(&self) -> bool {
        self.valid_until().is_some_and(|t| Instant::now() < t)
    }

    /// Until when the lease may be trusted (it moves on with every renewal); `None` once it
    /// was lost to another owner.
    pub fn valid_until(&self) -> Option<Instant> {
        (!self.lost.load(Ordering::SeqCst))
            .then(|| *self.valid_until.lock().expect("lease validity"))
    }
}

/// Lease keys, one format for every backend.
pub fn task_key(flow: &str, connector: &str, task: u32) -> String {
    format!("{flow}/{connector}/{task}")
}

pub fn connector_key(flow: &str, connector: &str) -> String {
    format!("{flow}/{connector}/connector")
}

/// A lease owner id that is unique per process: host, pid and start time.
pub fn owner_id() -> String {
    let host = std::env::var("AWS_LAMBDA_LOG_STREAM_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "local".into());
    format!(
        "{host}/{}/{}",
        std::process::id(),
        chrono::Utc::now().timestamp_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store that answers slowly, as a stalled table or a process frozen mid-request does.
    struct SlowStore {
        delay: Duration,
    }

    #[async_trait]
    impl LeaseStore for SlowStore {
        async fn try_acquire(
            &self,
            key: &str,
            owner: &str,
            ttl: Duration,
        ) -> Result<Option<LeaseInfo>, LeaseError> {
            tokio::time::sleep(self.delay).await;
            Ok(Some(LeaseInfo {
                key: key.into(),
                owner: owner.into(),
                fencing_token: 1,
                expires_at_ms: ttl.as_millis() as i64,
            }))
        }
        async fn renew(&self, _: &LeaseInfo, _: Duration) -> Result<Option<LeaseInfo>, LeaseError> {
            std::future::pending().await
        }
        async fn release(&self, _: &LeaseInfo) -> Result<(), LeaseError> {
            Ok(())
        }
        async fn describe(&self, _: &str) -> Result<Option<LeaseInfo>, LeaseError> {
            Ok(None)
        }
        async fn live_holder(&self, _: &str) -> Result<Option<LeaseInfo>, LeaseError> {
            Ok(None)
        }
    }

    #[tokio::test]
    async fn validity_counts_from_when_the_acquire_was_sent() {
        let store = Arc::new(SlowStore {
            delay: Duration::from_millis(300),
        });
        let timing = LeaseTiming {
            duration: Duration::from_millis(1000),
            skew_allowance: Duration::from_millis(500),
        };
        let sent = Instant::now();
        let held = HeldLease::acquire(store, "k", "me", timing)
            .await
            .unwrap()
            .unwrap();
        let ownership = held.ownership();
        assert!(held.still_owner(), "held right after the acquire returned");
        // Valid until sent + 500 ms, i.e. ~200 ms after the slow answer; counted from the
        // answer it would last until ~800 ms.
        let deadline = sent + timing.trusted_for();
        tokio::time::sleep_until((deadline + Duration::from_millis(20)).into()).await;
        assert!(!held.still_owner(), "trusted past sent + ttl - safety");
        assert!(!ownership.still_owner(), "the blocking view agrees");
    }
}
