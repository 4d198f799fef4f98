//! Producer settings that would void what a slice promises, checked before a slice starts.
//!
//! A slice commits a record's offset once the target acknowledged it. With `acks` other than
//! `all` (or `-1`), the broker acknowledges records that a leader failover can still drop, so
//! the committed position would name records that are gone: a silent loss. Java MM2 accepts such
//! settings; mirrorslice refuses them, for the data producer and for the producer of the Connect
//! internal topics (offsets, status, configs), naming the key and where it was set.
//!
//! `max.in.flight.requests.per.connection` above 1 without `enable.idempotence=true` lets a
//! retried batch land after a later one: records reach the target out of order (and may be
//! duplicated), but none is lost. MM2 runs that way when configured so, and so do we, with a
//! loud warning in the log and the slice report.

use super::{ConfigError, MirrorMakerConfig, Props};

/// What the check found that is allowed but weakens a guarantee.
pub type Warnings = Vec<String>;

/// Checks the effective settings of one producer (`role` names it in messages, e.g. "the data
/// producer of A->B"). `config` locates the raw keys that set a refused value.
pub fn check_producer(
    config: &MirrorMakerConfig,
    role: &str,
    props: &Props,
) -> Result<Warnings, ConfigError> {
    let mut warnings = Vec::new();
    if let Some(acks) = props.get("acks") {
        if !matches!(acks.trim().to_ascii_lowercase().as_str(), "all" | "-1") {
            return Err(ConfigError::InvalidValue {
                key: setting_keys(config, "acks", acks),
                value: acks.clone(),
                reason: format!(
                    "{role} must wait for all in-sync replicas (acks=all): a record acknowledged \
                     with acks={acks} can be lost by a leader failover after its offset was \
                     committed"
                ),
                origin: None,
            });
        }
    }
    let in_flight = props
        .get("max.in.flight.requests.per.connection")
        .and_then(|v| v.trim().parse::<u32>().ok())
        .unwrap_or(1);
    let idempotent = props
        .get("enable.idempotence")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if in_flight > 1 && !idempotent {
        warnings.push(format!(
            "{role}: max.in.flight.requests.per.connection={in_flight} without \
             enable.idempotence=true (set by {}): a retried batch can land after a later one, so \
             records may reach the target out of order and duplicated (none is lost)",
            setting_keys(
                config,
                "max.in.flight.requests.per.connection",
                &in_flight.to_string()
            )
        ));
    }
    Ok(warnings)
}

/// The raw keys that set `name` to `value` (`acks`, `B.producer.acks`,
/// `A->B.producer.override.acks`, ...), with the file and line of each.
fn setting_keys(config: &MirrorMakerConfig, name: &str, value: &str) -> String {
    let suffix = format!(".{name}");
    let keys: Vec<String> = config
        .raw()
        .map()
        .iter()
        .filter(|(k, v)| (k.as_str() == name || k.ends_with(&suffix)) && v.trim() == value.trim())
        .map(|(k, _)| match config.origin(k) {
            Some(origin) => format!("{k} ({origin})"),
            None => k.clone(),
        })
        .collect();
    if keys.is_empty() {
        name.to_string()
    } else {
        keys.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::properties::Properties;

    fn config(text: &str) -> MirrorMakerConfig {
        let raw = Properties::parse(text, Some(std::path::Path::new("mm2.properties"))).unwrap();
        MirrorMakerConfig::new(raw).unwrap()
    }

    use crate::config::props_of as props;

    #[test]
    fn acks_other_than_all_is_refused_naming_the_key_and_line() {
        let mm = config("clusters = A, B\nA->B.enabled = true\nB.producer.acks = 1\n");
        let err = check_producer(&mm, "the data producer of A->B", &props(&[("acks", "1")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("B.producer.acks (mm2.properties:3)"), "{err}");
        assert!(
            err.contains("data producer of A->B") && err.contains("acks=all"),
            "{err}"
        );
        for ok in ["all", "-1", " ALL "] {
            assert!(
                check_producer(&mm, "p", &props(&[("acks", ok)])).is_ok(),
                "{ok}"
            );
        }
        assert!(check_producer(&mm, "p", &props(&[("acks", "0")])).is_err());
    }

    #[test]
    fn reordering_in_flight_is_a_warning_unless_idempotent() {
        let mm = config("clusters = A, B\nB.producer.max.in.flight.requests.per.connection = 5\n");
        let p = props(&[("max.in.flight.requests.per.connection", "5")]);
        let warnings = check_producer(&mm, "the data producer", &p).unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("B.producer.max.in.flight.requests.per.connection"));
        let mut idempotent = p.clone();
        idempotent.insert("enable.idempotence".into(), "true".into());
        assert!(check_producer(&mm, "p", &idempotent).unwrap().is_empty());
        let one = props(&[("max.in.flight.requests.per.connection", "1")]);
        assert!(check_producer(&mm, "p", &one).unwrap().is_empty());
    }
}
