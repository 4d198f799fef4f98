//! What may be written where others can read it: secret-valued keys, and the form of a
//! connector's configs in the config topic.
//!
//! Java Connect writes connector configs to the config topic as the user gave them, so a
//! placeholder (`${env:PASS}`) is stored as a placeholder and the worker resolves it when it
//! starts the connector (KIP-297). Task configs are generated from the *resolved* connector
//! config; before writing them, `AbstractHerder.reverseTransform` puts back the placeholder of
//! every key whose raw connector value held one. We do the same, and go one step further than
//! Java: a secret written literally in `mm2.properties` (a password in `sasl.jaas.config`, an
//! `ssl.key.password`) is replaced by [`HIDDEN`], Java's `Password.HIDDEN`, because anyone who
//! can read `mm2-configs.<source>.internal` would otherwise have it. Nothing reads a secret back
//! from that topic: every invocation takes its credentials from `mm2.properties`.

use super::providers::has_placeholder;
use super::Props;

/// What a redacted value reads as; Java prints `Password` values the same way.
pub const HIDDEN: &str = "[hidden]";

/// Kafka's `PASSWORD`-typed client settings and librdkafka's sensitive properties, as the last
/// part of a key (a key may carry any prefix: `source.consumer.`, `A.admin.`, ...).
const SECRET_SUFFIXES: &[&str] = &[
    "sasl.jaas.config",
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.truststore.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.certificates",
    "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "sasl.password",
    "sasl.oauthbearer.client.secret",
    "sasl.oauthbearer.config",
    "ssl.key.pem",
    "ssl_key",
];

/// Whether `key` holds a secret: a known secret setting under any prefix, or any key that
/// names a password, a secret or credentials (`basic.auth.user.info` included).
pub fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    SECRET_SUFFIXES
        .iter()
        .any(|s| key == *s || key.strip_suffix(s).is_some_and(|p| p.ends_with('.')))
        || ["password", "secret", "credentials", "basic.auth.user.info"]
            .iter()
            .any(|word| key.contains(word))
}

/// `props` with every literal secret replaced by [`HIDDEN`]; placeholders stay, they name
/// where the secret lives, not the secret.
pub fn redact_secrets(props: &Props) -> Props {
    props
        .iter()
        .map(|(k, v)| {
            let safe = !is_secret_key(k) || v.is_empty() || has_placeholder(v);
            (k.clone(), if safe { v.clone() } else { HIDDEN.to_string() })
        })
        .collect()
}

/// Java's `AbstractHerder.reverseTransform`: in each task config, a key whose value in the raw
/// connector config holds a placeholder gets that raw value back.
pub fn reverse_transform(raw_connector: &Props, task_configs: &[Props]) -> Vec<Props> {
    let templated: Vec<(&String, &String)> = raw_connector
        .iter()
        .filter(|(_, v)| has_placeholder(v))
        .collect();
    task_configs
        .iter()
        .map(|task| {
            let mut task = task.clone();
            for (k, raw) in &templated {
                if let Some(v) = task.get_mut(*k) {
                    v.clone_from(raw);
                }
            }
            task
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::props_of as props;

    #[test]
    fn secret_keys_under_any_prefix() {
        for key in [
            "sasl.jaas.config",
            "source.cluster.sasl.jaas.config",
            "target.producer.sasl.jaas.config",
            "source.consumer.ssl.key.password",
            "A.admin.ssl.keystore.password",
            "ssl.truststore.certificates",
            "source.cluster.SASL.PASSWORD",
            "my.custom.api.secret",
            "sasl.oauthbearer.client.credentials.client.id.and.more",
        ] {
            assert!(is_secret_key(key), "{key}");
        }
        for key in [
            "sasl.mechanism",
            "source.cluster.sasl.username",
            "ssl.truststore.location",
            "ssl.keystore.type",
            "key.converter",
            "topics",
            "xsasl.jaas.config",
        ] {
            assert!(!is_secret_key(key), "{key}");
        }
    }

    #[test]
    fn literal_secrets_are_hidden_placeholders_and_empty_values_kept() {
        let jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required \
                    username=\"u\" password=\"s3cr3t\";";
        let p = props(&[
            ("source.cluster.sasl.jaas.config", jaas),
            ("target.producer.ssl.key.password", "${env:KEY_PASS}"),
            ("source.cluster.ssl.truststore.password", ""),
            ("topics", ".*"),
        ]);
        let r = redact_secrets(&p);
        assert_eq!(r["source.cluster.sasl.jaas.config"], HIDDEN);
        assert_eq!(r["target.producer.ssl.key.password"], "${env:KEY_PASS}");
        assert_eq!(r["source.cluster.ssl.truststore.password"], "");
        assert_eq!(r["topics"], ".*");
    }

    #[test]
    fn reverse_transform_restores_placeholders_like_java() {
        let raw = props(&[
            ("source.cluster.ssl.key.password", "${env:KEY_PASS}"),
            ("topics", ".*"),
            ("only.in.connector", "${env:X}"),
        ]);
        let task = props(&[
            ("source.cluster.ssl.key.password", "resolved"),
            ("topics", ".*"),
            ("task.assigned.partitions", "t-0"),
        ]);
        let out = reverse_transform(&raw, &[task]);
        assert_eq!(out[0]["source.cluster.ssl.key.password"], "${env:KEY_PASS}");
        assert_eq!(out[0]["task.assigned.partitions"], "t-0");
        // A key the task does not have is not added.
        assert!(!out[0].contains_key("only.in.connector"));
    }
}
