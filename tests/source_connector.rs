//! Integration tests of the source connector phase (mm2-compat §6) against the local stack.
//!
//! Why: the phase is where a slice decides what exists on the target before any record moves.
//! Its rules are unit tested in `connectors::source::connector`; these tests show that the
//! requests really reach two brokers as intended: a remote topic is born with its configs in one
//! `CreateTopics` call (KAFKA-12254), filters and cycle rules hold on real listings, the
//! offset-syncs topic lands on the cluster `offset-syncs.topic.location` names, and the config
//! sync interval is honoured across phases through the durable state store.
//!
//! Every test uses its own cluster aliases (so internal topic names such as
//! `mm2-offset-syncs.<alias>.internal` are private to it) and a topic filter matching only its
//! own topics, because the brokers are shared with every other test.
//!
//! tansu facts these tests rely on: it reports every topic config with source DEFAULT_CONFIG, so
//! configs are copied only with `use.defaults.from=source` (set at flow level, where MM2 honours
//! it); it supports IncrementalAlterConfigs (SET and DELETE) but not CreatePartitions. Apache
//! Kafka (`MIRRORSLICE_BROKER=kafka`) marks each config with its real source.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{create_topic, created_partition_count, partition_count, stack, unique};
use mirrorslice::config::connector::MirrorSourceConfig;
use mirrorslice::config::{MirrorMakerConfig, Properties, SourceAndTarget};
use mirrorslice::connectors::source::connector::{
    run_source_connector_phase, ConnectorError, SyncRun,
};
use mirrorslice::kafka::admin_ext::{self, AlterOp};
use mirrorslice::state::LocalStateStore;
use rdkafka::admin::{AdminClient, AdminOptions, ConfigSource, ResourceSpecifier};
use rdkafka::client::DefaultClientContext;
use rdkafka::ClientConfig;

const INTERVAL_MS: i64 = 600_000;

/// A private pair of aliases for clusters A and B of the stack: `(source, target)`.
fn aliases() -> (String, String) {
    // Aliases become parts of topic names; `_` keeps them legal and free of separators.
    (
        unique("src").replace('-', "_"),
        unique("tgt").replace('-', "_"),
    )
}

/// The source connector config of `src->tgt` from a small mm2.properties, resolved exactly
/// like `mirrorslice plan` / `run` do.
fn source_config(
    src: &str,
    tgt: &str,
    b_bootstrap: &str,
    flow_extra: &[(&str, &str)],
) -> MirrorSourceConfig {
    let s = stack();
    let mut text = format!(
        "clusters = {src}, {tgt}\n\
         {src}.bootstrap.servers = {a}\n\
         {tgt}.bootstrap.servers = {b}\n\
         {src}->{tgt}.enabled = true\n\
         replication.factor = 1\n\
         offset-syncs.topic.replication.factor = 1\n\
         heartbeats.topic.replication.factor = 1\n\
         checkpoints.topic.replication.factor = 1\n\
         {src}->{tgt}.heartbeats.replication.enabled = false\n\
         {src}->{tgt}.use.defaults.from = source\n",
        a = s.a,
        b = b_bootstrap,
    );
    for (k, v) in flow_extra {
        text.push_str(&format!("{src}->{tgt}.{k} = {v}\n"));
    }
    let mm = MirrorMakerConfig::new(Properties::parse(&text, None).unwrap()).unwrap();
    let pair = SourceAndTarget::new(src, tgt);
    mirrorslice::plan::pair_configs(&mm, &pair).unwrap().source
}

fn admin(bootstrap: &str) -> AdminClient<DefaultClientContext> {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .expect("admin client")
}

/// The topic's configs as the broker describes them.
/// The configs set on a topic. Apache Kafka also describes every default (a broker's
/// `min.insync.replicas`, say) and marks each entry with its source: only the topic's own
/// settings count. tansu describes only what was set, every entry marked as a default.
async fn describe(bootstrap: &str, topic: &str) -> BTreeMap<String, String> {
    let only_topic_settings = stack().is_kafka();
    let admin = admin(bootstrap);
    let spec = [ResourceSpecifier::Topic(topic)];
    let results = admin
        .describe_configs(&spec, &AdminOptions::new())
        .await
        .expect("describe configs");
    let resource = results.into_iter().next().unwrap().expect("topic configs");
    resource
        .entries
        .into_iter()
        .filter(|e| !only_topic_settings || e.source == ConfigSource::DynamicTopic)
        .filter_map(|e| Some((e.name, e.value?)))
        .collect()
}

fn topic_exists(bootstrap: &str, topic: &str) -> bool {
    partition_count(bootstrap, topic).is_some()
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[tokio::test]
async fn new_topic_is_created_with_its_configs_and_synced_on_schedule() {
    let s = stack();
    let (src, tgt) = aliases();
    let prefix = unique("cfg");
    let topic = format!("{prefix}-orders");
    create_topic(
        &s.a,
        &topic,
        3,
        &[
            ("cleanup.policy", "compact"),
            ("retention.ms", "12345"),
            // Excluded by config.properties.exclude's default list (§13 item 25).
            ("min.insync.replicas", "1"),
        ],
    )
    .await;
    let cfg = source_config(&src, &tgt, &s.b, &[("topics", &format!("{prefix}-.*"))]);
    let dir = tempfile::tempdir().unwrap();
    let state = LocalStateStore::new(dir.path());
    let prefix_key = format!("{src}->{tgt}/MirrorSourceConnector");
    let t0 = now_ms();

    let out = run_source_connector_phase(&cfg, &state, &prefix_key, t0)
        .await
        .unwrap();
    let remote = format!("{src}.{topic}");
    assert_eq!(out.remote_topics.get(&topic), Some(&remote));
    assert_eq!(out.created_topics.len(), 1, "{:?}", out.created_topics);
    let created = &out.created_topics[0];
    assert_eq!(created.name, remote);
    assert_eq!(created.partitions, 3);
    assert_eq!(
        created.configs.get("cleanup.policy").map(String::as_str),
        Some("compact")
    );
    assert_eq!(
        created.configs.get("retention.ms").map(String::as_str),
        Some("12345")
    );
    assert!(!created.configs.contains_key("min.insync.replicas"));

    // What the target broker actually holds.
    assert_eq!(created_partition_count(&s.b, &remote), Some(3));
    let on_target = describe(&s.b, &remote).await;
    assert_eq!(
        on_target.get("cleanup.policy").map(String::as_str),
        Some("compact")
    );
    assert_eq!(
        on_target.get("retention.ms").map(String::as_str),
        Some("12345")
    );
    assert!(
        !on_target.contains_key("min.insync.replicas"),
        "excluded property copied: {on_target:?}"
    );
    assert_eq!(
        out.source_partitions,
        (0..3).map(|p| (topic.clone(), p)).collect::<Vec<_>>()
    );
    // First phase: config sync is due (never ran) and covers the remote topic.
    match &out.config_sync {
        SyncRun::Ran {
            topics,
            set,
            errors,
            ..
        } => {
            assert_eq!(*topics, 1, "{:?}", out.config_sync);
            assert!(*set >= 2, "{:?}", out.config_sync);
            assert!(errors.is_empty(), "{errors:?}");
        }
        other => panic!("config sync should run on the first phase: {other:?}"),
    }

    // The source changes; an immediate second phase neither recreates the topic (§12.4 #41)
    // nor syncs configs: the interval is remembered in the state store.
    let changes = BTreeMap::from([(
        topic.clone(),
        vec![("retention.ms".to_string(), AlterOp::Set("777".into()))],
    )]);
    let results =
        admin_ext::incremental_alter_topic_configs(&admin(&s.a), &changes, Duration::from_secs(10))
            .await
            .unwrap();
    assert!(results[&topic].is_ok(), "{results:?}");
    let out = run_source_connector_phase(&cfg, &state, &prefix_key, t0 + 1_000)
        .await
        .unwrap();
    assert!(out.created_topics.is_empty(), "{:?}", out.created_topics);
    assert_eq!(
        out.config_sync,
        SyncRun::NotDue {
            next_due_ms: t0 + INTERVAL_MS
        }
    );
    assert_eq!(
        describe(&s.b, &remote)
            .await
            .get("retention.ms")
            .map(String::as_str),
        Some("12345")
    );

    // Once the interval has passed, the next phase syncs the change.
    let out = run_source_connector_phase(&cfg, &state, &prefix_key, t0 + INTERVAL_MS)
        .await
        .unwrap();
    assert!(
        matches!(out.config_sync, SyncRun::Ran { topics: 1, .. }),
        "{:?}",
        out.config_sync
    );
    let on_target = describe(&s.b, &remote).await;
    assert_eq!(
        on_target.get("retention.ms").map(String::as_str),
        Some("777")
    );
    assert_eq!(
        on_target.get("cleanup.policy").map(String::as_str),
        Some("compact")
    );
    assert!(!on_target.contains_key("min.insync.replicas"));

    // A fresh state store (a new deployment) syncs again right away.
    let other_dir = tempfile::tempdir().unwrap();
    let fresh = LocalStateStore::new(other_dir.path());
    let out = run_source_connector_phase(&cfg, &fresh, &prefix_key, t0 + 2_000)
        .await
        .unwrap();
    assert!(
        matches!(out.config_sync, SyncRun::Ran { .. }),
        "{:?}",
        out.config_sync
    );
    // ACL sync ran or was skipped (no authorizer), and is remembered like config sync.
    assert!(
        matches!(
            out.acl_sync,
            SyncRun::Ran { set: 0, .. } | SyncRun::Skipped { .. }
        ),
        "{:?}",
        out.acl_sync
    );
    let out = run_source_connector_phase(&cfg, &fresh, &prefix_key, t0 + 3_000)
        .await
        .unwrap();
    assert!(
        matches!(out.acl_sync, SyncRun::NotDue { .. }),
        "{:?}",
        out.acl_sync
    );
}

#[tokio::test]
async fn configs_arrive_with_creation_not_with_a_later_sync() {
    // KAFKA-12254: with config sync switched off, only CreateTopics can have put the configs
    // on the remote topic.
    let s = stack();
    let (src, tgt) = aliases();
    let prefix = unique("born");
    let topic = format!("{prefix}-t");
    create_topic(
        &s.a,
        &topic,
        2,
        &[("cleanup.policy", "compact"), ("retention.ms", "54321")],
    )
    .await;
    let cfg = source_config(
        &src,
        &tgt,
        &s.b,
        &[
            ("topics", &format!("{prefix}-.*")),
            ("sync.topic.configs.enabled", "false"),
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let state = LocalStateStore::new(dir.path());
    let out = run_source_connector_phase(&cfg, &state, "flow", now_ms())
        .await
        .unwrap();
    assert_eq!(out.config_sync, SyncRun::Disabled);
    let remote = format!("{src}.{topic}");
    let on_target = describe(&s.b, &remote).await;
    assert_eq!(
        on_target.get("cleanup.policy").map(String::as_str),
        Some("compact")
    );
    assert_eq!(
        on_target.get("retention.ms").map(String::as_str),
        Some("54321")
    );
    assert_eq!(created_partition_count(&s.b, &remote), Some(2));
}

#[tokio::test]
async fn topic_filter_and_cycle_rules_are_respected() {
    let s = stack();
    let (src, tgt) = aliases();
    let prefix = unique("flt");
    let keep = format!("{prefix}-keep");
    let skip = format!("{prefix}-skip");
    // Already came from the target cluster: replicating it back would be a cycle (§6.2).
    let cycle = format!("{tgt}.{prefix}-cycle");
    for t in [&keep, &skip, &cycle] {
        create_topic(&s.a, t, 1, &[]).await;
    }
    let cfg = source_config(
        &src,
        &tgt,
        &s.b,
        &[
            ("topics", &format!("{prefix}-.*, {tgt}\\.{prefix}-.*")),
            ("topics.exclude", &format!("{prefix}-skip")),
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let state = LocalStateStore::new(dir.path());
    let out = run_source_connector_phase(&cfg, &state, "flow", now_ms())
        .await
        .unwrap();
    assert_eq!(
        out.remote_topics,
        BTreeMap::from([(keep.clone(), format!("{src}.{keep}"))])
    );
    assert_eq!(out.source_partitions, vec![(keep.clone(), 0)]);
    let created: Vec<&str> = out.created_topics.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(created, vec![format!("{src}.{keep}")]);
    assert!(topic_exists(&s.b, &format!("{src}.{keep}")));
    assert!(!topic_exists(&s.b, &format!("{src}.{skip}")));
    assert!(!topic_exists(&s.b, &format!("{src}.{cycle}")));
}

#[tokio::test]
async fn offset_syncs_topic_is_created_where_location_says() {
    let s = stack();
    for location in ["source", "target"] {
        let (src, tgt) = aliases();
        let prefix = unique("loc");
        let cfg = source_config(
            &src,
            &tgt,
            &s.b,
            &[
                ("topics", &format!("{prefix}-.*")),
                ("offset-syncs.topic.location", location),
            ],
        );
        let dir = tempfile::tempdir().unwrap();
        let state = LocalStateStore::new(dir.path());
        run_source_connector_phase(&cfg, &state, "flow", now_ms())
            .await
            .unwrap();
        // §3: the name carries the alias of the cluster it is NOT on.
        let (on, off, name) = match location {
            "source" => (&s.a, &s.b, format!("mm2-offset-syncs.{tgt}.internal")),
            _ => (&s.b, &s.a, format!("mm2-offset-syncs.{src}.internal")),
        };
        assert_eq!(cfg.offset_syncs_topic(), name);
        assert_eq!(
            created_partition_count(on, &name),
            Some(1),
            "{location}: {name}"
        );
        assert!(
            !topic_exists(off, &name),
            "{location}: {name} on the wrong cluster"
        );
        let configs = describe(on, &name).await;
        assert_eq!(
            configs.get("cleanup.policy").map(String::as_str),
            Some("compact")
        );
    }
}

#[tokio::test]
async fn tasks_get_partitions_round_robin() {
    // §6.7 / §12.4 #40 on real listings: t0 (8 partitions), t1 and t2 (2 each), tasks.max=3.
    let s = stack();
    let (src, tgt) = aliases();
    let prefix = unique("rr");
    let t = |i: usize| format!("{prefix}-t{i}");
    create_topic(&s.a, &t(0), 8, &[]).await;
    create_topic(&s.a, &t(1), 2, &[]).await;
    create_topic(&s.a, &t(2), 2, &[]).await;
    let cfg = source_config(
        &src,
        &tgt,
        &s.b,
        &[("topics", &format!("{prefix}-.*")), ("tasks.max", "3")],
    );
    let dir = tempfile::tempdir().unwrap();
    let state = LocalStateStore::new(dir.path());
    let out = run_source_connector_phase(&cfg, &state, "flow", now_ms())
        .await
        .unwrap();
    let expected = [
        "t0-0,t0-3,t0-6,t1-1",
        "t0-1,t0-4,t0-7,t2-0",
        "t0-2,t0-5,t1-0,t2-1",
    ];
    assert_eq!(out.task_partitions.len(), 3);
    assert_eq!(out.task_configs.len(), 3);
    for (i, want) in expected.iter().enumerate() {
        let want = want
            .split(',')
            .map(|tp| format!("{prefix}-{tp}"))
            .collect::<Vec<_>>()
            .join(",");
        let got = out.task_partitions[i]
            .iter()
            .map(|(t, p)| format!("{t}-{p}"))
            .collect::<Vec<_>>()
            .join(",");
        assert_eq!(got, want, "task {i}");
        assert_eq!(out.task_configs[i]["task.assigned.partitions"], want);
        assert_eq!(out.task_configs[i]["task.index"], i.to_string());
    }
    assert_eq!(out.created_topics.len(), 3);
    assert_eq!(
        created_partition_count(&s.b, &format!("{src}.{}", t(0))),
        Some(8)
    );
}

#[tokio::test]
async fn smaller_remote_topic_is_grown_or_warned_about() {
    // §6.4: a remote topic with fewer partitions is grown (Apache Kafka); tansu has no
    // CreatePartitions, so there the phase must warn, naming the topic, and carry on.
    let s = stack();
    let (src, tgt) = aliases();
    let prefix = unique("grow");
    let topic = format!("{prefix}-t");
    let remote = format!("{src}.{topic}");
    create_topic(&s.a, &topic, 3, &[]).await;
    create_topic(&s.b, &remote, 1, &[]).await;
    let cfg = source_config(&src, &tgt, &s.b, &[("topics", &format!("{prefix}-.*"))]);
    let dir = tempfile::tempdir().unwrap();
    let state = LocalStateStore::new(dir.path());
    let out = run_source_connector_phase(&cfg, &state, "flow", now_ms())
        .await
        .unwrap();
    assert!(out.created_topics.is_empty());
    let grown = out.grown_topics == vec![(remote.clone(), 1, 3)];
    let warned = out.warnings.iter().any(|w| w.contains(&remote));
    assert_eq!(
        (grown, warned),
        (s.is_kafka(), !s.is_kafka()),
        "grown {:?}, warnings {:?}",
        out.grown_topics,
        out.warnings
    );
    let on_target = if s.is_kafka() { 3 } else { 1 };
    assert_eq!(created_partition_count(&s.b, &remote), Some(on_target));
    // Tasks still cover every source partition.
    assert_eq!(out.source_partitions.len(), 3);
}

#[tokio::test]
async fn disabled_flow_does_nothing() {
    let s = stack();
    let (src, tgt) = aliases();
    let cfg = source_config(&src, &tgt, &s.b, &[("enabled", "false")]);
    let dir = tempfile::tempdir().unwrap();
    let state = LocalStateStore::new(dir.path());
    let out = run_source_connector_phase(&cfg, &state, "flow", now_ms())
        .await
        .unwrap();
    assert!(out.task_configs.is_empty() && out.source_partitions.is_empty());
    assert_eq!(out.config_sync, SyncRun::Disabled);
    assert!(!topic_exists(&s.a, &cfg.offset_syncs_topic()));
}

#[tokio::test]
async fn unreachable_target_fails_naming_the_cluster() {
    let s = stack();
    let (src, tgt) = aliases();
    // Nothing listens on port 1.
    let mut cfg = source_config(&src, &tgt, "127.0.0.1:1", &[("topics", "none-.*")]);
    // Set directly: `admin.timeout.ms` in mm2.properties also reaches the admin clients as
    // `timeout.ms` (the `admin.` client prefix), which librdkafka rejects.
    cfg.common.admin_timeout = Duration::from_secs(2);
    let dir = tempfile::tempdir().unwrap();
    let state = LocalStateStore::new(dir.path());
    let err = run_source_connector_phase(&cfg, &state, "flow", now_ms())
        .await
        .unwrap_err();
    assert!(matches!(err, ConnectorError::Request { .. }), "{err:?}");
    assert!(err.to_string().contains(&tgt), "{err}");
    let _ = s;
}
