//! Where each partition reads: the resume position from the stored Connect offset or the reset
//! policy, the checks that find a **gap** (the next offset needed is gone from the source log),
//! and the end-of-partition confirmation that makes a partition "caught up".

use super::task::{kafka_err, PartitionReport, SourceTaskSpec, TaskError, TopicPartition};
use crate::config::Props;
use crate::kafka::{listed_offsets, MirrorContext};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::{Offset, TopicPartitionList};
use serde::Serialize;
use std::time::{Duration, Instant};

/// What to do when the next offset needed no longer exists in the source log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GapPolicy {
    /// Stop the task, mark it FAILED and fail the slice (default).
    Fail,
    /// Continue from the log start; the gap is still reported.
    Skip,
}

/// Where the task's partitions start when no offset is stored (`auto.offset.reset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetPolicy {
    Earliest,
    Latest,
    /// `none`: a partition without a stored offset is an error.
    None,
}

impl ResetPolicy {
    /// From the replication consumer's Java `auto.offset.reset` (MM2 forces `earliest` if unset).
    pub fn from_consumer_props(props: &Props) -> Result<Self, TaskError> {
        match props
            .get("auto.offset.reset")
            .map(|v| v.trim().to_ascii_lowercase())
            .as_deref()
        {
            None | Some("earliest") => Ok(ResetPolicy::Earliest),
            Some("latest") => Ok(ResetPolicy::Latest),
            Some("none") => Ok(ResetPolicy::None),
            Some(other) => Err(TaskError::Config(format!(
                "consumer auto.offset.reset={other} is not one of earliest, latest, none"
            ))),
        }
    }
}

/// A range of upstream offsets that can no longer be replicated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gap {
    pub topic: String,
    pub partition: i32,
    /// First missing upstream offset (inclusive).
    pub from_offset: i64,
    /// End of the missing range (exclusive).
    pub to_offset: i64,
    /// `below_log_start` (retention), `beyond_log_end` (recreated or truncated topic) or
    /// `recreated` (the topic ID changed since the stored offset was written).
    pub kind: &'static str,
    /// Whether the task skipped over it (`mirrorslice.on.gap=skip`).
    pub skipped: bool,
    /// Where the task continued after skipping: the log start.
    pub resumed_at: Option<i64>,
    /// `recreated`: the topic ID stored beside our offset, and the topic's ID now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_topic_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_topic_id: Option<String>,
}

impl Gap {
    /// Upstream offsets `next..low` were deleted by retention before they were copied.
    pub(super) fn below_log_start(
        tp: &TopicPartition,
        next: i64,
        low: i64,
        on_gap: GapPolicy,
    ) -> Gap {
        Gap::new(tp, "below_log_start", (next, low), low, on_gap)
    }

    /// The next offset needed is beyond the log end `high`; skipping resumes at the start `low`.
    pub(super) fn beyond_log_end(
        tp: &TopicPartition,
        next: i64,
        (low, high): (i64, i64),
        on_gap: GapPolicy,
    ) -> Gap {
        Gap::new(tp, "beyond_log_end", (high, next), low, on_gap)
    }

    /// The topic was deleted and created again since our offset was stored (its ID changed
    /// from `old` to `new`): the old topic's records from `next` on, if it held any, were never
    /// copied, and nothing of the new topic has been. Skipping copies the new topic from its
    /// log start `low`. The range is `next..next`: how far the old topic reached is unknown.
    pub(super) fn recreated(
        tp: &TopicPartition,
        next: i64,
        low: i64,
        (old, new): (&str, &str),
        on_gap: GapPolicy,
    ) -> Gap {
        Gap {
            old_topic_id: Some(old.to_string()),
            new_topic_id: Some(new.to_string()),
            ..Gap::new(tp, "recreated", (next, next), low, on_gap)
        }
    }

    /// The range `from..to` of `kind`; with [`GapPolicy::Skip`] the partition resumes at `low`.
    fn new(
        tp: &TopicPartition,
        kind: &'static str,
        (from_offset, to_offset): (i64, i64),
        low: i64,
        on_gap: GapPolicy,
    ) -> Gap {
        let skipped = on_gap == GapPolicy::Skip;
        Gap {
            topic: tp.0.clone(),
            partition: tp.1,
            from_offset,
            to_offset,
            kind,
            skipped,
            resumed_at: skipped.then_some(low),
            old_topic_id: None,
            new_topic_id: None,
        }
    }

    pub fn describe(&self) -> String {
        match self.kind {
            "below_log_start" => format!(
                "{}-{}: upstream offsets {}..{} were deleted from the source before they were \
                 replicated ({} records lost)",
                self.topic,
                self.partition,
                self.from_offset,
                self.to_offset,
                self.to_offset - self.from_offset
            ),
            "recreated" => format!(
                "{}-{}: the topic was deleted and recreated (topic ID {} is now {}): records of \
                 the old topic from offset {} on, if it held any, were not replicated, and the \
                 new topic's records are not replicated unless the gap is skipped",
                self.topic,
                self.partition,
                self.old_topic_id.as_deref().unwrap_or("?"),
                self.new_topic_id.as_deref().unwrap_or("?"),
                self.from_offset
            ),
            _ => format!(
                "{}-{}: next offset {} is beyond the source log end {}: the topic was deleted and \
                 recreated, or truncated",
                self.topic, self.partition, self.to_offset, self.from_offset
            ),
        }
    }
}

/// One partition's read position and progress in this slice.
pub(super) struct PartitionRun {
    pub(super) tp: TopicPartition,
    pub(super) remote: String,
    /// Next upstream offset to read (known once positioned or a record arrived).
    pub(super) next: Option<i64>,
    pub(super) report: PartitionReport,
    /// End-of-partition seen at the current position (cleared by a new record).
    pub(super) at_end: bool,
    /// When the partition was (re)positioned without a record or end event since.
    pub(super) silent_since: Option<Instant>,
    /// Since when end-of-partition has stood short of the listed end (see `confirm_at_end`).
    pub(super) short_of_listed_since: Option<Instant>,
    /// Assigned again since its last record or event: librdkafka's unassign clears the
    /// forwarding of the partition's queue into the task's, which must be set again.
    pub(super) reassigned: bool,
    pub(super) done: bool,
}

impl PartitionRun {
    pub(super) fn new(tp: &TopicPartition, remote: String) -> Self {
        PartitionRun {
            tp: tp.clone(),
            report: PartitionReport {
                topic: tp.0.clone(),
                partition: tp.1,
                remote_topic: remote.clone(),
                ..Default::default()
            },
            remote,
            next: None,
            at_end: false,
            silent_since: None,
            short_of_listed_since: None,
            reassigned: false,
            done: false,
        }
    }
}

/// Every partition reported end-of-partition: confirm it against the broker's listed end
/// offsets before calling the slice caught up. Some brokers answer a fetch with
/// end-of-partition at the old position just after acknowledging new records; the listed end
/// then shows them. A partition listed beyond its position keeps reading (its next records
/// arrive as usual) for up to [`SHORT_OF_LISTED_GRACE`]: a listed end can also count records
/// no consumer is ever served (a transaction's commit marker), and such a partition must not
/// hold the slice until its deadline. On a broker whose listed end trails the log (by the last batch),
/// this check can only err toward "not yet", never toward a false "caught up". The request
/// waits behind the consumer's held fetch, at most `fetch.wait.max.ms` (10 ms by default).
pub(super) fn confirm_at_end(
    consumer: &BaseConsumer<MirrorContext>,
    runs: &mut [PartitionRun],
) -> bool {
    let at_end: Vec<TopicPartition> = runs
        .iter()
        .filter(|r| !r.done && r.at_end)
        .map(|r| r.tp.clone())
        .collect();
    // One request for all partitions; if it fails, trust the end-of-partition events.
    let ends =
        listed_offsets(consumer, &at_end, Offset::End, Duration::from_secs(5)).unwrap_or_default();
    let mut all = true;
    for run in runs.iter_mut().filter(|r| !r.done && r.at_end) {
        let position = run.next.or_else(|| position_of(consumer, &run.tp));
        let listed = ends.get(&run.tp).copied();
        match (position, listed) {
            (Some(position), Some(listed)) if listed > position => {
                let since = *run.short_of_listed_since.get_or_insert_with(|| {
                    tracing::debug!(
                        topic = %run.tp.0,
                        partition = run.tp.1,
                        position,
                        listed,
                        "end-of-partition before the listed end; reading on"
                    );
                    Instant::now()
                });
                if since.elapsed() < SHORT_OF_LISTED_GRACE {
                    all = false;
                } else {
                    // Never served: a transaction marker at the end (consumers do not see
                    // control records), or a broker that lists records it will not serve yet.
                    // The end-of-partition stands; anything real is the next slice's.
                    tracing::debug!(
                        topic = %run.tp.0,
                        partition = run.tp.1,
                        position,
                        listed,
                        "listed end not served; caught up at the end-of-partition"
                    );
                }
            }
            _ => run.short_of_listed_since = None,
        }
    }
    all
}

/// How long a partition at end-of-partition but short of its listed end keeps reading before
/// the end-of-partition stands (records acknowledged a moment ago normally appear well within).
const SHORT_OF_LISTED_GRACE: Duration = Duration::from_secs(2);

pub(super) fn position_of(
    consumer: &BaseConsumer<MirrorContext>,
    tp: &TopicPartition,
) -> Option<i64> {
    let positions = consumer.position().ok()?;
    match positions.find_partition(&tp.0, tp.1)?.offset() {
        Offset::Offset(o) => Some(o),
        _ => None,
    }
}

/// Classify an OFFSET_OUT_OF_RANGE answer by the current log bounds.
pub(super) fn out_of_range_gap(
    consumer: &BaseConsumer<MirrorContext>,
    spec: &SourceTaskSpec,
    run: &PartitionRun,
) -> Result<Gap, TaskError> {
    let (topic, partition) = (&run.tp.0, run.tp.1);
    let (low, high) = consumer
        .fetch_watermarks(topic, partition, WATERMARK_TIMEOUT)
        .map_err(kafka_err(
            &spec.name,
            format!("list offsets of {topic}-{partition}"),
        ))?;
    let next = run.next.unwrap_or(low);
    Ok(if next < low {
        Gap::below_log_start(&run.tp, next, low, spec.on_gap)
    } else {
        Gap::beyond_log_end(&run.tp, next, (low, high), spec.on_gap)
    })
}

/// Drops `topic`-`partition` from the consumer's assignment and adds it back at `offset`.
fn reassign(
    consumer: &BaseConsumer<MirrorContext>,
    topic: &str,
    partition: i32,
    offset: i64,
) -> Result<(), KafkaError> {
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition(topic, partition);
    consumer.incremental_unassign(&tpl)?;
    tpl.set_partition_offset(topic, partition, Offset::Offset(offset))?;
    consumer.incremental_assign(&tpl)
}

pub(super) fn reposition(
    consumer: &BaseConsumer<MirrorContext>,
    run: &mut PartitionRun,
    offset: i64,
) -> Result<(), TaskError> {
    let (topic, partition) = (&run.tp.0, run.tp.1);
    let seek = consumer.seek(
        topic,
        partition,
        Offset::Offset(offset),
        Duration::from_secs(10),
    );
    // After an out-of-range fetch under `auto.offset.reset=error` librdkafka has stopped
    // fetching the partition and refuses a seek ("Erroneous state"); assigning it again at the
    // offset restarts it. Its fetched records then stay in the partition's own queue until
    // the task forwards it again (`reassigned`).
    let reassigned = seek.is_err();
    let moved = seek.or_else(|_| reassign(consumer, topic, partition, offset));
    run.reassigned |= reassigned;
    moved.map_err(|source| TaskError::Kafka {
        task: run.report.remote_topic.clone(),
        what: format!("seek {}-{} to {offset}", run.tp.0, run.tp.1),
        source: Box::new(source),
    })?;
    run.next = Some(offset);
    run.at_end = false;
    run.silent_since = Some(Instant::now());
    Ok(())
}

/// How long listing a partition's log bounds may take.
const WATERMARK_TIMEOUT: Duration = Duration::from_secs(10);

/// Positions every partition at its stored offset + 1 (or where the reset policy says), after
/// checking that offset against the log start, and returns the assignment. A gap is reported
/// in `gaps` and, with [`GapPolicy::Fail`], ends the task here.
pub(super) fn position_partitions(
    spec: &SourceTaskSpec,
    consumer: &BaseConsumer<MirrorContext>,
    runs: &mut [PartitionRun],
    gaps: &mut Vec<Gap>,
) -> Result<TopicPartitionList, TaskError> {
    let task = spec.name.as_str();
    let reset = ResetPolicy::from_consumer_props(&spec.consumer)?;
    // The log starts of every partition, in one ListOffsets request: the gap check, and where
    // `earliest` starts. (Log ends are listed when the slice believes it is caught up, not now:
    // some brokers list records acknowledged a moment ago only a moment later.)
    let all: Vec<TopicPartition> = runs.iter().map(|r| r.tp.clone()).collect();
    let log_starts = listed_offsets(consumer, &all, Offset::Beginning, WATERMARK_TIMEOUT)
        .map_err(kafka_err(task, "list log start offsets"))?;
    let mut assignment = TopicPartitionList::new();
    for run in runs.iter_mut() {
        let (topic, partition) = (&run.tp.0, run.tp.1);
        let low = log_starts.get(&run.tp).copied();
        let offset = match spec.stored_offsets.get(&run.tp) {
            Some(stored) if *stored >= 0 => {
                let low = low.ok_or_else(|| {
                    TaskError::Config(format!(
                        "{task}: the broker listed no log start for {topic}-{partition}"
                    ))
                })?;
                let mut next = stored + 1;
                if let Some(ids) = recreated_ids(spec, &run.tp) {
                    let gap = Gap::recreated(&run.tp, next, low, ids, spec.on_gap);
                    report_gap(spec, gap, gaps)?;
                    next = low;
                } else if next < low {
                    let gap = Gap::below_log_start(&run.tp, next, low, spec.on_gap);
                    report_gap(spec, gap.clone(), gaps)?;
                    next = low;
                }
                run.next = Some(next);
                Offset::Offset(next)
            }
            // The listed log start, not librdkafka's logical BEGINNING: resolving that on a new
            // consumer waits a fixed 500 ms retry before the leader is known.
            _ => match (reset, low) {
                (ResetPolicy::Earliest, Some(low)) => {
                    run.next = Some(low);
                    Offset::Offset(low)
                }
                (ResetPolicy::Earliest, None) => Offset::Beginning,
                (ResetPolicy::Latest, _) => Offset::End,
                (ResetPolicy::None, _) => {
                    return Err(TaskError::Config(format!(
                        "{task}: {topic}-{partition} has no stored offset and the consumer's \
                         auto.offset.reset is none"
                    )))
                }
            },
        };
        run.report.start_offset = run.next;
        run.silent_since = Some(Instant::now());
        assignment
            .add_partition_offset(topic, partition, offset)
            .map_err(kafka_err(task, "build assignment"))?;
    }
    Ok(assignment)
}

/// The stored and the current topic ID of `tp`'s topic when both are known and differ: the
/// topic was deleted and created again since our offset was stored (KIP-516). Where either is
/// unknown (offsets written by Java MM2 or an earlier build, a broker without topic IDs) the
/// offset checks against the log bounds are all there is.
fn recreated_ids<'a>(spec: &'a SourceTaskSpec, tp: &TopicPartition) -> Option<(&'a str, &'a str)> {
    let stored = spec.stored_topic_ids.get(tp)?;
    let current = spec.topic_ids.get(&tp.0)?;
    (stored != current).then_some((stored.as_str(), current.as_str()))
}

/// Logs and records `gap`; with [`GapPolicy::Fail`] returns the error that ends the task.
fn report_gap(spec: &SourceTaskSpec, gap: Gap, gaps: &mut Vec<Gap>) -> Result<(), TaskError> {
    let task = spec.name.as_str();
    tracing::error!(task, gap = %gap.describe(), "replication gap");
    let error = TaskError::Gap(format!("{task}: {}", gap.describe()));
    gaps.push(gap);
    match spec.on_gap {
        GapPolicy::Fail => Err(error),
        GapPolicy::Skip => Ok(()),
    }
}

/// A gap found while copying: reported, then the partition fails the task
/// ([`GapPolicy::Fail`]) or continues from the log start ([`GapPolicy::Skip`]).
pub(super) fn apply_gap(
    spec: &SourceTaskSpec,
    consumer: &BaseConsumer<MirrorContext>,
    run: &mut PartitionRun,
    gap: Gap,
    gaps: &mut Vec<Gap>,
) -> Result<(), TaskError> {
    let resume = gap.resumed_at;
    if let Err(e) = report_gap(spec, gap, gaps) {
        run.done = true;
        return Err(e);
    }
    reposition(
        consumer,
        run,
        resume.expect("skipped gaps record where they resume"),
    )
}

/// A partition that neither delivers nor reaches its end for `silence_check_after` may be
/// positioned beyond the log end on a broker that stays silent instead of answering
/// OFFSET_OUT_OF_RANGE: list its bounds and return the gap, if there is one.
pub(super) fn silent_gap(
    spec: &SourceTaskSpec,
    consumer: &BaseConsumer<MirrorContext>,
    run: &mut PartitionRun,
) -> Result<Option<Gap>, TaskError> {
    let silent_for = run.silent_since.map(|t| t.elapsed()).unwrap_or_default();
    if run.done || run.at_end || silent_for < spec.silence_check_after {
        return Ok(None);
    }
    run.silent_since = Some(Instant::now());
    let Some(next) = run.next else {
        return Ok(None);
    };
    let (topic, partition) = (&run.tp.0, run.tp.1);
    let bounds = consumer
        .fetch_watermarks(topic, partition, WATERMARK_TIMEOUT)
        .map_err(kafka_err(
            &spec.name,
            format!("list offsets of {topic}-{partition}"),
        ))?;
    Ok((next > bounds.1).then(|| Gap::beyond_log_end(&run.tp, next, bounds, spec.on_gap)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_policy_from_java_props() {
        let mut p = Props::new();
        assert_eq!(
            ResetPolicy::from_consumer_props(&p).unwrap(),
            ResetPolicy::Earliest
        );
        p.insert("auto.offset.reset".into(), "latest".into());
        assert_eq!(
            ResetPolicy::from_consumer_props(&p).unwrap(),
            ResetPolicy::Latest
        );
        p.insert("auto.offset.reset".into(), "sideways".into());
        assert!(ResetPolicy::from_consumer_props(&p).is_err());
    }

    #[test]
    fn gap_descriptions_name_partition_and_range() {
        let tp = ("orders".to_string(), 3);
        let below = Gap::below_log_start(&tp, 100, 250, GapPolicy::Fail);
        let text = below.describe();
        assert!(text.contains("orders-3") && text.contains("100..250") && text.contains("150"));
        let beyond = Gap::beyond_log_end(&tp, 100, (0, 5), GapPolicy::Skip);
        assert_eq!((beyond.from_offset, beyond.to_offset), (5, 100));
        assert_eq!(beyond.resumed_at, Some(0));
        assert!(beyond.describe().contains("recreated"));
        let recreated = Gap::recreated(&tp, 1000, 0, ("oldId", "newId"), GapPolicy::Skip);
        let text = recreated.describe();
        assert!(text.contains("oldId is now newId") && text.contains("from offset 1000"));
        let json = serde_json::to_value(&recreated).unwrap();
        assert_eq!(json["kind"], "recreated");
        assert_eq!(json["old_topic_id"], "oldId");
        assert_eq!(json["resumed_at"], 0);
        let json = serde_json::to_value(&below).unwrap();
        assert!(
            json.get("old_topic_id").is_none(),
            "only recreated gaps name IDs"
        );
    }
}
