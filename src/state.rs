//! Durable per-flow state that does not belong in Kafka.
//!
//! A slice is short-lived, but some facts must outlive it: when topic configs and ACLs were last
//! synced (so `sync.topic.configs.interval.seconds` is honoured across slices), and *position
//! hints* that let the next slice read only the tail of the Connect offsets topic instead of its
//! whole history. None of this is needed for correctness — a lost hint means a full read, a
//! lost timestamp means an early sync — so it lives beside the lease, not in the Connect topics
//! Java MM2 reads.
//!
//! The CLI keeps it in files under [`default_state_dir`]; on Lambda the DynamoDB lease table
//! implements the same trait.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("state {key}: {source}")]
    Io {
        key: String,
        #[source]
        source: std::io::Error,
    },
    #[error("state {key}: stored value is not valid JSON: {source}")]
    Corrupt {
        key: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("state {key}: {message}")]
    Backend { key: String, message: String },
    #[error(
        "state {key}: not written: a newer lease holder wrote it (our fencing token {token} is stale)"
    )]
    Fenced { key: String, token: u64 },
}

/// Small JSON documents by key, e.g. `A->B/MirrorSourceConnector/0/offsets-hint`.
pub trait StateStore: Send + Sync {
    fn get(&self, key: &str) -> Result<Option<Value>, StateError>;
    fn put(&self, key: &str, value: &Value) -> Result<(), StateError>;
    /// Store `value` for the holder of a lease with `fencing_token`, unless a holder with a
    /// newer token wrote `key` already ([`StateError::Fenced`]): a task that lost its lease
    /// while frozen cannot overwrite its successor's position. The default is a plain write,
    /// right for stores whose leases cannot pass on while their holder lives (the CLI's kernel
    /// file locks stay held by a frozen process); stores with expiring leases override it.
    fn put_fenced(&self, key: &str, value: &Value, fencing_token: u64) -> Result<(), StateError> {
        let _ = fencing_token;
        self.put(key, value)
    }
    /// This store with every call given up at `deadline` (a [`StateError::Backend`] then), for
    /// stores whose calls can stall (a network service); `None` for stores that answer at once.
    /// A slice reads and writes its state through such a view, so a stalled store cannot keep
    /// it past its deadline.
    fn bounded_by(&self, deadline: Instant) -> Option<Arc<dyn StateStore>> {
        let _ = deadline;
        None
    }
    /// Several keys at once. Stores with a per-request cost (DynamoDB) answer in one request.
    fn get_many(&self, keys: &[String]) -> Result<BTreeMap<String, Option<Value>>, StateError> {
        keys.iter().map(|k| Ok((k.clone(), self.get(k)?))).collect()
    }
}

/// The state of one slice, read in one request at its start.
///
/// A slice reads a handful of small documents (sync timestamps, the task-config hash, offsets
/// hints, checkpoint timestamps) one after another on its critical path; against DynamoDB each
/// is a round trip. This wrapper fetches them all up front and serves reads from that copy,
/// writing through. Reading a value as of the slice's start instead of a moment later is safe
/// for every key: a stale sync timestamp or config hash only repeats a sync or a config write,
/// and an older offsets hint is still a consistent (position, values) pair that makes the load
/// read a little more of the offsets topic. Keys not prefetched are read from the store.
pub struct SliceState {
    inner: Arc<dyn StateStore>,
    /// Shared with the views [`StateStore::bounded_by`] returns.
    cache: Arc<Mutex<BTreeMap<String, Option<Value>>>>,
}

impl SliceState {
    /// Prefetch `keys`; if that fails, every read goes to the store (and may fail there).
    pub fn prefetch(inner: Arc<dyn StateStore>, keys: &[String]) -> Self {
        let cache = match inner.get_many(keys) {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(error = %e, "state prefetch failed; reading keys one by one");
                BTreeMap::new()
            }
        };
        SliceState {
            inner,
            cache: Arc::new(Mutex::new(cache)),
        }
    }
}

impl StateStore for SliceState {
    fn bounded_by(&self, deadline: Instant) -> Option<Arc<dyn StateStore>> {
        let inner = self.inner.bounded_by(deadline)?;
        Some(Arc::new(SliceState {
            inner,
            cache: self.cache.clone(),
        }))
    }

    fn get(&self, key: &str) -> Result<Option<Value>, StateError> {
        if let Some(v) = self.cache.lock().expect("state cache poisoned").get(key) {
            return Ok(v.clone());
        }
        self.inner.get(key)
    }

    fn put(&self, key: &str, value: &Value) -> Result<(), StateError> {
        self.inner.put(key, value)?;
        self.cache_written(key, value);
        Ok(())
    }

    fn put_fenced(&self, key: &str, value: &Value, fencing_token: u64) -> Result<(), StateError> {
        self.inner.put_fenced(key, value, fencing_token)?;
        self.cache_written(key, value);
        Ok(())
    }
}

impl SliceState {
    fn cache_written(&self, key: &str, value: &Value) {
        self.cache
            .lock()
            .expect("state cache poisoned")
            .insert(key.to_string(), Some(value.clone()));
    }
}

/// Environment variable naming the state directory of the CLI.
pub const STATE_DIR_ENV: &str = "MIRRORSLICE_STATE_DIR";

/// `$MIRRORSLICE_STATE_DIR`, else `$XDG_STATE_HOME/mirrorslice`, else
/// `$HOME/.local/state/mirrorslice`, else `/tmp/mirrorslice`.
pub fn default_state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(STATE_DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("mirrorslice");
    }
    if let Some(home) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(home).join(".local/state/mirrorslice");
    }
    PathBuf::from("/tmp/mirrorslice")
}

/// One file per key under a directory; writes are atomic (temp file, fsync, rename).
#[derive(Debug, Clone)]
pub struct LocalStateStore {
    dir: PathBuf,
}

impl LocalStateStore {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        LocalStateStore { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_for(&self, key: &str) -> PathBuf {
        self.dir
            .join("state")
            .join(format!("{}.json", file_name_for_key(key)))
    }
}

/// Keys contain `->`, `/` and cluster aliases: percent-encode everything but `[A-Za-z0-9._-]`
/// into one safe, collision-free file name. Shared with the local lease files.
pub(crate) fn file_name_for_key(key: &str) -> String {
    let mut name = String::with_capacity(key.len());
    for b in key.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'_' | b'-' => name.push(b as char),
            _ => name.push_str(&format!("%{b:02X}")),
        }
    }
    name
}

impl StateStore for LocalStateStore {
    fn get(&self, key: &str) -> Result<Option<Value>, StateError> {
        let path = self.path_for(key);
        match std::fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|source| StateError::Corrupt {
                        key: key.to_string(),
                        source,
                    })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StateError::Io {
                key: key.to_string(),
                source,
            }),
        }
    }

    fn put(&self, key: &str, value: &Value) -> Result<(), StateError> {
        use std::io::Write;
        let io = |source| StateError::Io {
            key: key.to_string(),
            source,
        };
        let path = self.path_for(key);
        let parent = path.parent().expect("state path has a parent");
        std::fs::create_dir_all(parent).map_err(io)?;
        let tmp = parent.join(format!(
            ".{}.{}.tmp",
            path.file_name().unwrap().to_string_lossy(),
            std::process::id()
        ));
        let bytes = serde_json::to_vec(value).expect("JSON value serializes");
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(&bytes).map_err(io)?;
        f.sync_all().map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_and_missing_key() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStateStore::new(dir.path());
        assert_eq!(store.get("A->B/x").unwrap(), None);
        store.put("A->B/x", &json!({"a": 1})).unwrap();
        assert_eq!(store.get("A->B/x").unwrap(), Some(json!({"a": 1})));
        store.put("A->B/x", &json!({"a": 2})).unwrap();
        assert_eq!(store.get("A->B/x").unwrap(), Some(json!({"a": 2})));
        // Keys that differ only in unsafe characters do not collide.
        store.put("A-B/x", &json!(3)).unwrap();
        assert_eq!(store.get("A->B/x").unwrap(), Some(json!({"a": 2})));
    }

    #[test]
    fn corrupt_state_is_an_error_naming_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStateStore::new(dir.path());
        store.put("k", &json!(1)).unwrap();
        std::fs::write(store.path_for("k"), b"{not json").unwrap();
        let err = store.get("k").unwrap_err().to_string();
        assert!(err.contains("state k"), "{err}");
    }
}
