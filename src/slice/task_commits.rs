//! A source task's commits to the Connect offsets topic.
//!
//! The copy loop hands a commit over ([`TaskHooks::start_commit`]); the commit's record is
//! written and confirmed on the runtime, and the loop collects the outcome
//! ([`TaskHooks::commit_outcome`]), copying on meanwhile up to another 1 MiB. A commit still on
//! its way when the process freezes lands at the thaw, after a successor's; its fence keeps it
//! from moving the stored offset back (see `docs/connect-offsets.md`).
//!
//! One commit is on its way at a time, and the store travels with it: its known positions
//! (see [`OffsetStore::commit_stored`]) are updated in order.

use crate::connect::offset_store::{OffsetStore, PartitionKey};
use crate::connectors::source::task::{TaskError, TaskHooks, TopicPartition};
use crate::lease::Ownership;
use crate::wire::connect_offsets::StoredOffset;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// How often a task's commits also write its offsets position hint (and at its end): the hint
/// costs two state-store round trips, a commit (several a second by default) only its record.
pub(super) const HINT_INTERVAL: Duration = Duration::from_secs(30);

/// A commit on its way, with the store it writes through; it gives the store back.
type Pending = JoinHandle<(OffsetStore, Result<(), CommitFailure>)>;

/// Commits go to the Connect offsets topic; ownership comes from the task's lease.
pub(super) struct StoreHooks {
    /// The task's name, for errors.
    task: String,
    /// Commits are confirmed by then, or reported as failed.
    deadline: Instant,
    /// `None` while a commit is on its way (it holds the store), or after a commit panicked.
    store: Option<OffsetStore>,
    pending: Option<Pending>,
    handle: tokio::runtime::Handle,
    ownership: Ownership,
    source_alias: String,
    /// Written beside each committed offset: the ID of the topic it was read from.
    topic_ids: BTreeMap<String, String>,
}

/// Until when a write of this task may still be waited for: while its lease is trusted, and
/// never past the slice's deadline. `None` once the lease is no longer trusted.
fn trusted_until(ownership: &Ownership, deadline: Instant) -> Option<Instant> {
    ownership
        .valid_until()
        .filter(|t| Instant::now() < *t)
        .map(|t| t.min(deadline))
}

impl StoreHooks {
    /// `store` is loaded; commits of task `task` (of flow source `source_alias`) end by
    /// `deadline` or when `ownership` stops being trusted. Call from within the runtime.
    pub(super) fn new(
        task: String,
        deadline: Instant,
        store: OffsetStore,
        ownership: Ownership,
        source_alias: String,
        topic_ids: BTreeMap<String, String>,
    ) -> Self {
        StoreHooks {
            task,
            deadline,
            store: Some(store),
            pending: None,
            handle: tokio::runtime::Handle::current(),
            ownership,
            source_alias,
            topic_ids,
        }
    }

    /// After the task: the position hint for the next slice's load, if the last commits left it
    /// behind, while the lease is trusted (a hint not written only makes that load read more).
    pub(super) fn save_hint(&mut self) {
        if let Some(Err(e)) = self.commit_outcome(true) {
            tracing::warn!(task = %self.task, error = %e, "last commit not confirmed");
        }
        let Some(until) = trusted_until(&self.ownership, self.deadline) else {
            return;
        };
        let Some(store) = self.store.as_mut() else {
            return;
        };
        store.hint_writes_until(until);
        // In the runtime's context, as in a commit: the DynamoDB state store needs it.
        if let Err(e) = self.handle.block_on(async { store.save_hint_if_stale() }) {
            tracing::warn!(task = %self.task, error = %e, "offsets position hint not written; the next load reads more of the topic");
        }
    }

    fn keyed(
        &self,
        offsets: BTreeMap<TopicPartition, i64>,
    ) -> BTreeMap<PartitionKey, StoredOffset> {
        offsets
            .into_iter()
            .map(|((t, p), offset)| {
                // The store stamps its fence (see `OffsetStore::with_commit_fence`).
                let stored = StoredOffset {
                    offset,
                    topic_id: self.topic_ids.get(&t).cloned(),
                    fence: None,
                };
                (PartitionKey::source(&self.source_alias, &t, p), stored)
            })
            .collect()
    }

    fn commit_error(&self, message: String) -> TaskError {
        TaskError::Commit {
            task: self.task.clone(),
            message,
        }
    }
}

/// Why a commit did not count.
enum CommitFailure {
    /// The lease stopped being trusted first; says what became of the commit's record.
    LeaseExpired(String),
    Failed(String),
}

/// Writes `offsets` through `store` and waits for their delivery while the lease is trusted
/// (a renewal during the wait extends it) and until `deadline`. Checked once more right before
/// the write: the copy loop checked before handing the commit over, and a freeze may fall
/// between the two.
async fn write_commit(
    store: &mut OffsetStore,
    offsets: BTreeMap<PartitionKey, StoredOffset>,
    ownership: &Ownership,
    deadline: Instant,
) -> Result<(), CommitFailure> {
    let topic = store.topic().to_string();
    let Some(mut until) = trusted_until(ownership, deadline) else {
        return Err(CommitFailure::LeaseExpired(format!(
            "its last commit was not written to {topic}"
        )));
    };
    store.hint_writes_until(until);
    let commit = store.commit_stored(&offsets);
    tokio::pin!(commit);
    loop {
        if let Ok(done) = tokio::time::timeout_at(until.into(), &mut commit).await {
            return done
                .map(|_| ())
                .map_err(|e| CommitFailure::Failed(format!("{topic}: {e}")));
        }
        match trusted_until(ownership, deadline).filter(|t| *t > until) {
            Some(later) => until = later,
            None if Instant::now() < deadline => {
                return Err(CommitFailure::LeaseExpired(format!(
                    "its last commit was sent to {topic} but not confirmed in time"
                )))
            }
            None => {
                return Err(CommitFailure::Failed(format!(
                    "{topic}: not confirmed before the slice's deadline"
                )))
            }
        }
    }
}

impl TaskHooks for StoreHooks {
    fn start_commit(&mut self, offsets: BTreeMap<TopicPartition, i64>) -> Result<(), TaskError> {
        if trusted_until(&self.ownership, self.deadline).is_none() {
            return Err(TaskError::lease_lost(&self.task));
        }
        let keyed = self.keyed(offsets);
        let Some(mut store) = self.store.take() else {
            let message = "the offsets store was lost with an earlier commit".to_string();
            return Err(self.commit_error(message));
        };
        debug_assert!(self.pending.is_none(), "one commit at a time");
        let (ownership, deadline) = (self.ownership.clone(), self.deadline);
        self.pending = Some(self.handle.spawn(async move {
            let written = write_commit(&mut store, keyed, &ownership, deadline).await;
            (store, written)
        }));
        Ok(())
    }

    fn commit_outcome(&mut self, wait: bool) -> Option<Result<(), TaskError>> {
        let Some(pending) = self.pending.take_if(|p| wait || p.is_finished()) else {
            return self.pending.is_none().then_some(Ok(()));
        };
        // On the copy loop's blocking thread, where blocking on the runtime is fine; the
        // commit's own wait is bounded by the lease and the deadline.
        match self.handle.block_on(pending) {
            Ok((store, written)) => {
                self.store = Some(store);
                Some(written.map_err(|failure| match failure {
                    CommitFailure::LeaseExpired(stopped) => TaskError::LeaseLost {
                        task: self.task.clone(),
                        stopped,
                    },
                    CommitFailure::Failed(message) => self.commit_error(message),
                }))
            }
            Err(e) => Some(Err(self.commit_error(format!("commit task failed: {e}")))),
        }
    }

    fn owned_until(&mut self) -> Option<Instant> {
        self.ownership.valid_until()
    }
}
