//! Where a slice keeps its leases and state: the one decision shared by the CLI and Lambda.
//!
//! A slice needs a [`LeaseStore`] (who runs which task, in place of Connect's group membership)
//! and a [`StateStore`] (position hints, last sync times). Two backends exist:
//!
//! * **DynamoDB** — one table holds both ([`DynamoLeaseStore`]). This is what makes overlapping
//!   runs on *different machines* safe: EventBridge Scheduler invokes at least once, so two
//!   Lambda invocations of one flow regularly overlap, and CLI runs on two hosts may too.
//! * **Local** — kernel file locks and JSON files under [`default_state_dir`]. Safe between
//!   processes of one machine only; the zero-setup default of the CLI.
//!
//! The table is chosen by name: the environment variable `MIRRORSLICE_LEASE_TABLE` first (what
//! the SAM template sets on the function), then the top-level key `mirrorslice.lease.table` in
//! `mm2.properties`. The environment wins so one config file can serve a laptop (no table) and
//! a deployment (table from the template) alike. Endpoint, region and credentials come from
//! the standard AWS environment (`AWS_REGION`, `AWS_ENDPOINT_URL_DYNAMODB`,
//! `AWS_ACCESS_KEY_ID`, …) through the SDK's default chain, never from `mm2.properties`.

use crate::config::{ConfigError, MirrorMakerConfig};
use crate::lease::dynamodb::{DynamoLeaseStore, TABLE_ENV};
use crate::lease::local::LocalLeaseStore;
use crate::lease::{owner_id, LeaseError};
use crate::slice::SliceEnv;
use crate::state::{default_state_dir, LocalStateStore};
use std::path::PathBuf;
use std::sync::Arc;

/// Top-level `mm2.properties` key naming the DynamoDB lease table (the environment wins).
pub const LEASE_TABLE_KEY: &str = "mirrorslice.lease.table";

/// Which backend a process uses, and where its name came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseBackend {
    /// File locks and state files under this directory.
    Local { state_dir: PathBuf },
    /// One DynamoDB table; `source` is the variable or key that named it (for messages).
    DynamoDb { table: String, source: &'static str },
}

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Lease(#[from] LeaseError),
}

/// DynamoDB's own rule for table names: 3–255 characters of `[a-zA-Z0-9_.-]`. Checked here so
/// a typo fails with the key's name instead of a `ValidationException` from the first request.
fn valid_table_name(name: &str) -> bool {
    (3..=255).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// The backend for `mm`, given the value of `MIRRORSLICE_LEASE_TABLE` (`env_table`) and the
/// state directory to use when no table is named. Pure, so the precedence is unit-tested.
pub fn choose_backend(
    mm: &MirrorMakerConfig,
    env_table: Option<&str>,
    state_dir: PathBuf,
) -> Result<LeaseBackend, ConfigError> {
    // An empty variable counts as unset: templates often render optional values as "".
    let from_env = env_table.map(str::trim).filter(|t| !t.is_empty());
    let (table, source) = match from_env {
        Some(t) => (t.to_string(), TABLE_ENV),
        None => match mm.raw().get(LEASE_TABLE_KEY).map(str::trim) {
            Some(t) if !t.is_empty() => (t.to_string(), LEASE_TABLE_KEY),
            _ => return Ok(LeaseBackend::Local { state_dir }),
        },
    };
    if !valid_table_name(&table) {
        let err = ConfigError::invalid(
            source,
            &table,
            "expected a DynamoDB table name: 3-255 characters of a-z, A-Z, 0-9, '_', '-', '.'",
        );
        return Err(if source == LEASE_TABLE_KEY {
            err.with_origin(mm.origin(LEASE_TABLE_KEY))
        } else {
            err
        });
    }
    Ok(LeaseBackend::DynamoDb { table, source })
}

/// The backend this process uses for `mm`: reads `MIRRORSLICE_LEASE_TABLE` and the state
/// directory from the environment.
pub fn lease_backend(mm: &MirrorMakerConfig) -> Result<LeaseBackend, ConfigError> {
    let env_table = std::env::var(TABLE_ENV).ok();
    choose_backend(mm, env_table.as_deref(), default_state_dir())
}

/// Build the [`SliceEnv`] for `backend`. The DynamoDB client is created here (AWS config
/// chain, HTTP client), so callers that run many slices should build it once and clone it.
pub async fn slice_env_for(backend: &LeaseBackend) -> Result<SliceEnv, BackendError> {
    let owner = owner_id();
    Ok(match backend {
        LeaseBackend::Local { state_dir } => SliceEnv {
            state: Arc::new(LocalStateStore::new(state_dir)),
            leases: Arc::new(LocalLeaseStore::new(state_dir)),
            owner,
        },
        LeaseBackend::DynamoDb { table, .. } => {
            let store = Arc::new(DynamoLeaseStore::from_env(table).await?);
            tracing::debug!(table = %table, "leases and state in DynamoDB");
            SliceEnv {
                state: store.clone(),
                leases: store,
                owner,
            }
        }
    })
}

/// The [`SliceEnv`] for `mm`: DynamoDB when a lease table is configured, otherwise the local
/// stores under [`default_state_dir`].
pub async fn slice_env(mm: &MirrorMakerConfig) -> Result<SliceEnv, BackendError> {
    slice_env_for(&lease_backend(mm)?).await
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

    fn dir() -> PathBuf {
        PathBuf::from("/state")
    }

    #[test]
    fn no_table_means_local_stores_under_the_state_dir() {
        for env in [None, Some(""), Some("  ")] {
            assert_eq!(
                choose_backend(&mm(&[]), env, dir()).unwrap(),
                LeaseBackend::Local { state_dir: dir() },
                "env {env:?}"
            );
        }
    }

    #[test]
    fn the_config_key_names_the_table_when_the_environment_does_not() {
        let m = mm(&[(LEASE_TABLE_KEY, " mm2-leases ")]);
        assert_eq!(
            choose_backend(&m, None, dir()).unwrap(),
            LeaseBackend::DynamoDb {
                table: "mm2-leases".into(),
                source: LEASE_TABLE_KEY
            }
        );
    }

    #[test]
    fn the_environment_wins_over_the_config_key() {
        let m = mm(&[(LEASE_TABLE_KEY, "from-file")]);
        assert_eq!(
            choose_backend(&m, Some("from-env"), dir()).unwrap(),
            LeaseBackend::DynamoDb {
                table: "from-env".into(),
                source: TABLE_ENV
            }
        );
    }

    #[test]
    fn an_invalid_table_name_is_a_config_error_naming_its_source() {
        let m = mm(&[(LEASE_TABLE_KEY, "no spaces allowed")]);
        let err = choose_backend(&m, None, dir()).unwrap_err().to_string();
        assert!(err.contains(LEASE_TABLE_KEY), "{err}");
        let err = choose_backend(&mm(&[]), Some("ab"), dir())
            .unwrap_err()
            .to_string();
        assert!(err.contains(TABLE_ENV), "{err}");
    }

    #[tokio::test]
    async fn local_backend_builds_without_touching_aws() {
        let tmp = tempfile::tempdir().unwrap();
        let env = slice_env_for(&LeaseBackend::Local {
            state_dir: tmp.path().to_path_buf(),
        })
        .await
        .unwrap();
        assert!(!env.owner.is_empty());
        // The state store writes under the chosen directory.
        env.state.put("k", &serde_json::json!(1)).unwrap();
        assert!(tmp.path().join("state").exists());
    }
}
