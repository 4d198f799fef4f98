//! Settings of our own: how a slice runs. MM2 has no such keys.
//!
//! They live in the same `mm2.properties`, under the `mirrorslice.` prefix so they can never
//! collide with a Kafka or MM2 key. A flow-scoped `A->B.mirrorslice.x` wins over a top-level
//! `mirrorslice.x`. They are read here, straight from the raw properties, because MM2's
//! connector config (§2.5) drops unknown top-level keys.
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `mirrorslice.slice.max.duration` | `5m` | longest a slice runs (`--max-duration` overrides) |
//! | `mirrorslice.on.gap` | `fail` | `fail` or `skip` when source records were lost before replication |
//! | `mirrorslice.commit.margin` | `2s` | time kept free before the deadline for flush, commit, status, lease release |
//! | `mirrorslice.silence.check.after` | `3s` | a partition silent this long is checked against the log end |
//! | `mirrorslice.lease.duration` | `30s` | how long a lease is granted per acquire or renewal |
//! | `mirrorslice.lease.skew.allowance` | `5s` | how much sooner than its expiry a lease stops being trusted |
//! | `mirrorslice.lambda.memory.mb` | `AWS_LAMBDA_FUNCTION_MEMORY_SIZE`, else `1024` | memory size used for the cost estimate |
//! | `mirrorslice.lambda.price.per.gb.second` | `0.0000133334` | USD per GB-second (arm64, us-east-1) |
//!
//! One worker key is read here too, because its default differs from Java's: a slice commits
//! its position every `offset.flush.interval.ms` (see [`DEFAULT_OFFSET_FLUSH_INTERVAL`]).

use super::{ConfigError, MirrorMakerConfig, Props, SourceAndTarget};
use crate::connectors::source::task::GapPolicy;
use crate::lease::{LeaseTiming, MIN_LEASE_DURATION};
use std::time::Duration;

pub const MAX_DURATION: &str = "mirrorslice.slice.max.duration";
pub const ON_GAP: &str = "mirrorslice.on.gap";
pub const COMMIT_MARGIN: &str = "mirrorslice.commit.margin";
pub const SILENCE_CHECK_AFTER: &str = "mirrorslice.silence.check.after";
pub const LEASE_DURATION: &str = "mirrorslice.lease.duration";
pub const LEASE_SKEW_ALLOWANCE: &str = "mirrorslice.lease.skew.allowance";
pub const LAMBDA_MEMORY_MB: &str = "mirrorslice.lambda.memory.mb";
pub const LAMBDA_PRICE: &str = "mirrorslice.lambda.price.per.gb.second";

/// Published AWS Lambda arm64 price per GB-second (first tier, us-east-1).
/// The Connect worker key for the position-commit cadence, set like any worker key: on the
/// target cluster (`B.offset.flush.interval.ms`).
pub const OFFSET_FLUSH_INTERVAL: &str = "offset.flush.interval.ms";
/// How often a slice commits its position when `offset.flush.interval.ms` is not set. Java's
/// default is 60 s: an always-on worker rarely dies, and then re-copies up to a minute. A slice
/// killed mid-copy (OOM, a crashed sandbox) re-copies everything since its last commit, and
/// such kills are what a slice must shrug off, so it commits every second, and sooner once a
/// task copied 1 MiB since its last commit (`COMMIT_AFTER_BYTES` in the source task). A commit
/// is written while the copy goes on: one small record per partition that moved.
pub const DEFAULT_OFFSET_FLUSH_INTERVAL: Duration = Duration::from_secs(1);

pub const ARM64_PRICE_PER_GB_SECOND: f64 = 0.0000133334;

#[derive(Debug, Clone, PartialEq)]
pub struct SliceSettings {
    pub max_duration: Duration,
    pub on_gap: GapPolicy,
    pub commit_margin: Duration,
    pub silence_check_after: Duration,
    pub lease: LeaseTiming,
    /// How often a task commits its position (`offset.flush.interval.ms`).
    pub offset_flush_interval: Duration,
    pub lambda_memory_mb: u32,
    pub price_per_gb_second: f64,
}

impl Default for SliceSettings {
    fn default() -> Self {
        SliceSettings {
            max_duration: Duration::from_secs(300),
            on_gap: GapPolicy::Fail,
            commit_margin: Duration::from_secs(2),
            silence_check_after: Duration::from_secs(3),
            lease: LeaseTiming::default(),
            offset_flush_interval: DEFAULT_OFFSET_FLUSH_INTERVAL,
            lambda_memory_mb: 1024,
            price_per_gb_second: ARM64_PRICE_PER_GB_SECOND,
        }
    }
}

/// The position-commit cadence of a worker config: `offset.flush.interval.ms` in milliseconds
/// (at least 1), else [`DEFAULT_OFFSET_FLUSH_INTERVAL`]. A bad value comes back with the reason.
pub fn offset_flush_interval(worker: &Props) -> Result<Duration, (String, String)> {
    let Some(v) = worker.get(OFFSET_FLUSH_INTERVAL) else {
        return Ok(DEFAULT_OFFSET_FLUSH_INTERVAL);
    };
    match v.trim().parse::<u64>() {
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err((
            v.clone(),
            "expected a positive number of milliseconds".into(),
        )),
    }
}

impl SliceSettings {
    /// The settings of one pair: flow scope first, then top level, then defaults.
    pub fn for_pair(mm: &MirrorMakerConfig, pair: &SourceAndTarget) -> Result<Self, ConfigError> {
        let lookup = |key: &str| -> Option<(String, String)> {
            let scoped = format!("{pair}.{key}");
            mm.raw()
                .get(&scoped)
                .map(|v| (scoped.clone(), v.to_string()))
                .or_else(|| mm.raw().get(key).map(|v| (key.to_string(), v.to_string())))
        };
        let fail = |key: &str, value: &str, reason: &str| {
            ConfigError::invalid(key, value, reason).with_origin(mm.origin(key))
        };
        let duration = |key: &str, default: Duration| -> Result<Duration, ConfigError> {
            match lookup(key) {
                None => Ok(default),
                Some((k, v)) => humantime::parse_duration(v.trim())
                    .map_err(|e| fail(&k, &v, &format!("expected a duration like 30s or 5m: {e}"))),
            }
        };

        let mut s = SliceSettings {
            // On Lambda the cost estimate uses the function's real memory size by default.
            lambda_memory_mb: std::env::var("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(1024),
            max_duration: duration(MAX_DURATION, Duration::from_secs(300))?,
            commit_margin: duration(COMMIT_MARGIN, Duration::from_secs(2))?,
            silence_check_after: duration(SILENCE_CHECK_AFTER, Duration::from_secs(3))?,
            lease: LeaseTiming {
                duration: duration(LEASE_DURATION, LeaseTiming::default().duration)?,
                skew_allowance: duration(
                    LEASE_SKEW_ALLOWANCE,
                    LeaseTiming::default().skew_allowance,
                )?,
            },
            offset_flush_interval: offset_flush_interval(&mm.worker_config(pair)?).map_err(
                |(v, reason)| {
                    // Name the key as written: on the target cluster, or at top level.
                    let scoped = format!("{}.{OFFSET_FLUSH_INTERVAL}", pair.target);
                    let key = if mm.raw().get(&scoped).is_some() {
                        scoped.as_str()
                    } else {
                        OFFSET_FLUSH_INTERVAL
                    };
                    fail(key, &v, &reason)
                },
            )?,
            ..Default::default()
        };
        if let Err(reason) = s.lease.check() {
            // Name a key the user set: the defaults are valid together, so one of them is set.
            let skew =
                lookup(LEASE_SKEW_ALLOWANCE).filter(|_| s.lease.duration >= MIN_LEASE_DURATION);
            let (k, v) = skew
                .or_else(|| lookup(LEASE_DURATION))
                .expect("default lease timings are valid");
            return Err(fail(&k, &v, &reason));
        }
        if let Some((k, v)) = lookup(ON_GAP) {
            s.on_gap = match v.trim().to_ascii_lowercase().as_str() {
                "fail" => GapPolicy::Fail,
                "skip" => GapPolicy::Skip,
                _ => return Err(fail(&k, &v, "expected fail or skip")),
            };
        }
        if let Some((k, v)) = lookup(LAMBDA_MEMORY_MB) {
            s.lambda_memory_mb = v
                .trim()
                .parse()
                .ok()
                .filter(|m| (128..=10240).contains(m))
                .ok_or_else(|| fail(&k, &v, "expected a Lambda memory size in MB (128-10240)"))?;
        }
        if let Some((k, v)) = lookup(LAMBDA_PRICE) {
            s.price_per_gb_second = v
                .trim()
                .parse()
                .ok()
                .filter(|p: &f64| p.is_finite() && *p >= 0.0)
                .ok_or_else(|| fail(&k, &v, "expected a non-negative price in USD"))?;
        }
        Ok(s)
    }

    /// Estimated Lambda cost of running `seconds` at the configured memory size.
    pub fn estimated_cost_usd(&self, seconds: f64) -> (f64, f64) {
        let gb_seconds = seconds * self.lambda_memory_mb as f64 / 1024.0;
        (gb_seconds, gb_seconds * self.price_per_gb_second)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Properties;

    fn mm(pairs: &[(&str, &str)]) -> MirrorMakerConfig {
        let mut all = vec![("clusters", "A, B"), ("A->B.enabled", "true")];
        all.extend_from_slice(pairs);
        MirrorMakerConfig::new(Properties::from_pairs(all.iter().copied())).unwrap()
    }

    fn ab() -> SourceAndTarget {
        "A->B".parse().unwrap()
    }

    #[test]
    fn defaults() {
        let s = SliceSettings::for_pair(&mm(&[]), &ab()).unwrap();
        assert_eq!(s, SliceSettings::default());
    }

    #[test]
    fn flow_scope_wins_over_top_level() {
        let m = mm(&[
            ("mirrorslice.slice.max.duration", "10m"),
            ("A->B.mirrorslice.slice.max.duration", "45s"),
            ("mirrorslice.on.gap", "SKIP"),
            ("mirrorslice.lambda.memory.mb", "2048"),
        ]);
        let s = SliceSettings::for_pair(&m, &ab()).unwrap();
        assert_eq!(s.max_duration, Duration::from_secs(45));
        assert_eq!(s.on_gap, GapPolicy::Skip);
        assert_eq!(s.lambda_memory_mb, 2048);
        let other = SliceSettings::for_pair(&m, &"B->A".parse().unwrap()).unwrap();
        assert_eq!(other.max_duration, Duration::from_secs(600));
    }

    #[test]
    fn bad_values_name_the_key() {
        for (key, value) in [
            ("mirrorslice.slice.max.duration", "soon"),
            ("A->B.mirrorslice.on.gap", "ignore"),
            ("mirrorslice.lambda.memory.mb", "64"),
            ("mirrorslice.lambda.price.per.gb.second", "-1"),
            ("mirrorslice.lease.duration", "500ms"),
            ("A->B.mirrorslice.lease.skew.allowance", "16s"),
            // Too short for the default 5 s allowance: the key set is the one named.
            ("mirrorslice.lease.duration", "6s"),
            ("B.offset.flush.interval.ms", "1s"),
            ("B.offset.flush.interval.ms", "0"),
        ] {
            let err = SliceSettings::for_pair(&mm(&[(key, value)]), &ab()).unwrap_err();
            assert!(err.to_string().contains(key), "{err}");
        }
    }

    #[test]
    fn lease_timing_is_configurable() {
        let m = mm(&[
            ("mirrorslice.lease.duration", "6s"),
            ("mirrorslice.lease.skew.allowance", "1s"),
        ]);
        let s = SliceSettings::for_pair(&m, &ab()).unwrap();
        assert_eq!(s.lease.duration, Duration::from_secs(6));
        assert_eq!(s.lease.trusted_for(), Duration::from_secs(5));
    }

    #[test]
    fn commit_cadence_is_a_second_unless_the_worker_key_says_otherwise() {
        let default = SliceSettings::for_pair(&mm(&[]), &ab()).unwrap();
        assert_eq!(default.offset_flush_interval, Duration::from_secs(1));
        // A worker key, set as MM2 sets them: on the target cluster.
        let s = SliceSettings::for_pair(&mm(&[("B.offset.flush.interval.ms", "60000")]), &ab());
        assert_eq!(s.unwrap().offset_flush_interval, Duration::from_secs(60));
        // Not on the source cluster, and (as in MM2) not at top level: no worker reads those.
        for key in ["A.offset.flush.interval.ms", "offset.flush.interval.ms"] {
            let s = SliceSettings::for_pair(&mm(&[(key, "60000")]), &ab()).unwrap();
            assert_eq!(s.offset_flush_interval, Duration::from_secs(1), "{key}");
        }
    }

    #[test]
    fn cost_estimate() {
        let s = SliceSettings {
            lambda_memory_mb: 2048,
            ..Default::default()
        };
        let (gbs, usd) = s.estimated_cost_usd(10.0);
        assert!((gbs - 20.0).abs() < 1e-9);
        assert!((usd - 20.0 * ARM64_PRICE_PER_GB_SECOND).abs() < 1e-12);
    }
}
