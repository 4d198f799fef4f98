//! Replication policies: how MM2 names remote topics and how it reads those names back.
//!
//! Every MM2 component agrees on topic names only through the `ReplicationPolicy`: the source
//! connector uses it to name `us-west.orders` on the target and to refuse cycles, the checkpoint
//! connector uses it to name `us-west.checkpoints.internal`, and client tooling
//! (`RemoteClusterUtils`, `MirrorClient`) uses it to walk heartbeat topics back to their origin.
//! A Rust MM2 that names one topic differently breaks that tooling and any Java MM2 that takes over,
//! so this module reproduces Java's two built-in policies exactly (mm2-compat §5), including
//! their odd corners:
//!
//! * `topicSource` splits with Java's `String.split`, which keeps leading empty pieces and drops
//!   trailing ones, so `topicSource(".a")` is `""` and `topicSource("a.")` is null (§5.2, §13 #18).
//! * The separator applies only when its key is present, and the internal-topic separator flag is
//!   read only together with it (§5.2, §13 #17).
//! * `IdentityReplicationPolicy` keeps topic names, so it cannot see cycles except on topics that
//!   end in `heartbeats` (§5.3, §13 #29).
//!
//! Java loads the policy by class name; we support only the two classes that ship with MM2.

use crate::config::values::{java_parse_boolean, parse_bool};
use crate::config::{ConfigError, Props};

pub const DEFAULT_REPLICATION_POLICY_CLASS: &str =
    "org.apache.kafka.connect.mirror.DefaultReplicationPolicy";
pub const IDENTITY_REPLICATION_POLICY_CLASS: &str =
    "org.apache.kafka.connect.mirror.IdentityReplicationPolicy";

pub const REPLICATION_POLICY_CLASS: &str = "replication.policy.class";
pub const REPLICATION_POLICY_SEPARATOR: &str = "replication.policy.separator";
pub const INTERNAL_TOPIC_SEPARATOR_ENABLED: &str =
    "replication.policy.internal.topic.separator.enabled";
/// Read by `IdentityReplicationPolicy.configure`; connector configs always carry it.
pub const SOURCE_CLUSTER_ALIAS: &str = "source.cluster.alias";

pub const SEPARATOR_DEFAULT: &str = ".";
/// `heartbeats` is never renamed by separators (§3).
pub const HEARTBEATS_TOPIC: &str = "heartbeats";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplicationPolicy {
    /// `DefaultReplicationPolicy`: remote topics are `<source><sep><topic>`.
    Default {
        separator: String,
        internal_separator: String,
    },
    /// `IdentityReplicationPolicy`: remote topics keep their names, except heartbeats.
    Identity {
        separator: String,
        internal_separator: String,
        source_cluster_alias: Option<String>,
    },
}

impl Default for ReplicationPolicy {
    fn default() -> Self {
        Self::default_policy()
    }
}

impl ReplicationPolicy {
    /// `DefaultReplicationPolicy` with no configuration: separator `.` everywhere.
    pub fn default_policy() -> Self {
        ReplicationPolicy::Default {
            separator: SEPARATOR_DEFAULT.to_string(),
            internal_separator: SEPARATOR_DEFAULT.to_string(),
        }
    }

    /// Build the policy the way `getConfiguredInstance(replication.policy.class)` would, from the
    /// connector originals or `MirrorClient` props (raw, untrimmed values, as Java passes them to
    /// `configure`).
    pub fn from_props(props: &Props) -> Result<Self, ConfigError> {
        let identity = match props.get(REPLICATION_POLICY_CLASS) {
            None => false,
            // ConfigDef CLASS values are trimmed before the class is loaded.
            Some(raw) => match raw.trim() {
                DEFAULT_REPLICATION_POLICY_CLASS | "DefaultReplicationPolicy" => false,
                IDENTITY_REPLICATION_POLICY_CLASS | "IdentityReplicationPolicy" => true,
                _ => {
                    return Err(ConfigError::invalid(
                        REPLICATION_POLICY_CLASS,
                        raw,
                        format!(
                            "only {DEFAULT_REPLICATION_POLICY_CLASS} and \
                             {IDENTITY_REPLICATION_POLICY_CLASS} are supported \
                             (custom ReplicationPolicy classes cannot be loaded)"
                        ),
                    ))
                }
            },
        };

        let mut separator = SEPARATOR_DEFAULT.to_string();
        let mut internal_enabled = true;
        // Java: the separator applies only if its key is present, and the internal-separator flag
        // is looked at only inside that branch (§5.2, §13 #17).
        if let Some(sep) = props.get(REPLICATION_POLICY_SEPARATOR) {
            separator = sep.clone();
            if let Some(flag) = props.get(INTERNAL_TOPIC_SEPARATOR_ENABLED) {
                // The connector's ConfigDef rejects garbage; the policy itself then applies
                // `Boolean.parseBoolean` to the raw value (so " true " with spaces means false).
                parse_bool(INTERNAL_TOPIC_SEPARATOR_ENABLED, flag)?;
                internal_enabled = java_parse_boolean(Some(flag));
            }
        }
        let internal_separator = if internal_enabled {
            separator.clone()
        } else {
            SEPARATOR_DEFAULT.to_string()
        };

        Ok(if identity {
            ReplicationPolicy::Identity {
                separator,
                internal_separator,
                source_cluster_alias: props.get(SOURCE_CLUSTER_ALIAS).cloned(),
            }
        } else {
            ReplicationPolicy::Default {
                separator,
                internal_separator,
            }
        })
    }

    /// The Java class this policy stands for, for plans and logs.
    pub fn class_name(&self) -> &'static str {
        match self {
            ReplicationPolicy::Default { .. } => DEFAULT_REPLICATION_POLICY_CLASS,
            ReplicationPolicy::Identity { .. } => IDENTITY_REPLICATION_POLICY_CLASS,
        }
    }

    /// `replication.policy.separator` (default `.`).
    pub fn separator(&self) -> &str {
        match self {
            ReplicationPolicy::Default { separator, .. }
            | ReplicationPolicy::Identity { separator, .. } => separator,
        }
    }

    /// The separator used in internal topic names: the separator, or `.` when
    /// `replication.policy.internal.topic.separator.enabled=false` (§3).
    pub fn internal_separator(&self) -> &str {
        match self {
            ReplicationPolicy::Default {
                internal_separator, ..
            }
            | ReplicationPolicy::Identity {
                internal_separator, ..
            } => internal_separator,
        }
    }

    /// Identity only: for topics that end with `heartbeats` it behaves like the default policy, so
    /// heartbeats still carry their path and cycles of heartbeats are still detected (§5.3).
    fn behaves_as_default(&self, topic: &str) -> bool {
        match self {
            ReplicationPolicy::Default { .. } => true,
            ReplicationPolicy::Identity { .. } => topic.ends_with(HEARTBEATS_TOPIC),
        }
    }

    /// The target-side name of `topic` replicated from `source_alias`.
    pub fn format_remote_topic(&self, source_alias: &str, topic: &str) -> String {
        if self.behaves_as_default(topic) {
            format!("{source_alias}{}{topic}", self.separator())
        } else {
            topic.to_string()
        }
    }

    /// The alias of the cluster `topic` was replicated from, or `None` if it is not remote.
    pub fn topic_source(&self, topic: &str) -> Option<String> {
        match self {
            ReplicationPolicy::Identity {
                source_cluster_alias,
                ..
            } if !self.behaves_as_default(topic) => source_cluster_alias.clone(),
            _ => default_topic_source(topic, self.separator()).map(str::to_string),
        }
    }

    /// The name of `topic` one hop upstream, or `None` if it is not remote.
    pub fn upstream_topic(&self, topic: &str) -> Option<String> {
        if !self.behaves_as_default(topic) {
            return Some(topic.to_string());
        }
        let source = default_topic_source(topic, self.separator())?;
        // `source` is a prefix of `topic` followed by the separator, so this slice is in bounds
        // and on a char boundary.
        Some(topic[source.len() + self.separator().len()..].to_string())
    }

    /// Follow `upstream_topic` until it stops (`None`) or stands still (identity policy).
    pub fn original_topic(&self, topic: &str) -> String {
        let mut current = topic.to_string();
        loop {
            match self.upstream_topic(&current) {
                Some(up) if up != current => current = up,
                _ => return current,
            }
        }
    }

    pub fn heartbeats_topic(&self) -> &'static str {
        HEARTBEATS_TOPIC
    }

    /// `mm2-offset-syncs<isep><alias><isep>internal`; the alias is that of the cluster the topic is
    /// **not** on (§3).
    pub fn offset_syncs_topic(&self, cluster_alias: &str) -> String {
        let isep = self.internal_separator();
        format!("mm2-offset-syncs{isep}{cluster_alias}{isep}internal")
    }

    /// `<alias><isep>checkpoints<isep>internal`, on the target cluster.
    pub fn checkpoints_topic(&self, cluster_alias: &str) -> String {
        format!("{cluster_alias}{}", self.checkpoints_suffix())
    }

    fn checkpoints_suffix(&self) -> String {
        let isep = self.internal_separator();
        format!("{isep}checkpoints{isep}internal")
    }

    /// `heartbeats`, or any remote copy of it however many hops away.
    pub fn is_heartbeats_topic(&self, topic: &str) -> bool {
        self.original_topic(topic) == HEARTBEATS_TOPIC
    }

    pub fn is_checkpoints_topic(&self, topic: &str) -> bool {
        topic.ends_with(&self.checkpoints_suffix())
    }

    pub fn is_mm2_internal_topic(&self, topic: &str) -> bool {
        topic.ends_with(&format!("{}internal", self.internal_separator()))
    }

    /// Internal topics are never replicated, whatever the filters say (§13 #15).
    pub fn is_internal_topic(&self, topic: &str) -> bool {
        self.is_mm2_internal_topic(topic)
            || topic.starts_with("__")
            || topic.starts_with('.')
            || topic.ends_with("-internal")
            || topic.ends_with(".internal")
    }

    /// `MirrorSourceConnector.isCycle` for the flow `* -> target_alias` (§5.4): does the topic's
    /// upstream chain pass through the target cluster?
    ///
    /// Iterative rather than recursive, and each step must make progress: with the default policy
    /// the upstream name is strictly shorter; with identity it stands still and we stop (#43).
    pub fn is_cycle(&self, topic: &str, target_alias: &str) -> bool {
        let mut current = topic.to_string();
        loop {
            let Some(source) = self.topic_source(&current) else {
                return false;
            };
            if source == target_alias {
                return true;
            }
            match self.upstream_topic(&current) {
                Some(up) if up != current && up.len() < current.len() => current = up,
                _ => return false,
            }
        }
    }
}

/// `DefaultReplicationPolicy.topicSource`: piece 0 of Java's `topic.split(quote(sep))` when at
/// least two pieces remain.
fn default_topic_source<'t>(topic: &'t str, separator: &str) -> Option<&'t str> {
    let pieces = java_split(topic, separator);
    if pieces.len() < 2 {
        None
    } else {
        Some(pieces[0])
    }
}

/// Java `String.split(Pattern.quote(sep))` with limit 0: leading empty pieces are kept, trailing
/// empty pieces are dropped. An empty separator splits between characters (Java 8+ emits no
/// leading empty piece for a zero-width match at the start).
fn java_split<'t>(s: &'t str, sep: &str) -> Vec<&'t str> {
    let mut pieces: Vec<&'t str> = if sep.is_empty() {
        s.char_indices()
            .map(|(i, c)| &s[i..i + c.len_utf8()])
            .collect()
    } else {
        s.split(sep).collect()
    };
    while pieces.last() == Some(&"") {
        pieces.pop();
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::props_of as props;

    fn default_policy() -> ReplicationPolicy {
        ReplicationPolicy::default_policy()
    }

    fn identity(alias: Option<&str>) -> ReplicationPolicy {
        let mut p = props(&[(REPLICATION_POLICY_CLASS, IDENTITY_REPLICATION_POLICY_CLASS)]);
        if let Some(a) = alias {
            p.insert(SOURCE_CLUSTER_ALIAS.into(), a.into());
        }
        ReplicationPolicy::from_props(&p).unwrap()
    }

    fn with_separator(sep: &str, internal: Option<&str>) -> ReplicationPolicy {
        let mut p = props(&[(REPLICATION_POLICY_SEPARATOR, sep)]);
        if let Some(flag) = internal {
            p.insert(INTERNAL_TOPIC_SEPARATOR_ENABLED.into(), flag.into());
        }
        ReplicationPolicy::from_props(&p).unwrap()
    }

    #[test]
    fn empty_props_give_default_policy() {
        let p = ReplicationPolicy::from_props(&Props::new()).unwrap();
        assert_eq!(p, ReplicationPolicy::default_policy());
        assert_eq!(p.separator(), ".");
        assert_eq!(p.class_name(), DEFAULT_REPLICATION_POLICY_CLASS);
    }

    #[test]
    fn class_names_accepted_and_rejected() {
        for name in [
            DEFAULT_REPLICATION_POLICY_CLASS,
            "DefaultReplicationPolicy",
            " org.apache.kafka.connect.mirror.DefaultReplicationPolicy ",
        ] {
            let p = ReplicationPolicy::from_props(&props(&[(REPLICATION_POLICY_CLASS, name)]));
            assert!(matches!(p, Ok(ReplicationPolicy::Default { .. })), "{name}");
        }
        for name in [
            IDENTITY_REPLICATION_POLICY_CLASS,
            "IdentityReplicationPolicy",
        ] {
            let p = ReplicationPolicy::from_props(&props(&[(REPLICATION_POLICY_CLASS, name)]));
            assert!(
                matches!(p, Ok(ReplicationPolicy::Identity { .. })),
                "{name}"
            );
        }
        let err = ReplicationPolicy::from_props(&props(&[(
            REPLICATION_POLICY_CLASS,
            "com.example.MyPolicy",
        )]))
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains(REPLICATION_POLICY_CLASS), "{msg}");
        assert!(msg.contains("com.example.MyPolicy"), "{msg}");
        assert!(msg.contains(IDENTITY_REPLICATION_POLICY_CLASS), "{msg}");
    }

    // §5.2 table.
    #[test]
    fn topic_source_and_upstream_follow_java_split() {
        let p = default_policy();
        let cases: [(&str, Option<&str>, Option<&str>); 5] = [
            ("a.b.c", Some("a"), Some("b.c")),
            ("a.", None, None),
            ("..", None, None),
            (".a", Some(""), Some("a")), // §13 #18: the empty string, not null
            ("a..b", Some("a"), Some(".b")),
        ];
        for (topic, source, upstream) in cases {
            assert_eq!(
                p.topic_source(topic).as_deref(),
                source,
                "source of {topic:?}"
            );
            assert_eq!(
                p.upstream_topic(topic).as_deref(),
                upstream,
                "upstream of {topic:?}"
            );
        }
        assert_eq!(p.topic_source("topic1"), None);
        assert_eq!(p.topic_source(""), None);
        assert_eq!(p.format_remote_topic("us-west", "orders"), "us-west.orders");
    }

    #[test]
    fn original_topic_walks_all_hops() {
        let p = default_policy();
        assert_eq!(p.original_topic("a.b.c"), "c");
        assert_eq!(p.original_topic("topic1"), "topic1");
        assert_eq!(p.original_topic("s2.s1.heartbeats"), "heartbeats");
        // Identity: upstream == itself must terminate.
        let id = identity(Some("primary"));
        assert_eq!(id.original_topic("a.b.c"), "a.b.c");
        assert_eq!(id.original_topic("x.y.heartbeats"), "heartbeats");
    }

    // §12.3 #25
    #[test]
    fn internal_topics() {
        let p = default_policy();
        assert!(p.is_internal_topic("__consumer_offsets"));
        assert!(p.is_internal_topic(".hiddentopic"));
        assert!(p.is_internal_topic("mm2-offsets.CLUSTER.internal"));
        assert!(p.is_internal_topic("mm2-offsets-CLUSTER-internal"));
        assert!(!p.is_internal_topic("mm2-offsets_CLUSTER_internal"));
        assert!(!p.is_internal_topic("orders"));
    }

    // §12.3 #26, §13 #17
    #[test]
    fn internal_topic_names_follow_separator_flag() {
        for flag in [None, Some("true"), Some("TRUE")] {
            let p = with_separator("__", flag);
            assert_eq!(
                p.offset_syncs_topic("CLUSTER"),
                "mm2-offset-syncs__CLUSTER__internal"
            );
            assert_eq!(
                p.checkpoints_topic("CLUSTER"),
                "CLUSTER__checkpoints__internal"
            );
            assert!(p.is_checkpoints_topic("CLUSTER__checkpoints__internal"));
            assert!(!p.is_checkpoints_topic("CLUSTER.checkpoints.internal"));
            assert_eq!(p.heartbeats_topic(), "heartbeats");
        }
        let p = with_separator("__", Some("false"));
        assert_eq!(
            p.offset_syncs_topic("CLUSTER"),
            "mm2-offset-syncs.CLUSTER.internal"
        );
        assert_eq!(
            p.checkpoints_topic("CLUSTER"),
            "CLUSTER.checkpoints.internal"
        );
        assert!(p.is_checkpoints_topic("CLUSTER.checkpoints.internal"));
        assert!(p.is_mm2_internal_topic("x.internal"));
        assert_eq!(p.heartbeats_topic(), "heartbeats");
        // Remote naming still uses the custom separator.
        assert_eq!(p.format_remote_topic("CLUSTER", "t"), "CLUSTER__t");
    }

    // §13 #17: the flag is ignored unless the separator key is also set.
    #[test]
    fn internal_flag_without_separator_is_ignored() {
        let p =
            ReplicationPolicy::from_props(&props(&[(INTERNAL_TOPIC_SEPARATOR_ENABLED, "false")]))
                .unwrap();
        assert_eq!(p, ReplicationPolicy::default_policy());
        // Even garbage is not looked at by the policy then.
        assert!(ReplicationPolicy::from_props(&props(&[(
            INTERNAL_TOPIC_SEPARATOR_ENABLED,
            "maybe"
        )]))
        .is_ok());
        // With the separator present, garbage is a ConfigDef error naming the key.
        let err = ReplicationPolicy::from_props(&props(&[
            (REPLICATION_POLICY_SEPARATOR, "_"),
            (INTERNAL_TOPIC_SEPARATOR_ENABLED, "maybe"),
        ]))
        .unwrap_err();
        assert!(err.to_string().contains(INTERNAL_TOPIC_SEPARATOR_ENABLED));
    }

    #[test]
    fn separator_is_taken_raw() {
        let p = with_separator("-", None);
        assert_eq!(p.separator(), "-");
        assert_eq!(p.topic_source("us-west-orders").as_deref(), Some("us"));
        assert_eq!(
            p.upstream_topic("us-west-orders").as_deref(),
            Some("west-orders")
        );
        assert_eq!(p.offset_syncs_topic("B"), "mm2-offset-syncs-B-internal");
    }

    #[test]
    fn empty_separator_splits_between_characters() {
        let p = with_separator("", None);
        assert_eq!(p.topic_source("abc").as_deref(), Some("a"));
        assert_eq!(p.upstream_topic("abc").as_deref(), Some("bc"));
        assert_eq!(p.topic_source("a"), None);
        assert_eq!(p.original_topic("abc"), "c");
        assert!(!p.is_cycle("abc", "z"));
        assert!(p.is_cycle("abc", "b"));
    }

    // §12.3 #28
    #[test]
    fn identity_policy_names() {
        let p = identity(Some("primary"));
        assert_eq!(p.format_remote_topic("primary", "topic1"), "topic1");
        assert_eq!(p.topic_source("topic1").as_deref(), Some("primary"));
        assert_eq!(p.upstream_topic("topic1").as_deref(), Some("topic1"));
        assert_eq!(
            p.format_remote_topic("backup", "heartbeats"),
            "backup.heartbeats"
        );
        assert_eq!(
            p.topic_source("backup.heartbeats").as_deref(),
            Some("backup")
        );
        assert_eq!(p.topic_source("heartbeats"), None);
        // Without the alias, plain topics have no source.
        assert_eq!(identity(None).topic_source("topic1"), None);
    }

    // §5.3, §13 #29: a plain suffix test.
    #[test]
    fn identity_looks_like_heartbeat_is_a_suffix_test() {
        let p = identity(Some("primary"));
        assert_eq!(p.format_remote_topic("b", "myheartbeats"), "b.myheartbeats");
        assert_eq!(p.topic_source("myheartbeats"), None);
        assert!(!p.is_heartbeats_topic("myheartbeats"));
        assert!(p.is_heartbeats_topic("b.heartbeats"));
        assert!(!p.is_heartbeats_topic("heartbeats.x"));
    }

    #[test]
    fn identity_reads_separator_too() {
        let p = ReplicationPolicy::from_props(&props(&[
            (REPLICATION_POLICY_CLASS, IDENTITY_REPLICATION_POLICY_CLASS),
            (REPLICATION_POLICY_SEPARATOR, "_"),
            (INTERNAL_TOPIC_SEPARATOR_ENABLED, "false"),
            (SOURCE_CLUSTER_ALIAS, "A"),
        ]))
        .unwrap();
        assert_eq!(p.format_remote_topic("A", "heartbeats"), "A_heartbeats");
        assert_eq!(p.format_remote_topic("A", "t"), "t");
        assert_eq!(p.checkpoints_topic("A"), "A.checkpoints.internal");
        assert_eq!(p.class_name(), IDENTITY_REPLICATION_POLICY_CLASS);
    }

    // §5.4 list, §12.4 #33
    #[test]
    fn cycles_with_default_policy() {
        let p = default_policy();
        for t in [
            "target.topic1",
            "target.source.topic1",
            "source.target.topic1",
            "target.source.target.topic1",
            "source.target.source.topic1",
        ] {
            assert!(p.is_cycle(t, "target"), "{t} is a cycle");
        }
        for t in ["topic1", "source.topic1"] {
            assert!(!p.is_cycle(t, "target"), "{t} is not a cycle");
        }
    }

    // §12.4 #43: odd names never loop or panic.
    #[test]
    fn is_cycle_terminates_on_odd_names() {
        let p = default_policy();
        assert!(!p.is_cycle(".b", "target"));
        assert!(p.is_cycle(".b", "")); // topicSource(".b") is "" (§13 #18)
        for t in ["", ".", "..", "...", "a.", ".a.", "a..b", "....x"] {
            let _ = p.is_cycle(t, "target");
            let _ = p.original_topic(t);
        }
        let id = identity(Some("source"));
        assert!(!id.is_cycle("target.topic1", "target"));
        assert!(id.is_cycle("x.target.heartbeats", "target"));
        // An identity alias equal to the target makes every plain topic a cycle, without looping.
        assert!(identity(Some("target")).is_cycle("topic1", "target"));
    }
}
