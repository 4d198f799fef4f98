//! One copy thread for all of a slice's source tasks.
//!
//! A task's hot loop (take a batch from its queue, hand the records to the producer, feed the
//! offset syncs, start a commit) runs on the slice's copier thread, one step per task in turn.
//! Eight tasks on eight threads cost up to 1.6 times the CPU of one thread doing the same
//! copy (context switches, and malloc arenas contended across threads; see
//! `docs/throughput.md`). Each task reads its own queue, so a task that waits (for its commit,
//! or for records) back-pressures only its own partitions' fetches, never the others'.
//!
//! What blocks stays off this thread: a task is started (its partitions positioned and
//! assigned) and finished (flushed, committed, reported) on a blocking thread of its own, and
//! a commit is started on one step and settled on a later one ([`Turn::CommitPending`]).

use super::task::{ActiveTask, SliceClients, TaskHooks, Turn, Wake, IDLE_WAIT};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// How long the copier sleeps at most while a task waits for its commit and none has records:
/// a confirmed commit does not wake it.
const COMMIT_POLL: Duration = Duration::from_millis(1);

/// The slice's clients and the thread its tasks copy on. The thread ends once every holder
/// has dropped the copier and its last task has stopped.
pub struct SliceCopier<H: TaskHooks + 'static> {
    clients: Arc<SliceClients>,
    jobs: Sender<Job<H>>,
    wake: Wake,
}

/// A started task on the copier, with its hooks and who waits for it to stop.
struct Job<H> {
    task: ActiveTask,
    hooks: H,
    stopped: oneshot::Sender<(ActiveTask, H)>,
}

impl<H: TaskHooks + 'static> SliceCopier<H> {
    /// Starts the copy thread for tasks sharing `clients`; `name` names the thread.
    pub fn start(name: &str, clients: SliceClients) -> std::io::Result<Self> {
        let (jobs, received) = mpsc::channel();
        let wake = Wake::default();
        let woken = wake.clone();
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || copy_tasks(received, woken))?;
        Ok(SliceCopier {
            clients: Arc::new(clients),
            jobs,
            wake,
        })
    }

    pub fn clients(&self) -> &Arc<SliceClients> {
        &self.clients
    }

    /// What a task's queue must wake when records arrive ([`ActiveTask::start`]).
    pub(crate) fn wake(&self) -> &Wake {
        &self.wake
    }

    /// Hands a started task to the copy thread; the answer comes back when it stopped, to be
    /// finished ([`ActiveTask::finish`]). Dropped without an answer if the thread panicked.
    pub(crate) fn copy(&self, task: ActiveTask, hooks: H) -> oneshot::Receiver<(ActiveTask, H)> {
        let (stopped, answer) = oneshot::channel();
        let job = Job {
            task,
            hooks,
            stopped,
        };
        // The thread only ends once every sender is gone: this one is still here.
        if self.jobs.send(job).is_ok() {
            self.wake.notify();
        }
        answer
    }
}

/// The copy thread: steps every task in turn until it stops, sleeping only when none had
/// anything to do.
fn copy_tasks<H: TaskHooks>(jobs: Receiver<Job<H>>, wake: Wake) {
    let mut running: Vec<Job<H>> = Vec::new();
    loop {
        if running.is_empty() {
            // Nothing to step: block until a task arrives or every sender is gone.
            match jobs.recv() {
                Ok(job) => running.push(job),
                Err(_) => return,
            }
        }
        // Tasks that arrived meanwhile; a disconnect is seen once the running ones stopped.
        running.extend(jobs.try_iter());
        let (mut progressed, mut committing) = (false, false);
        let (mut i, now) = (0, Instant::now());
        while i < running.len() {
            let job = &mut running[i];
            if !job.task.wants_step(now) {
                i += 1;
                continue;
            }
            match job.task.step(&mut job.hooks) {
                Turn::Progressed => progressed = true,
                Turn::Idle => {}
                Turn::CommitPending => committing = true,
                Turn::Stopped => {
                    let job = running.swap_remove(i);
                    // Its runner may be gone (cancelled): the task is dropped here then.
                    let _ = job.stopped.send((job.task, job.hooks));
                    continue;
                }
            }
            i += 1;
        }
        if !progressed {
            if let Some(first_stop) = running.iter().map(|j| j.task.stop_at()).min() {
                let wait = if committing { COMMIT_POLL } else { IDLE_WAIT };
                wake.wait(wait, first_stop);
            }
        }
    }
}
