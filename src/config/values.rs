//! Value parsing with Kafka `ConfigDef` semantics (mm2-compat §2.7).
//!
//! Two boolean parsers exist on purpose: `ConfigDef` trims and rejects garbage, while MM2's
//! herder-pair computation uses Java's `Boolean.parseBoolean`, which does neither.

use super::ConfigError;

/// `ConfigDef` LIST: trim; empty gives an empty list; otherwise split on `\s*,\s*`, keeping
/// trailing empty elements (`"a,"` gives `["a", ""]`).
pub fn parse_list(value: &str) -> Vec<String> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Vec::new();
    }
    trimmed
        .split(',')
        .map(|piece| piece.trim().to_string())
        .collect()
}

/// `ConfigDef` BOOLEAN: trimmed, case-insensitive `true`/`false`; anything else is an error.
pub fn parse_bool(key: &str, value: &str) -> Result<bool, ConfigError> {
    let v = value.trim();
    if v.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if v.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(ConfigError::invalid(
            key,
            value,
            "Expected value to be either true or false",
        ))
    }
}

/// Java's `Boolean.parseBoolean`: only a case-insensitive `"true"` is true, **no trimming**.
/// Used by MM2 when computing herder pairs (§1.2, §13 item 12).
pub fn java_parse_boolean(value: Option<&str>) -> bool {
    matches!(value, Some(v) if v.eq_ignore_ascii_case("true"))
}

/// `ConfigDef` LONG (trimmed).
pub fn parse_long(key: &str, value: &str) -> Result<i64, ConfigError> {
    value
        .trim()
        .parse::<i64>()
        .map_err(|_| ConfigError::invalid(key, value, "Not a number of type LONG"))
}

/// `ConfigDef` INT (trimmed).
pub fn parse_int(key: &str, value: &str) -> Result<i32, ConfigError> {
    value
        .trim()
        .parse::<i32>()
        .map_err(|_| ConfigError::invalid(key, value, "Not a number of type INT"))
}

/// `ConfigDef` SHORT (trimmed).
pub fn parse_short(key: &str, value: &str) -> Result<i16, ConfigError> {
    value
        .trim()
        .parse::<i16>()
        .map_err(|_| ConfigError::invalid(key, value, "Not a number of type SHORT"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_rules() {
        assert!(parse_list("").is_empty());
        assert!(parse_list("   ").is_empty());
        assert_eq!(parse_list("a"), vec!["a"]);
        assert_eq!(parse_list(" topic1, topic2 "), vec!["topic1", "topic2"]);
        assert_eq!(parse_list("a,"), vec!["a", ""]);
        assert_eq!(parse_list("x{1,3}"), vec!["x{1", "3}"]);
        assert_eq!(parse_list("a ,\tb"), vec!["a", "b"]);
    }

    #[test]
    fn config_def_boolean_trims_and_rejects_garbage() {
        assert!(parse_bool("k", " TRUE ").unwrap());
        assert!(!parse_bool("k", "false").unwrap());
        let err = parse_bool("emit.checkpoints.enabled", "yes").unwrap_err();
        assert!(err.to_string().contains("emit.checkpoints.enabled"));
    }

    #[test]
    fn java_boolean_does_not_trim() {
        assert!(java_parse_boolean(Some("True")));
        assert!(!java_parse_boolean(Some("true ")));
        assert!(!java_parse_boolean(Some("yes")));
        assert!(!java_parse_boolean(None));
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_long("k", " 60000 ").unwrap(), 60000);
        assert_eq!(parse_int("k", "-1").unwrap(), -1);
        assert!(parse_short("k", "40000").is_err());
        assert!(parse_long("offset.lag.max", "abc")
            .unwrap_err()
            .to_string()
            .contains("offset.lag.max"));
    }
}
