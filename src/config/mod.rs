//! Configuration: from a `mm2.properties` file to the settings each connector and client uses.
//!
//! The flow mirrors MM2's `MirrorMakerConfig`:
//! 1. [`properties`] reads the file exactly like `java.util.Properties.load`.
//! 2. [`mm2`] resolves top-level, cluster-scoped (`A.`) and flow-scoped (`A->B.`) keys into
//!    herder pairs, cluster props, worker configs and connector base configs.
//! 3. [`connector`] turns a connector config into typed settings with MM2's defaults, derives
//!    per-role client configs, and validates.
//! 4. [`providers`] resolves `${env:NAME}` and `${file:path:key}` where MM2 resolves them.
//! 5. [`redact`] decides what of a config may be written where others can read it.

pub mod connector;
pub mod error;
pub mod guarantees;
pub mod mm2;
pub mod properties;
pub mod providers;
pub mod redact;
pub mod secrets_manager;
pub mod slice;
pub mod values;

pub use error::ConfigError;
pub use mm2::{ConnectorKind, MirrorMakerConfig, SourceAndTarget};
pub use properties::Properties;

/// A resolved key/value map. Ordered so output (plan, task configs) is deterministic.
pub type Props = std::collections::BTreeMap<String, String>;

/// `Props` from literal pairs, for tests.
#[cfg(test)]
pub(crate) fn props_of(pairs: &[(&str, &str)]) -> Props {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
