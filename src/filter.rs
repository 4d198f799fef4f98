//! Topic, group and config-property filters: which names MM2 replicates.
//!
//! MM2's filters are lists of Java regular expressions with three rules that surprise people
//! (mm2-compat §2.7, §13 #14), and we keep all three because a config must mean the same thing
//! to us as to a Java MM2 reading the same file:
//!
//! * the value is a `ConfigDef` LIST, split on commas **before** compiling, so `x{1,3}` breaks;
//! * the elements are joined with `|` and must match the **whole** name;
//! * an **empty** list matches nothing (`topics=` replicates no topic at all).
//!
//! Patterns are compiled with `fancy_regex`, which adds the look-around and back-references that
//! Java users put in their filters; plain patterns run on the linear-time `regex` engine.
//!
//! The source connector's final decision (§6.2) also involves the replication policy (heartbeats
//! bypass the filter, internal topics and cycles never pass), so it lives here as
//! [`should_replicate_source_topic`].
//!
//! The `*.blacklist` aliases were removed in MM2 4.0 and are ignored like any unknown key.
//! Only MM2's default filter classes can be used; naming another class is a config error.

use crate::config::values::parse_list;
use crate::config::{ConfigError, Props};
use crate::policy::ReplicationPolicy;

pub const TOPICS: &str = "topics";
pub const TOPICS_EXCLUDE: &str = "topics.exclude";
pub const GROUPS: &str = "groups";
pub const GROUPS_EXCLUDE: &str = "groups.exclude";
pub const CONFIG_PROPERTIES_EXCLUDE: &str = "config.properties.exclude";
pub const USE_DEFAULTS_FROM: &str = "use.defaults.from";
pub const TOPIC_FILTER_CLASS: &str = "topic.filter.class";
pub const GROUP_FILTER_CLASS: &str = "group.filter.class";
pub const CONFIG_PROPERTY_FILTER_CLASS: &str = "config.property.filter.class";

pub const DEFAULT_TOPIC_FILTER_CLASS: &str = "org.apache.kafka.connect.mirror.DefaultTopicFilter";
pub const DEFAULT_GROUP_FILTER_CLASS: &str = "org.apache.kafka.connect.mirror.DefaultGroupFilter";
pub const DEFAULT_CONFIG_PROPERTY_FILTER_CLASS: &str =
    "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter";

pub const DEFAULT_TOPICS: &str = ".*";
pub const DEFAULT_TOPICS_EXCLUDE: &str = ".*[\\-\\.]internal, .*\\.replica, __.*";
pub const DEFAULT_GROUPS: &str = ".*";
pub const DEFAULT_GROUPS_EXCLUDE: &str = "console-consumer-.*, connect-.*, __.*";
pub const DEFAULT_CONFIG_PROPERTIES_EXCLUDE: &str =
    "follower\\.replication\\.throttled\\.replicas, \
     leader\\.replication\\.throttled\\.replicas, \
     message\\.timestamp\\.difference\\.max\\.ms, \
     message\\.timestamp\\.type, \
     unclean\\.leader\\.election\\.enable, \
     min\\.insync\\.replicas";

/// A compiled regex list with MM2's full-match semantics (`MirrorUtils.compilePatternList`).
#[derive(Clone, Debug)]
pub struct RegexList {
    patterns: Vec<String>,
    /// `None` for an empty list, which matches nothing (Java's null pattern).
    regex: Option<fancy_regex::Regex>,
}

impl RegexList {
    /// Compile `patterns` (already split by the LIST parser) as `^(?:p1|p2|...)$`.
    /// `key` names the config key in the error when a pattern does not compile.
    pub fn new(key: &str, patterns: &[String]) -> Result<Self, ConfigError> {
        if patterns.is_empty() {
            return Ok(RegexList {
                patterns: Vec::new(),
                regex: None,
            });
        }
        let joined = patterns.join("|");
        let invalid = |e: fancy_regex::Error| {
            ConfigError::invalid(
                key,
                &patterns.join(", "),
                format!("invalid regular expression `{joined}`: {e}"),
            )
        };
        // Java compiles the bare join; compiling it first keeps a list such as `a)`, `(b` an
        // error instead of letting our wrapper group balance it into a different pattern.
        fancy_regex::Regex::new(&joined).map_err(invalid)?;
        check_java_braces(&joined).map_err(|reason| {
            ConfigError::invalid(
                key,
                &patterns.join(", "),
                format!("invalid regular expression `{joined}`: {reason}"),
            )
        })?;
        let regex = fancy_regex::Regex::new(&format!("^(?:{joined})$")).map_err(invalid)?;
        Ok(RegexList {
            patterns: patterns.to_vec(),
            regex: Some(regex),
        })
    }

    /// Parse a LIST value (`ConfigDef` rules) and compile it.
    pub fn parse(key: &str, value: &str) -> Result<Self, ConfigError> {
        Self::new(key, &parse_list(value))
    }

    /// `props[key]` if present, else `default`, parsed as a LIST and compiled.
    fn from_props(props: &Props, key: &str, default: &str) -> Result<Self, ConfigError> {
        let value = props.get(key).map(String::as_str).unwrap_or(default);
        Self::parse(key, value)
    }

    /// True when the **whole** name matches one of the patterns.
    ///
    /// A pattern that exceeds fancy_regex's backtracking limit on this name counts as no match
    /// (Java would run on, or overflow its stack).
    pub fn matches(&self, name: &str) -> bool {
        match &self.regex {
            Some(re) => re.is_match(name).unwrap_or(false),
            None => false,
        }
    }

    /// The list elements as configured, for plans and logs.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }
}

/// Java rejects a `{` that does not open a valid `{n}`, `{n,}` or `{n,m}` ("Illegal
/// repetition"), while fancy_regex reads it as a literal. Without this check the split-apart
/// `x{1,3}` of §13 #14 would silently become a pattern that matches almost nothing, instead of the
/// error Java MM2 gives.
fn check_java_braces(pattern: &str) -> Result<(), String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    let mut class_depth = 0usize;
    while i < chars.len() {
        match chars[i] {
            '\\' if chars.get(i + 1) == Some(&'Q') => {
                // `\Q...\E` quotes everything up to `\E` (or the end).
                i += 2;
                while i < chars.len() && !(chars[i] == '\\' && chars.get(i + 1) == Some(&'E')) {
                    i += 1;
                }
                i += 2;
                continue;
            }
            '\\' => {
                i += 2;
                continue;
            }
            '[' => class_depth += 1,
            ']' if class_depth > 0 => class_depth -= 1,
            '{' if class_depth == 0 => {
                let rest: String = chars[i + 1..].iter().collect();
                let digits = rest.chars().take_while(char::is_ascii_digit).count();
                let after = &rest[digits..];
                let after = match after.strip_prefix(',') {
                    Some(tail) => tail.trim_start_matches(|c: char| c.is_ascii_digit()),
                    None => after,
                };
                if digits == 0 || !after.starts_with('}') {
                    return Err(format!("Illegal repetition near index {i}"));
                }
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// Reject any filter class other than MM2's default: we cannot load Java classes.
fn check_filter_class(props: &Props, key: &str, supported: &str) -> Result<(), ConfigError> {
    match props.get(key) {
        // ConfigDef CLASS values are trimmed before the class is loaded.
        Some(value) if value.trim() != supported => Err(ConfigError::invalid(
            key,
            value,
            format!("only {supported} is supported (custom filter classes cannot be loaded)"),
        )),
        _ => Ok(()),
    }
}

/// `DefaultTopicFilter`: `topics` minus `topics.exclude`.
#[derive(Clone, Debug)]
pub struct TopicFilter {
    include: RegexList,
    exclude: RegexList,
}

impl TopicFilter {
    pub fn from_props(props: &Props) -> Result<Self, ConfigError> {
        check_filter_class(props, TOPIC_FILTER_CLASS, DEFAULT_TOPIC_FILTER_CLASS)?;
        Ok(TopicFilter {
            include: RegexList::from_props(props, TOPICS, DEFAULT_TOPICS)?,
            exclude: RegexList::from_props(props, TOPICS_EXCLUDE, DEFAULT_TOPICS_EXCLUDE)?,
        })
    }

    pub fn new(include: &[String], exclude: &[String]) -> Result<Self, ConfigError> {
        Ok(TopicFilter {
            include: RegexList::new(TOPICS, include)?,
            exclude: RegexList::new(TOPICS_EXCLUDE, exclude)?,
        })
    }

    /// Included and not excluded: the exclude list wins.
    pub fn should_replicate_topic(&self, topic: &str) -> bool {
        self.include.matches(topic) && !self.exclude.matches(topic)
    }

    pub fn include(&self) -> &RegexList {
        &self.include
    }

    pub fn exclude(&self) -> &RegexList {
        &self.exclude
    }
}

/// `DefaultGroupFilter`: `groups` minus `groups.exclude`, for the checkpoint connector.
#[derive(Clone, Debug)]
pub struct GroupFilter {
    include: RegexList,
    exclude: RegexList,
}

impl GroupFilter {
    pub fn from_props(props: &Props) -> Result<Self, ConfigError> {
        check_filter_class(props, GROUP_FILTER_CLASS, DEFAULT_GROUP_FILTER_CLASS)?;
        Ok(GroupFilter {
            include: RegexList::from_props(props, GROUPS, DEFAULT_GROUPS)?,
            exclude: RegexList::from_props(props, GROUPS_EXCLUDE, DEFAULT_GROUPS_EXCLUDE)?,
        })
    }

    pub fn new(include: &[String], exclude: &[String]) -> Result<Self, ConfigError> {
        Ok(GroupFilter {
            include: RegexList::new(GROUPS, include)?,
            exclude: RegexList::new(GROUPS_EXCLUDE, exclude)?,
        })
    }

    pub fn should_replicate_group(&self, group: &str) -> bool {
        self.include.matches(group) && !self.exclude.matches(group)
    }

    pub fn include(&self) -> &RegexList {
        &self.include
    }

    pub fn exclude(&self) -> &RegexList {
        &self.exclude
    }
}

/// Whose defaults win when a topic config is a default on the source (§6.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UseDefaultsFrom {
    /// Default: a source default becomes a DELETE on the target, reverting to the target's default.
    Target,
    /// Source defaults are copied as explicit values.
    Source,
}

impl UseDefaultsFrom {
    pub fn as_str(self) -> &'static str {
        match self {
            UseDefaultsFrom::Target => "target",
            UseDefaultsFrom::Source => "source",
        }
    }
}

/// `DefaultConfigPropertyFilter`: which topic configs the source connector copies (§6.5).
#[derive(Clone, Debug)]
pub struct ConfigPropertyFilter {
    exclude: RegexList,
    use_defaults_from: UseDefaultsFrom,
}

impl ConfigPropertyFilter {
    /// Reads `config.properties.exclude`, `use.defaults.from` and `config.property.filter.class`.
    ///
    /// `use.defaults.from` is trimmed like a `ConfigDef` STRING. Java treats any value other than
    /// `source` as `target`; we reject anything but these two so a typo does not silently turn
    /// into DELETE ops on the target.
    pub fn from_props(props: &Props) -> Result<Self, ConfigError> {
        check_filter_class(
            props,
            CONFIG_PROPERTY_FILTER_CLASS,
            DEFAULT_CONFIG_PROPERTY_FILTER_CLASS,
        )?;
        let exclude = RegexList::from_props(
            props,
            CONFIG_PROPERTIES_EXCLUDE,
            DEFAULT_CONFIG_PROPERTIES_EXCLUDE,
        )?;
        let use_defaults_from = match props.get(USE_DEFAULTS_FROM) {
            None => UseDefaultsFrom::Target,
            Some(raw) => match raw.trim() {
                "target" => UseDefaultsFrom::Target,
                "source" => UseDefaultsFrom::Source,
                _ => {
                    return Err(ConfigError::invalid(
                        USE_DEFAULTS_FROM,
                        raw,
                        "Expected either \"target\" or \"source\"",
                    ))
                }
            },
        };
        Ok(ConfigPropertyFilter {
            exclude,
            use_defaults_from,
        })
    }

    pub fn new(
        exclude: &[String],
        use_defaults_from: UseDefaultsFrom,
    ) -> Result<Self, ConfigError> {
        Ok(ConfigPropertyFilter {
            exclude: RegexList::new(CONFIG_PROPERTIES_EXCLUDE, exclude)?,
            use_defaults_from,
        })
    }

    /// Not matched by `config.properties.exclude`.
    pub fn should_replicate_config_property(&self, name: &str) -> bool {
        !self.exclude.matches(name)
    }

    /// Whether a source entry that is a default (`DEFAULT_CONFIG`) is copied when a remote topic is
    /// created: only with `use.defaults.from=source`. Java ignores the name too.
    pub fn should_replicate_source_default(&self, _name: &str) -> bool {
        self.use_defaults_from == UseDefaultsFrom::Source
    }

    pub fn exclude(&self) -> &RegexList {
        &self.exclude
    }

    pub fn use_defaults_from(&self) -> UseDefaultsFrom {
        self.use_defaults_from
    }
}

/// §6.2 `MirrorSourceConnector.shouldReplicateTopic` for the flow `* -> target_alias`:
/// passes the filter (or is a heartbeat topic while `heartbeats.replication.enabled`), is not
/// internal, and is not a cycle back to the target.
pub fn should_replicate_source_topic(
    policy: &ReplicationPolicy,
    filter: &TopicFilter,
    topic: &str,
    target_alias: &str,
    heartbeats_replication_enabled: bool,
) -> bool {
    (filter.should_replicate_topic(topic)
        || (heartbeats_replication_enabled && policy.is_heartbeats_topic(topic)))
        && !policy.is_internal_topic(topic)
        && !policy.is_cycle(topic, target_alias)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::props_of as props;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn accept_all() -> TopicFilter {
        TopicFilter::new(&list(&[".*"]), &[]).unwrap()
    }

    fn reject_all() -> TopicFilter {
        TopicFilter::new(&[], &[]).unwrap()
    }

    // §12.2 #17
    #[test]
    fn topics_list_semantics() {
        let f = TopicFilter::from_props(&props(&[(TOPICS, "topic1")])).unwrap();
        assert!(f.should_replicate_topic("topic1"));
        assert!(!f.should_replicate_topic("topic2"));

        let f = TopicFilter::from_props(&props(&[(TOPICS, "")])).unwrap();
        assert!(!f.should_replicate_topic("topic1"));
        assert!(!f.should_replicate_topic(""));
        assert!(f.include().patterns().is_empty());

        let f = TopicFilter::from_props(&props(&[(TOPICS, ".*"), (TOPICS_EXCLUDE, "")])).unwrap();
        for t in ["topic1", "x", "", "a.b-c"] {
            assert!(f.should_replicate_topic(t), "{t:?}");
        }

        let f = TopicFilter::from_props(&props(&[(TOPICS, "topic1, topic2")])).unwrap();
        assert!(f.should_replicate_topic("topic1"));
        assert!(f.should_replicate_topic("topic2"));
        assert!(!f.should_replicate_topic("topic3"));
    }

    // §2.7: full-string match, not a search.
    #[test]
    fn matching_is_full_string() {
        let l = RegexList::parse(TOPICS, "topic").unwrap();
        assert!(l.matches("topic"));
        assert!(!l.matches("topic1"));
        assert!(!l.matches("mytopic"));
        // `a|b` alternation is anchored as a whole, not just its ends.
        let l = RegexList::parse(TOPICS, "a, b").unwrap();
        assert!(!l.matches("ab"));
        assert!(l.matches("b"));
    }

    // §2.7: a trailing comma keeps an empty element, which matches the empty name.
    #[test]
    fn trailing_empty_element_matches_empty_name() {
        let l = RegexList::parse(TOPICS, "a,").unwrap();
        assert_eq!(l.patterns(), &list(&["a", ""])[..]);
        assert!(l.matches(""));
        assert!(l.matches("a"));
    }

    // §13 #15: MM2's default exclusions.
    #[test]
    fn default_topic_filter() {
        let f = TopicFilter::from_props(&Props::new()).unwrap();
        assert_eq!(f.include().patterns(), &list(&[".*"])[..]);
        assert_eq!(
            f.exclude().patterns(),
            &list(&[".*[\\-\\.]internal", ".*\\.replica", "__.*"])[..]
        );
        for t in ["orders", "heartbeats", "us-west.orders"] {
            assert!(f.should_replicate_topic(t), "{t}");
        }
        for t in [
            "a-internal",
            "a.internal",
            "x.replica",
            "__consumer_offsets",
        ] {
            assert!(!f.should_replicate_topic(t), "{t}");
        }
    }

    #[test]
    fn exclude_wins() {
        let f = TopicFilter::new(&list(&["orders.*"]), &list(&["orders-tmp"])).unwrap();
        assert!(f.should_replicate_topic("orders-eu"));
        assert!(!f.should_replicate_topic("orders-tmp"));
    }

    #[test]
    fn java_only_features_work() {
        // Negative look-ahead: everything except topics starting with `tmp`.
        let l = RegexList::parse(TOPICS, "(?!tmp).*").unwrap();
        assert!(l.matches("orders"));
        assert!(!l.matches("tmp-1"));
        // Back-reference.
        let l = RegexList::parse(TOPICS, "(a+)-\\1").unwrap();
        assert!(l.matches("aa-aa"));
        assert!(!l.matches("aa-a"));
    }

    // §13 #14: a `{m,n}` quantifier is split apart by the LIST parser.
    #[test]
    fn comma_quantifier_is_an_error_naming_the_key() {
        let err = TopicFilter::from_props(&props(&[(TOPICS, "x{1,3}")])).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("Invalid value"), "{msg}");
        assert!(msg.contains("for configuration topics"), "{msg}");
    }

    #[test]
    fn braces_follow_java() {
        for ok in ["x{1}", "x{1,}", "x{1,3}", "[{]", "\\{", "\\Q{\\E", "a[x{]b"] {
            assert!(check_java_braces(ok).is_ok(), "{ok}");
        }
        for bad in ["x{1|3}", "{abc}", "x{,3}", "x{a}", "x{1"] {
            assert!(check_java_braces(bad).is_err(), "{bad}");
        }
        // `${...}` placeholders left unresolved are an error in Java too.
        assert!(RegexList::parse(TOPICS, "${env:TOPICS}").is_err());
    }

    #[test]
    fn invalid_regex_is_config_error() {
        for (key, value) in [
            (TOPICS_EXCLUDE, "("),
            (GROUPS, "[a"),
            (CONFIG_PROPERTIES_EXCLUDE, "*x"),
        ] {
            let p = props(&[(key, value)]);
            let err = match key {
                GROUPS => GroupFilter::from_props(&p).unwrap_err(),
                CONFIG_PROPERTIES_EXCLUDE => ConfigPropertyFilter::from_props(&p).unwrap_err(),
                _ => TopicFilter::from_props(&p).unwrap_err(),
            };
            assert!(
                matches!(&err, ConfigError::InvalidValue { key: k, .. } if k == key),
                "{err}"
            );
        }
        // Elements that only balance inside our wrapper group are still rejected, as in Java.
        assert!(RegexList::new(TOPICS, &list(&["a)", "(b"])).is_err());
    }

    #[test]
    fn filter_classes() {
        assert!(TopicFilter::from_props(&props(&[(
            TOPIC_FILTER_CLASS,
            " org.apache.kafka.connect.mirror.DefaultTopicFilter"
        )]))
        .is_ok());
        let err = TopicFilter::from_props(&props(&[(TOPIC_FILTER_CLASS, "com.example.MyFilter")]))
            .unwrap_err();
        assert!(err.to_string().contains(TOPIC_FILTER_CLASS));
        assert!(err.to_string().contains(DEFAULT_TOPIC_FILTER_CLASS));
        assert!(GroupFilter::from_props(&props(&[(
            GROUP_FILTER_CLASS,
            DEFAULT_GROUP_FILTER_CLASS
        )]))
        .is_ok());
        assert!(GroupFilter::from_props(&props(&[(GROUP_FILTER_CLASS, "x.Y")])).is_err());
        assert!(ConfigPropertyFilter::from_props(&props(&[(
            CONFIG_PROPERTY_FILTER_CLASS,
            DEFAULT_CONFIG_PROPERTY_FILTER_CLASS
        )]))
        .is_ok());
        assert!(ConfigPropertyFilter::from_props(&props(&[(
            CONFIG_PROPERTY_FILTER_CLASS,
            DEFAULT_TOPIC_FILTER_CLASS
        )]))
        .is_err());
    }

    // MM2 4.0 removed the `*.blacklist` aliases: they are ignored.
    #[test]
    fn removed_blacklist_aliases_are_ignored() {
        let f = TopicFilter::from_props(&props(&[("topics.blacklist", "orders")])).unwrap();
        assert!(f.should_replicate_topic("orders"));
        let g = GroupFilter::from_props(&props(&[("groups.blacklist", "app")])).unwrap();
        assert!(g.should_replicate_group("app"));
        let c = ConfigPropertyFilter::from_props(&props(&[("config.properties.blacklist", "x")]))
            .unwrap();
        assert!(c.should_replicate_config_property("x"));
    }

    // §13 #15: default group exclusions.
    #[test]
    fn default_group_filter() {
        let g = GroupFilter::from_props(&Props::new()).unwrap();
        assert!(g.should_replicate_group("app"));
        for grp in ["console-consumer-123", "connect-mm2", "__internal"] {
            assert!(!g.should_replicate_group(grp), "{grp}");
        }
        let g =
            GroupFilter::from_props(&props(&[(GROUPS, "app-.*"), (GROUPS_EXCLUDE, "")])).unwrap();
        assert!(g.should_replicate_group("app-1"));
        assert!(!g.should_replicate_group("other"));
        assert_eq!(g.include().patterns(), &list(&["app-.*"])[..]);
        assert!(g.exclude().patterns().is_empty());
    }

    // §12.2 #18, §2.9 defaults, §13 #25.
    #[test]
    fn config_property_filter() {
        let c = ConfigPropertyFilter::from_props(&props(&[(CONFIG_PROPERTIES_EXCLUDE, "prop2")]))
            .unwrap();
        assert!(!c.should_replicate_config_property("prop2"));
        assert!(c.should_replicate_config_property("prop1"));

        let d = ConfigPropertyFilter::from_props(&Props::new()).unwrap();
        for name in [
            "follower.replication.throttled.replicas",
            "leader.replication.throttled.replicas",
            "message.timestamp.difference.max.ms",
            "message.timestamp.type",
            "unclean.leader.election.enable",
            "min.insync.replicas",
        ] {
            assert!(!d.should_replicate_config_property(name), "{name}");
        }
        assert_eq!(d.exclude().patterns().len(), 6);
        // The exact §2.9 string, as a Java MM2 documents and prints it.
        assert_eq!(
            DEFAULT_CONFIG_PROPERTIES_EXCLUDE,
            "follower\\.replication\\.throttled\\.replicas, leader\\.replication\\.throttled\\.replicas, \
             message\\.timestamp\\.difference\\.max\\.ms, message\\.timestamp\\.type, \
             unclean\\.leader\\.election\\.enable, min\\.insync\\.replicas"
        );
        assert!(d.should_replicate_config_property("cleanup.policy"));
        // The dots are escaped: a look-alike is not excluded.
        assert!(d.should_replicate_config_property("minXinsyncXreplicas"));
    }

    // §12.4 #39 (filter part): defaults plus a custom regex.
    #[test]
    fn config_property_exclude_with_custom_regex() {
        let value = format!("{DEFAULT_CONFIG_PROPERTIES_EXCLUDE},exclude_param.*");
        let c = ConfigPropertyFilter::from_props(&props(&[(CONFIG_PROPERTIES_EXCLUDE, &value)]))
            .unwrap();
        assert!(c.should_replicate_config_property("name-1"));
        assert!(!c.should_replicate_config_property("min.insync.replicas"));
        assert!(!c.should_replicate_config_property("exclude_param.param1"));
    }

    // §6.5, §12.4 #38 (filter part): source defaults are kept only with use.defaults.from=source.
    #[test]
    fn use_defaults_from() {
        let t = ConfigPropertyFilter::from_props(&Props::new()).unwrap();
        assert_eq!(t.use_defaults_from(), UseDefaultsFrom::Target);
        assert!(!t.should_replicate_source_default("name-2"));
        let t = ConfigPropertyFilter::from_props(&props(&[(USE_DEFAULTS_FROM, "target")])).unwrap();
        assert!(!t.should_replicate_source_default("name-2"));
        let s =
            ConfigPropertyFilter::from_props(&props(&[(USE_DEFAULTS_FROM, " source ")])).unwrap();
        assert_eq!(s.use_defaults_from().as_str(), "source");
        assert!(s.should_replicate_source_default("name-2"));
        // Excluded properties stay excluded whatever use.defaults.from says.
        assert!(!s.should_replicate_config_property("min.insync.replicas"));
        let err =
            ConfigPropertyFilter::from_props(&props(&[(USE_DEFAULTS_FROM, "both")])).unwrap_err();
        assert!(err.to_string().contains(USE_DEFAULTS_FROM));
    }

    // §12.4 #30
    #[test]
    fn replicates_heartbeats_by_default() {
        let p = ReplicationPolicy::default_policy();
        let f = TopicFilter::from_props(&Props::new()).unwrap();
        for t in ["heartbeats", "us-west.heartbeats"] {
            assert!(
                should_replicate_source_topic(&p, &f, t, "target", true),
                "{t}"
            );
        }
    }

    // §12.4 #31
    #[test]
    fn replicates_heartbeats_despite_filter() {
        let f = reject_all();
        let p = ReplicationPolicy::default_policy();
        assert!(should_replicate_source_topic(
            &p,
            &f,
            "heartbeats",
            "target",
            true
        ));
        assert!(should_replicate_source_topic(
            &p,
            &f,
            "us-west.heartbeats",
            "target",
            true
        ));
        assert!(!should_replicate_source_topic(
            &p, &f, "orders", "target", true
        ));

        // With separator `_`, `us-west.heartbeats` has no source, so its original topic is itself:
        // not a heartbeat topic, and the filter rejects it.
        let p = ReplicationPolicy::from_props(&props(&[(
            crate::policy::REPLICATION_POLICY_SEPARATOR,
            "_",
        )]))
        .unwrap();
        assert!(!p.is_heartbeats_topic("us-west.heartbeats"));
        assert!(should_replicate_source_topic(
            &p,
            &f,
            "heartbeats",
            "target",
            true
        ));
        assert!(!should_replicate_source_topic(
            &p,
            &f,
            "us-west.heartbeats",
            "target",
            true
        ));
        assert!(should_replicate_source_topic(
            &p,
            &f,
            "us-west_heartbeats",
            "target",
            true
        ));
    }

    // §12.4 #32. The Java test's "default filter" is an unconfigured DefaultTopicFilter, which
    // matches nothing: reject-all here.
    #[test]
    fn heartbeats_replication_disabled() {
        let p = ReplicationPolicy::default_policy();
        for t in ["heartbeats", "us-west.heartbeats"] {
            assert!(
                !should_replicate_source_topic(&p, &reject_all(), t, "target", false),
                "{t}"
            );
            assert!(
                should_replicate_source_topic(&p, &accept_all(), t, "target", false),
                "{t}"
            );
        }
    }

    // §12.4 #33
    #[test]
    fn no_cycles() {
        let p = ReplicationPolicy::default_policy();
        let f = accept_all();
        for t in [
            "target.topic1",
            "target.source.topic1",
            "source.target.topic1",
            "target.source.target.topic1",
            "source.target.source.topic1",
        ] {
            assert!(
                !should_replicate_source_topic(&p, &f, t, "target", true),
                "{t}"
            );
        }
        for t in ["topic1", "source.topic1"] {
            assert!(
                should_replicate_source_topic(&p, &f, t, "target", true),
                "{t}"
            );
        }
    }

    // §13 #15: internal topics never pass, whatever the filter says.
    #[test]
    fn internal_topics_never_replicated() {
        let p = ReplicationPolicy::default_policy();
        for t in [
            "__consumer_offsets",
            ".hidden",
            "x-internal",
            "mm2-offsets.A.internal",
        ] {
            assert!(
                !should_replicate_source_topic(&p, &accept_all(), t, "target", true),
                "{t}"
            );
        }
    }

    // §12.4 #34: both with the alias the connector always sets and without one (Java's test).
    #[test]
    fn identity_replication() {
        let f = accept_all();
        for alias in [Some("source"), None] {
            let mut pr = props(&[(
                crate::policy::REPLICATION_POLICY_CLASS,
                crate::policy::IDENTITY_REPLICATION_POLICY_CLASS,
            )]);
            if let Some(a) = alias {
                pr.insert(crate::policy::SOURCE_CLUSTER_ALIAS.into(), a.into());
            }
            let p = ReplicationPolicy::from_props(&pr).unwrap();
            for t in [
                "target.topic1",
                "target.source.topic1",
                "source.target.topic1",
                "target.source.target.topic1",
                "source.target.source.topic1",
                "topic1",
                "othersource.topic1",
                "heartbeats",
                "othersource.heartbeats",
            ] {
                assert!(
                    should_replicate_source_topic(&p, &f, t, "target", true),
                    "{t}"
                );
            }
            for t in [
                "target.heartbeats",
                "target.source.heartbeats",
                "source.target.heartbeats",
                "target.source.target.heartbeats",
                "source.target.source.heartbeats",
            ] {
                assert!(
                    !should_replicate_source_topic(&p, &f, t, "target", true),
                    "{t}"
                );
            }
        }
    }
}
