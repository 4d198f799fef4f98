//! The embedded lease of the CLI: one kernel file lock per lease key.
//!
//! `flock` is released by the kernel when the holding process dies, even by `kill -9`, so a
//! crashed run never leaves a task locked; expiry is therefore not needed for safety here and
//! is only recorded for diagnostics. The lock file also keeps the fencing token, which grows by
//! one at every acquisition, and the current holder.
//!
//! Files live under `<state dir>/leases/`; the state directory is `MIRRORSLICE_STATE_DIR`
//! (see [`crate::state::default_state_dir`]). Two processes on one machine sharing that
//! directory never run the same task at once.

use super::{LeaseError, LeaseInfo, LeaseStore};
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

pub struct LocalLeaseStore {
    dir: PathBuf,
    /// Open, locked files of the leases this process holds. Closing a file releases its lock.
    held: Mutex<BTreeMap<String, File>>,
}

#[derive(serde::Serialize, serde::Deserialize, Default)]
struct LockRecord {
    owner: String,
    fencing_token: u64,
    expires_at_ms: i64,
}

impl LocalLeaseStore {
    pub fn new(state_dir: &Path) -> Self {
        LocalLeaseStore {
            dir: state_dir.join("leases"),
            held: Mutex::new(BTreeMap::new()),
        }
    }

    fn path_for(&self, key: &str) -> PathBuf {
        self.dir
            .join(format!("{}.lock", crate::state::file_name_for_key(key)))
    }

    fn io(key: &str) -> impl FnOnce(std::io::Error) -> LeaseError + '_ {
        move |source| LeaseError::Io {
            key: key.to_string(),
            source,
        }
    }
}

fn read_record(f: &mut File) -> std::io::Result<LockRecord> {
    let mut s = String::new();
    f.seek(SeekFrom::Start(0))?;
    f.read_to_string(&mut s)?;
    Ok(serde_json::from_str(&s).unwrap_or_default())
}

fn write_record(f: &mut File, r: &LockRecord) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(r).expect("lock record serializes");
    f.set_len(0)?;
    f.seek(SeekFrom::Start(0))?;
    f.write_all(&bytes)?;
    f.sync_data()
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[async_trait]
impl LeaseStore for LocalLeaseStore {
    async fn try_acquire(
        &self,
        key: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<LeaseInfo>, LeaseError> {
        let path = self.path_for(key);
        std::fs::create_dir_all(&self.dir).map_err(Self::io(key))?;
        let mut held = self.held.lock().expect("held leases");
        if held.contains_key(key) {
            // Held by this process already (another task of the same run): not available.
            return Ok(None);
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(Self::io(key))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
            Err(std::fs::TryLockError::Error(e)) => return Err(Self::io(key)(e)),
        }
        let previous = read_record(&mut file).map_err(Self::io(key))?;
        let record = LockRecord {
            owner: owner.to_string(),
            fencing_token: previous.fencing_token + 1,
            expires_at_ms: now_ms() + ttl.as_millis() as i64,
        };
        write_record(&mut file, &record).map_err(Self::io(key))?;
        held.insert(key.to_string(), file);
        Ok(Some(LeaseInfo {
            key: key.to_string(),
            owner: record.owner,
            fencing_token: record.fencing_token,
            expires_at_ms: record.expires_at_ms,
        }))
    }

    async fn renew(
        &self,
        lease: &LeaseInfo,
        ttl: Duration,
    ) -> Result<Option<LeaseInfo>, LeaseError> {
        let mut held = self.held.lock().expect("held leases");
        let Some(file) = held.get_mut(&lease.key) else {
            return Ok(None);
        };
        let current = read_record(file).map_err(Self::io(&lease.key))?;
        if current.owner != lease.owner || current.fencing_token != lease.fencing_token {
            return Ok(None);
        }
        let record = LockRecord {
            expires_at_ms: now_ms() + ttl.as_millis() as i64,
            ..current
        };
        write_record(file, &record).map_err(Self::io(&lease.key))?;
        Ok(Some(LeaseInfo {
            expires_at_ms: record.expires_at_ms,
            ..lease.clone()
        }))
    }

    async fn release(&self, lease: &LeaseInfo) -> Result<(), LeaseError> {
        let mut held = self.held.lock().expect("held leases");
        if let Some(mut file) = held.remove(&lease.key) {
            let current = read_record(&mut file).map_err(Self::io(&lease.key))?;
            if current.owner == lease.owner && current.fencing_token == lease.fencing_token {
                // Keep the token (it must only grow); mark the lease expired.
                let record = LockRecord {
                    expires_at_ms: now_ms(),
                    ..current
                };
                write_record(&mut file, &record).map_err(Self::io(&lease.key))?;
            }
            // Dropping the file releases the lock.
        }
        Ok(())
    }

    async fn describe(&self, key: &str) -> Result<Option<LeaseInfo>, LeaseError> {
        let path = self.path_for(key);
        let mut file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Self::io(key)(e)),
        };
        let r = read_record(&mut file).map_err(Self::io(key))?;
        Ok(Some(LeaseInfo {
            key: key.to_string(),
            owner: r.owner,
            fencing_token: r.fencing_token,
            expires_at_ms: r.expires_at_ms,
        }))
    }

    /// Live while some process holds the file lock: probed with a shared lock, which the
    /// holder's exclusive lock refuses (and which excludes nobody for the instant it is held).
    async fn live_holder(&self, key: &str) -> Result<Option<LeaseInfo>, LeaseError> {
        let Some(info) = self.describe(key).await? else {
            return Ok(None);
        };
        if self.held.lock().expect("held leases").contains_key(key) {
            return Ok(Some(info));
        }
        let file = File::open(self.path_for(key)).map_err(Self::io(key))?;
        match file.try_lock_shared() {
            Ok(()) => Ok(None),
            Err(std::fs::TryLockError::WouldBlock) => Ok(Some(info)),
            Err(std::fs::TryLockError::Error(e)) => Err(Self::io(key)(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn exclusive_within_and_across_stores_and_token_grows() {
        let dir = tempfile::tempdir().unwrap();
        let a = LocalLeaseStore::new(dir.path());
        let b = LocalLeaseStore::new(dir.path());
        let ttl = Duration::from_secs(30);
        let first = a.try_acquire("A->B/S/0", "a", ttl).await.unwrap().unwrap();
        assert_eq!(first.fencing_token, 1);
        assert!(a
            .try_acquire("A->B/S/0", "a2", ttl)
            .await
            .unwrap()
            .is_none());
        // A second store is a second open file description: flock excludes it too.
        assert!(b.try_acquire("A->B/S/0", "b", ttl).await.unwrap().is_none());
        assert!(b.try_acquire("A->B/S/1", "b", ttl).await.unwrap().is_some());

        let renewed = a.renew(&first, ttl).await.unwrap().unwrap();
        assert_eq!(renewed.fencing_token, 1);
        a.release(&first).await.unwrap();

        let second = b.try_acquire("A->B/S/0", "b", ttl).await.unwrap().unwrap();
        assert_eq!(second.fencing_token, 2, "fencing token strictly increases");
        // The old holder can neither renew nor release the new holder's lease.
        assert!(a.renew(&first, ttl).await.unwrap().is_none());
        a.release(&first).await.unwrap();
        assert_eq!(b.describe("A->B/S/0").await.unwrap().unwrap().owner, "b");
        assert!(b.renew(&second, ttl).await.unwrap().is_some());
    }

    #[tokio::test]
    async fn a_lease_is_live_exactly_while_its_file_lock_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (
            LocalLeaseStore::new(dir.path()),
            LocalLeaseStore::new(dir.path()),
        );
        let ttl = Duration::from_secs(30);
        assert!(b.live_holder("k").await.unwrap().is_none(), "never taken");
        let lease = a.try_acquire("k", "a", ttl).await.unwrap().unwrap();
        assert_eq!(b.live_holder("k").await.unwrap().unwrap().owner, "a");
        assert_eq!(a.live_holder("k").await.unwrap().unwrap().owner, "a");
        // The probe itself leaves the lease to whoever asks next.
        assert!(b.try_acquire("k", "b", ttl).await.unwrap().is_none());
        a.release(&lease).await.unwrap();
        assert!(b.live_holder("k").await.unwrap().is_none(), "released");
        assert!(b.try_acquire("k", "b", ttl).await.unwrap().is_some());
    }
}
