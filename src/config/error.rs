//! One error type for everything that can be wrong with a configuration.
//!
//! Messages follow Kafka's `ConfigException` wording where one exists, so users searching
//! for an MM2 error find ours, and always name the key and, when known, the file and line.

use std::fmt;
use std::path::PathBuf;

/// Where a key was defined: the file and 1-based line of its first physical line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub file: PathBuf,
    pub line: usize,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid `.properties` file (for example a malformed `\uXXXX`).
    #[error("{}:{line}: {message}", file.display())]
    Syntax {
        file: PathBuf,
        line: usize,
        message: String,
    },
    /// A value does not parse or is not allowed (Kafka's `ConfigException` wording).
    #[error(
        "Invalid value {value} for configuration {key}: {reason}{}",
        origin_suffix(origin)
    )]
    InvalidValue {
        key: String,
        value: String,
        reason: String,
        origin: Option<Origin>,
    },
    /// A required key is absent.
    #[error("Missing required configuration \"{key}\" which has no default value.")]
    Missing { key: String },
    /// No herder pair is left after applying the rules of MM2 and `--clusters`.
    #[error("No source->target replication flows.")]
    NoFlows,
    /// A `--flow S->T` or alias that is not part of the configuration.
    #[error("{0}")]
    UnknownFlow(String),
    /// A `${provider:path:key}` placeholder could not be resolved.
    #[error("cannot resolve {placeholder} in {key}: {reason}")]
    Provider {
        key: String,
        placeholder: String,
        reason: String,
    },
    /// Connector-level validation failed (MM2's `validate`): one entry per offending key.
    #[error("invalid configuration for {connector}: {}", issues.iter().map(|(k, m)| format!("{k}: {m}")).collect::<Vec<_>>().join("; "))]
    Validation {
        connector: String,
        issues: Vec<(String, String)>,
    },
}

fn origin_suffix(origin: &Option<Origin>) -> String {
    match origin {
        Some(o) => format!(" (at {o})"),
        None => String::new(),
    }
}

impl ConfigError {
    /// A bad value, quoted in the message unless `key` holds a secret.
    pub fn invalid(key: &str, value: &str, reason: impl Into<String>) -> Self {
        let value = if super::redact::is_secret_key(key) {
            super::redact::HIDDEN
        } else {
            value
        };
        ConfigError::InvalidValue {
            key: key.to_string(),
            value: value.to_string(),
            reason: reason.into(),
            origin: None,
        }
    }

    /// Attach the file and line a key came from, when the error is about a value.
    pub fn with_origin(self, origin: Option<Origin>) -> Self {
        match self {
            ConfigError::InvalidValue {
                key,
                value,
                reason,
                origin: None,
            } => ConfigError::InvalidValue {
                key,
                value,
                reason,
                origin,
            },
            other => other,
        }
    }
}
