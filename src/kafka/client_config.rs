//! Java client settings → librdkafka settings.
//!
//! `mm2.properties` speaks the Java client's language (`sasl.jaas.config`, `ssl.truststore.*`,
//! `max.request.size`, …) while our clients are librdkafka. An existing MM2 file must work
//! unchanged, so every Java key that reaches a client goes through [`translate`]:
//!
//! * keys whose meaning is the same under another name are renamed
//!   (`fetch.max.wait.ms` → `fetch.wait.max.ms`, `max.request.size` → `message.max.bytes`, …);
//! * `sasl.jaas.config` for PLAIN and SCRAM is unpacked into `sasl.username`/`sasl.password`;
//! * Java-only keys with no librdkafka meaning (serializers, interceptors, metric reporters,
//!   `max.poll.records`, …) are dropped and listed in [`Translated::ignored`];
//! * MSK IAM (`AWS_MSK_IAM`, or OAUTHBEARER with AWS's login callback handler) becomes
//!   OAUTHBEARER with tokens we sign ([`super::msk_iam`]);
//! * settings librdkafka cannot honour (JKS stores, Kerberos via JAAS) are a
//!   clear error naming the key, rather than a connection that silently behaves differently;
//! * keys starting with `rdkafka.` pass through verbatim (prefix stripped): an escape hatch for
//!   librdkafka-only tuning, e.g. `A.consumer.rdkafka.queued.max.messages.kbytes`.
//!
//! Everything else passes through with its own name; librdkafka rejects what it does not know,
//! and [`crate::kafka::create`] names the key and the role in that message.

use crate::config::Props;

/// The librdkafka settings for one client, and the Java keys we dropped on purpose.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Translated {
    pub settings: Props,
    pub ignored: Vec<String>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{key}: {reason}")]
pub struct UnsupportedSetting {
    pub key: String,
    pub reason: String,
}

/// Java keys with no librdkafka counterpart. Dropping them changes nothing on the wire.
const IGNORED: &[&str] = &[
    "key.serializer",
    "value.serializer",
    "key.deserializer",
    "value.deserializer",
    "interceptor.classes",
    "metric.reporters",
    "metrics.num.samples",
    "metrics.sample.window.ms",
    "metrics.recording.level",
    "auto.include.jmx.reporter",
    "partitioner.class",
    "partitioner.ignore.keys",
    "partitioner.adaptive.partitioning.enable",
    "partitioner.availability.timeout.ms",
    "max.poll.records",
    "default.api.timeout.ms",
    "max.block.ms",
    "exclude.internal.topics",
    "allow.auto.create.topics",
    "client.dns.lookup",
    "security.providers",
    "sasl.client.callback.handler.class",
    "sasl.login.callback.handler.class",
    "sasl.login.class",
    "ssl.protocol",
    "ssl.enabled.protocols",
    "ssl.provider",
    "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm",
    "ssl.secure.random.implementation",
    "ssl.engine.factory.class",
    "ssl.truststore.type",
    "ssl.keystore.type",
    "retry.backoff.max.ms",
    "reconnect.backoff.max.ms",
    "socket.connection.setup.timeout.ms",
    "socket.connection.setup.timeout.max.ms",
    "enable.metrics.push",
    "forwarding.admin.class",
    // MM2's `admin.timeout.ms` arrives at admin clients as `timeout.ms` through the `admin.`
    // client prefix (§2.6); Java's admin ignores it, librdkafka would reject it.
    "timeout.ms",
];

/// Same meaning, different name.
const RENAMED: &[(&str, &str)] = &[
    ("fetch.max.wait.ms", "fetch.wait.max.ms"),
    ("max.request.size", "message.max.bytes"),
    ("send.buffer.bytes", "socket.send.buffer.bytes"),
    ("receive.buffer.bytes", "socket.receive.buffer.bytes"),
    ("ssl.truststore.certificates", "ssl.ca.pem"),
    ("ssl.keystore.certificate.chain", "ssl.certificate.pem"),
    ("ssl.keystore.key", "ssl.key.pem"),
    ("ssl.cipher.suites", "ssl.cipher.suites"),
    ("reconnect.backoff.ms", "reconnect.backoff.ms"),
];

/// Translate one client's Java settings (as built by MM2's per-role config rules).
pub fn translate(java: &Props) -> Result<Translated, UnsupportedSetting> {
    let mut out = Translated::default();
    let store_type = |key: &str| java.get(key).map(|t| t.trim().to_ascii_uppercase());
    let iam = super::msk_iam::settings::from_java(java, |k| std::env::var(k).ok())?;
    if let Some(settings) = &iam {
        // Either Java form becomes OAUTHBEARER; the token's needs ride in the config string
        // librdkafka hands to the token callback (see msk_iam).
        out.settings
            .insert("sasl.mechanism".into(), "OAUTHBEARER".into());
        out.settings
            .insert("sasl.oauthbearer.config".into(), settings.encode());
    }

    for (key, value) in java {
        if iam.is_some() && matches!(key.as_str(), "sasl.mechanism" | "sasl.jaas.config") {
            continue;
        }
        if let Some(raw) = key.strip_prefix("rdkafka.") {
            out.settings.insert(raw.to_string(), value.clone());
            continue;
        }
        if IGNORED.contains(&key.as_str()) {
            out.ignored.push(key.clone());
            continue;
        }
        if let Some((_, to)) = RENAMED.iter().find(|(from, _)| from == key) {
            out.settings.insert((*to).to_string(), value.clone());
            continue;
        }
        match key.as_str() {
            "security.protocol" => {
                out.settings
                    .insert(key.clone(), value.trim().to_ascii_lowercase());
            }
            "sasl.mechanism" => {
                out.settings.insert(key.clone(), value.trim().to_string());
            }
            "sasl.jaas.config" => unpack_jaas(key, value, &mut out)?,
            "ssl.truststore.location" => match store_type("ssl.truststore.type").as_deref() {
                Some("PEM") => {
                    out.settings.insert("ssl.ca.location".into(), value.clone());
                }
                other => {
                    return Err(unsupported(
                        key,
                        &format!(
                            "librdkafka cannot read a {} trust store; convert it to PEM and set \
                             ssl.truststore.type=PEM",
                            other.unwrap_or("JKS")
                        ),
                    ))
                }
            },
            "ssl.truststore.password" => {
                // Only meaningful for JKS/PKCS12 trust stores, which are rejected above; a PEM
                // trust store has no password.
                out.ignored.push(key.clone());
            }
            "ssl.keystore.location" => match store_type("ssl.keystore.type").as_deref() {
                Some("PKCS12") => {
                    out.settings.insert(key.clone(), value.clone());
                }
                Some("PEM") => {
                    // Java's PEM key store is one file: the private key and its certificate
                    // chain. librdkafka reads each from its own setting; both skip the other's
                    // blocks, so both name the same file.
                    out.settings
                        .insert("ssl.key.location".into(), value.clone());
                    out.settings
                        .insert("ssl.certificate.location".into(), value.clone());
                }
                other => {
                    return Err(unsupported(
                        key,
                        &format!(
                            "librdkafka cannot read a {} key store; use ssl.keystore.type=PKCS12 \
                             or PEM",
                            other.unwrap_or("JKS")
                        ),
                    ))
                }
            },
            "ssl.endpoint.identification.algorithm" => {
                // Java disables host name checks with an empty value; librdkafka wants "none".
                let v = if value.trim().is_empty() {
                    "none"
                } else {
                    value.trim()
                };
                out.settings.insert(key.clone(), v.to_ascii_lowercase());
            }
            "auto.offset.reset" => {
                // Java's "none" throws when there is no position; librdkafka's "error" does too.
                let v = match value.trim() {
                    "none" => "error",
                    other => other,
                };
                out.settings.insert(key.clone(), v.to_string());
            }
            "buffer.memory" => {
                let bytes: u64 = value
                    .trim()
                    .parse()
                    .map_err(|_| unsupported(key, "not a number of bytes"))?;
                out.settings.insert(
                    "queue.buffering.max.kbytes".into(),
                    (bytes / 1024).max(1).to_string(),
                );
            }
            _ => {
                out.settings.insert(key.clone(), value.clone());
            }
        }
    }
    out.ignored.sort();
    Ok(out)
}

pub(crate) fn unsupported(key: &str, reason: &str) -> UnsupportedSetting {
    UnsupportedSetting {
        key: key.to_string(),
        reason: reason.to_string(),
    }
}

/// `sasl.jaas.config` for PLAIN and SCRAM carries the credentials librdkafka wants as
/// `sasl.username`/`sasl.password`:
/// `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`
fn unpack_jaas(key: &str, value: &str, out: &mut Translated) -> Result<(), UnsupportedSetting> {
    let text = value.trim();
    let (module, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let supported = module.ends_with(".PlainLoginModule") || module.ends_with(".ScramLoginModule");
    if !supported {
        return Err(unsupported(
            key,
            &format!("login module {module} is not supported; use PLAIN or SCRAM credentials"),
        ));
    }
    let options = parse_jaas_options(rest).map_err(|reason| unsupported(key, &reason))?;
    for (name, target) in [("username", "sasl.username"), ("password", "sasl.password")] {
        match options.iter().find(|(k, _)| k == name) {
            Some((_, v)) => {
                out.settings.insert(target.to_string(), v.clone());
            }
            None => return Err(unsupported(key, &format!("missing {name}=\"...\""))),
        }
    }
    Ok(())
}

/// An option name as an error may quote it: only when it looks like one, since a malformed
/// option can swallow the text after it, password included.
pub(crate) fn shown(name: &str) -> &str {
    let plain = name.len() <= 32 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        name
    } else {
        "(name not shown)"
    }
}

/// Options after the control flag: `name="quoted value"` or `name=bare`, ended by `;`.
pub(crate) fn parse_jaas_options(rest: &str) -> Result<Vec<(String, String)>, String> {
    let mut chars = rest.trim().chars().peekable();
    // Control flag: required | requisite | sufficient | optional.
    let flag: String = chars
        .by_ref()
        .take_while(|c| !c.is_whitespace() && *c != ';')
        .collect();
    if !matches!(
        flag.as_str(),
        "required" | "requisite" | "sufficient" | "optional"
    ) {
        // What was found is not quoted: without a flag it is an option, maybe the password.
        return Err(
            "expected a JAAS control flag (required, requisite, sufficient or optional) \
             after the login module"
                .into(),
        );
    }
    let mut options = Vec::new();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.peek() {
            None | Some(';') => break,
            _ => {}
        }
        let name: String = chars
            .by_ref()
            .take_while(|c| *c != '=')
            .collect::<String>()
            .trim()
            .to_string();
        let value = if chars.peek() == Some(&'"') {
            chars.next();
            let mut v = String::new();
            loop {
                match chars.next() {
                    Some('\\') => v.extend(chars.next()),
                    Some('"') => break,
                    Some(c) => v.push(c),
                    None => return Err(format!("unterminated quote in option {}", shown(&name))),
                }
            }
            v
        } else {
            let mut v = String::new();
            while let Some(c) = chars.peek() {
                if c.is_whitespace() || *c == ';' {
                    break;
                }
                v.push(*c);
                chars.next();
            }
            v
        };
        if name.is_empty() {
            return Err("empty option name".into());
        }
        options.push((name, value));
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::props_of as props;

    #[test]
    fn renames_and_passes_through() {
        let t = translate(&props(&[
            ("bootstrap.servers", "b1:9092"),
            ("fetch.max.wait.ms", "250"),
            ("max.request.size", "2097152"),
            ("security.protocol", "SASL_SSL"),
            (
                "client.id",
                "A->B|MirrorSourceConnector-0|replication-consumer",
            ),
        ]))
        .unwrap();
        assert_eq!(t.settings["fetch.wait.max.ms"], "250");
        assert_eq!(t.settings["message.max.bytes"], "2097152");
        assert_eq!(t.settings["security.protocol"], "sasl_ssl");
        assert_eq!(t.settings["bootstrap.servers"], "b1:9092");
        assert!(!t.settings.contains_key("fetch.max.wait.ms"));
    }

    #[test]
    fn java_only_keys_are_dropped_and_listed() {
        let t = translate(&props(&[
            ("timeout.ms", "60000"),
            ("max.poll.records", "500"),
            (
                "key.deserializer",
                "org.apache.kafka.common.serialization.ByteArrayDeserializer",
            ),
        ]))
        .unwrap();
        assert!(t.settings.is_empty());
        assert_eq!(
            t.ignored,
            vec!["key.deserializer", "max.poll.records", "timeout.ms"]
        );
    }

    #[test]
    fn plain_and_scram_jaas_unpack_credentials() {
        let t = translate(&props(&[
            ("sasl.mechanism", "SCRAM-SHA-512"),
            (
                "sasl.jaas.config",
                r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="p\"w;d";"#,
            ),
        ]))
        .unwrap();
        assert_eq!(t.settings["sasl.username"], "alice");
        assert_eq!(t.settings["sasl.password"], "p\"w;d");
        assert_eq!(t.settings["sasl.mechanism"], "SCRAM-SHA-512");
        assert!(!t.settings.contains_key("sasl.jaas.config"));
    }

    #[test]
    fn unsupported_settings_name_the_key() {
        let err = translate(&props(&[("ssl.truststore.location", "/x.jks")])).unwrap_err();
        assert_eq!(err.key, "ssl.truststore.location");
        assert!(err.reason.contains("JKS"));

        // MSK IAM over plaintext would send a signed credential in the clear.
        let err = translate(&props(&[("sasl.mechanism", "AWS_MSK_IAM")])).unwrap_err();
        assert_eq!(err.key, "security.protocol");

        let err = translate(&props(&[(
            "sasl.jaas.config",
            "com.sun.security.auth.module.Krb5LoginModule required;",
        )]))
        .unwrap_err();
        assert!(err.reason.contains("Krb5LoginModule"));

        let err = translate(&props(&[(
            "sasl.jaas.config",
            "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\";",
        )]))
        .unwrap_err();
        assert!(err.reason.contains("password"));
    }

    #[test]
    fn msk_iam_becomes_oauthbearer_with_its_settings_for_the_token_callback() {
        let t = translate(&props(&[
            (
                "bootstrap.servers",
                "b-1.c.x1.c2.kafka.eu-west-3.amazonaws.com:9098",
            ),
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "AWS_MSK_IAM"),
            (
                "sasl.jaas.config",
                "software.amazon.msk.auth.iam.IAMLoginModule required awsProfileName=\"dr\";",
            ),
            (
                "sasl.client.callback.handler.class",
                "software.amazon.msk.auth.iam.IAMClientCallbackHandler",
            ),
        ]))
        .unwrap();
        assert_eq!(t.settings["sasl.mechanism"], "OAUTHBEARER");
        assert_eq!(t.settings["security.protocol"], "sasl_ssl");
        assert!(!t.settings.contains_key("sasl.jaas.config"));
        let iam = crate::kafka::msk_iam::settings::IamSettings::decode(
            &t.settings["sasl.oauthbearer.config"],
        )
        .unwrap();
        assert_eq!(iam.region, "eu-west-3");
        assert_eq!(iam.credential.profile.as_deref(), Some("dr"));
        assert_eq!(t.ignored, ["sasl.client.callback.handler.class"]);
    }

    #[test]
    fn malformed_jaas_errors_do_not_quote_the_password() {
        let module = "org.apache.kafka.common.security.scram.ScramLoginModule";
        for jaas in [
            format!("{module} password=\"hunter2\";"),
            format!("{module} required pass\"hunter2\"=\"oops;"),
            format!("{module} required password=\"hunter2;"),
        ] {
            let err = translate(&props(&[("sasl.jaas.config", &jaas)])).unwrap_err();
            assert!(!err.to_string().contains("hunter2"), "{err}");
        }
        let err = crate::config::ConfigError::invalid("ssl.key.password", "hunter2", "too short");
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }

    #[test]
    fn pem_stores_and_endpoint_identification() {
        let t = translate(&props(&[
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", "/ca.pem"),
            ("ssl.keystore.type", "PKCS12"),
            ("ssl.keystore.location", "/client.p12"),
            ("ssl.keystore.password", "pw"),
            ("ssl.endpoint.identification.algorithm", ""),
        ]))
        .unwrap();
        assert_eq!(t.settings["ssl.ca.location"], "/ca.pem");
        assert_eq!(t.settings["ssl.keystore.location"], "/client.p12");
        assert_eq!(t.settings["ssl.keystore.password"], "pw");
        assert_eq!(t.settings["ssl.endpoint.identification.algorithm"], "none");

        let t = translate(&props(&[
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", "/client.pem"),
            ("ssl.key.password", "pw"),
        ]))
        .unwrap();
        assert_eq!(t.settings["ssl.key.location"], "/client.pem");
        assert_eq!(t.settings["ssl.certificate.location"], "/client.pem");
        assert_eq!(t.settings["ssl.key.password"], "pw");
    }

    #[test]
    fn rdkafka_prefix_escape_hatch_and_offset_reset() {
        let t = translate(&props(&[
            ("rdkafka.queued.max.messages.kbytes", "4096"),
            ("auto.offset.reset", "none"),
            ("buffer.memory", "33554432"),
        ]))
        .unwrap();
        assert_eq!(t.settings["queued.max.messages.kbytes"], "4096");
        assert_eq!(t.settings["auto.offset.reset"], "error");
        assert_eq!(t.settings["queue.buffering.max.kbytes"], "32768");
    }
}
