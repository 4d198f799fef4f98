//! Connect to a cluster before using it, and fail at once on what retrying cannot fix.
//!
//! librdkafka treats a rejected password, an untrusted certificate or a host name the
//! certificate does not cover as one more connection failure: it reports the cause to the
//! error callback and retries forever, so the API call that was waiting only ends at its own
//! timeout, with `BrokerTransportFailure` or `Timed out` and no cause. A probe asks the
//! cluster for its brokers (a metadata request without topics: one round trip, whatever the
//! cluster's size) while watching the error callback, and ends as soon as either answers.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, DeliveryResult, Producer, ProducerContext};
use rdkafka_sys as rdsys;

use super::certificate_check::{self, Trust};
use super::{client_config, ClientError, MirrorContext};
use crate::config::mm2::is_client_config_name;
use crate::config::Props;

/// How long each metadata request waits before the error callback is looked at again.
const STEP: Duration = Duration::from_millis(100);

/// What a probe found, when nothing was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// The cluster answered with this many brokers.
    Answered { brokers: usize },
    /// Nothing answered within the limit; the last connection error, if one was reported.
    Silent { last_error: Option<String> },
}

/// Keeps the first error retrying cannot fix, and the last of the others.
#[derive(Default)]
struct ProbeContext {
    fatal: Mutex<Option<String>>,
    last: Mutex<Option<String>>,
    /// Connections the listener closed at our first request (see [`closed_at_first_request`]).
    closed_at_first_request: AtomicU32,
}

/// A listener that closes every connection at the client's first request (`ApiVersion`) is
/// not speaking our protocol: usually a TLS listener reached with `security.protocol`
/// PLAINTEXT. librdkafka logs that as a routine disconnect and retries forever; twice in a
/// row is taken as the answer.
const CLOSED_AT_FIRST_REQUEST_LIMIT: u32 = 2;

impl ProbeContext {
    fn set_fatal(&self, reason: String) {
        self.fatal
            .lock()
            .expect("probe context lock")
            .get_or_insert(reason);
    }

    fn set_last(&self, reason: &str) {
        *self.last.lock().expect("probe context lock") = Some(reason.to_string());
    }
}

impl ClientContext for ProbeContext {
    // MSK IAM: librdkafka's own token requests, answered when the client polls (every client
    // also gets tokens on a timer, see msk_iam).
    crate::kafka::msk_iam::answer_token_requests!();
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        // Connection failures are logged (facility FAIL) with their cause, which the error
        // callback does not always get.
        if fac == "FAIL" {
            self.set_last(message);
            if closed_at_first_request(message) {
                let seen = self.closed_at_first_request.fetch_add(1, Ordering::Relaxed) + 1;
                if seen >= CLOSED_AT_FIRST_REQUEST_LIMIT {
                    self.set_fatal(format!(
                        "{message}: the listener closes the connection at the first request; \
                         is security.protocol right for it (SSL or SASL_SSL for a TLS listener)?"
                    ));
                }
            }
        }
        MirrorContext.log(level, fac, message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        if is_fatal(&error, reason) {
            self.set_fatal(reason.to_string());
        } else if error.rdkafka_error_code() != Some(RDKafkaErrorCode::AllBrokersDown) {
            // "1/1 brokers are down" follows each connection failure and hides its cause.
            self.set_last(reason);
        }
        MirrorContext.error(error, reason);
    }
}

fn closed_at_first_request(message: &str) -> bool {
    message.contains("Disconnected") && message.contains("in state APIVERSION_QUERY")
}

impl ProducerContext for ProbeContext {
    type DeliveryOpaque = ();
    fn delivery(&self, _: &DeliveryResult<'_>, _: ()) {}
}

/// Errors that a retry cannot fix: credentials, certificates (ours rejected by the broker
/// arrives as a transport failure carrying the TLS alert, e.g. "SSL alert number 42" for a
/// missing client certificate), a client speaking the wrong protocol to the listener
/// (librdkafka's hint: "incorrect security.protocol configuration").
fn is_fatal(error: &KafkaError, reason: &str) -> bool {
    use RDKafkaErrorCode as C;
    matches!(
        error.rdkafka_error_code(),
        Some(
            C::Authentication
                | C::SSL
                | C::SaslAuthenticationFailed
                | C::UnsupportedSASLMechanism
                | C::IllegalSASLState
        )
    ) || ["security.protocol", "SSL alert number"]
        .iter()
        .any(|hint| reason.contains(hint))
}

/// Does `key` decide where and how a client connects? MirrorMaker's client config names
/// (bootstrap servers, security protocol, `ssl.*`, `sasl.*`) and our librdkafka escape
/// hatch for the same.
fn is_connection_key(key: &str) -> bool {
    is_client_config_name(key)
        || key.strip_prefix("rdkafka.").is_some_and(|name| {
            name.starts_with("ssl.") || name.starts_with("sasl.") || name == "security.protocol"
        })
}

/// One way some of a cluster's clients connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// Its name in errors: `connect`, or `connect as consumer` when not every client connects
    /// alike.
    pub what: String,
    /// The admin connects this way.
    pub admin: bool,
    /// The admin's settings with this way's connection settings.
    pub props: Props,
}

/// The distinct ways a cluster's clients connect. A cluster's clients may connect
/// differently (`A.consumer.sasl.jaas.config` with its own password, say): each distinct set
/// of connection settings among the `admin` and `others` (named by client kind) is one probe,
/// made of the admin's settings with those. The admin's way comes first.
pub fn connections(admin: &Props, others: &[(&str, &Props)]) -> Vec<Connection> {
    let connection_settings = |props: &Props| -> Props {
        props
            .iter()
            .filter(|(k, _)| is_connection_key(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let mut distinct: Vec<(Props, Vec<&str>)> = vec![(connection_settings(admin), vec!["admin"])];
    for (kind, props) in others {
        let settings = connection_settings(props);
        match distinct.iter_mut().find(|(s, _)| *s == settings) {
            Some((_, kinds)) => kinds.push(kind),
            None => distinct.push((settings, vec![kind])),
        }
    }
    let alike = distinct.len() == 1;
    let others: Props = admin
        .iter()
        .filter(|(k, _)| !is_connection_key(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    distinct
        .into_iter()
        .enumerate()
        .map(|(i, (settings, kinds))| {
            let mut props = others.clone();
            props.extend(settings);
            let what = if alike {
                "connect".to_string()
            } else {
                format!("connect as {}", kinds.join(" and "))
            };
            Connection {
                what,
                admin: i == 0,
                props,
            }
        })
        .collect()
}

/// Asks `cluster` for its brokers with the client settings `java` (Java names), for at most
/// `limit`. An error retrying cannot fix ends the probe at once, as an error naming the
/// cluster, its bootstrap servers, `what` was tried (`connect`, `connect as consumer`) and
/// librdkafka's reason.
pub async fn probe(
    cluster: &str,
    what: &str,
    role: &str,
    java: &Props,
    limit: Duration,
) -> Result<Probe, ClientError> {
    let bootstrap = java.get("bootstrap.servers").cloned().unwrap_or_default();
    let (role, props) = (role.to_string(), java.clone());
    // On the blocking pool from the start: an MSK IAM client's first credential may be fetched
    // while its config is made.
    let found =
        tokio::task::spawn_blocking(move || -> Result<Result<Probe, String>, ClientError> {
            let mut config = client_config(&role, &props)?;
            // Connection failures are logged at INFO; the probe needs them whatever our level.
            if (config.log_level as i32) < (RDKafkaLogLevel::Info as i32) {
                config.set_log_level(RDKafkaLogLevel::Info);
            }
            let producer: crate::kafka::Managed<BaseProducer<ProbeContext>> =
                crate::kafka::create(&role, &config, ProbeContext::default())?;
            let found = watch(&producer, limit);
            // Closed before the certificate check, so it stops reconnecting meanwhile.
            drop(producer);
            let trust = Trust::of(|key| config.get(key));
            Ok(found.map_err(|message| with_hint(message, &bootstrap, &trust)))
        })
        .await
        .map_err(|e| connect_error(cluster, what, java, e.to_string()))??;
    found.map_err(|message| connect_error(cluster, what, java, message))
}

fn connect_error(cluster: &str, what: &str, java: &Props, message: String) -> ClientError {
    ClientError::Request {
        cluster: cluster.to_string(),
        bootstrap: java.get("bootstrap.servers").cloned().unwrap_or_default(),
        what: what.into(),
        message,
    }
}

/// librdkafka says the same for an untrusted certificate and for one that does not name the
/// host connected to ("verify that ssl.ca.location is correctly configured"): ask OpenSSL
/// which, or say both when that cannot be found out.
fn with_hint(message: String, bootstrap: &str, trust: &Trust) -> String {
    if !message.contains("certificate verify failed") {
        return message;
    }
    let broker = refused_broker(&message)
        .or_else(|| bootstrap.split(',').next())
        .unwrap_or_default()
        .trim();
    match certificate_check::explain(broker, trust) {
        Some(why) => format!("{message} — {why}"),
        None => format!(
            "{message} — the broker's certificate is not signed by a CA in \
             ssl.truststore.location, or does not name the host connected to ({bootstrap}; \
             host names are checked unless ssl.endpoint.identification.algorithm is empty)"
        ),
    }
}

/// The `host:port` of librdkafka's broker name at the start of its message
/// (`ssl://localhost:9093/bootstrap: SSL handshake failed: ...`).
fn refused_broker(message: &str) -> Option<&str> {
    let (_, rest) = message.split_once("://")?;
    rest.split_once('/').map(|(broker, _)| broker)
}

/// As [`probe`], and silence within `limit` is an error too: the cluster is unreachable.
pub async fn require_answer(
    cluster: &str,
    what: &str,
    role: &str,
    java: &Props,
    limit: Duration,
) -> Result<usize, ClientError> {
    match probe(cluster, what, role, java, limit).await? {
        Probe::Answered { brokers } => Ok(brokers),
        Probe::Silent { last_error } => {
            let last_error = last_error.as_deref();
            let cause = last_error.unwrap_or("no connection error was reported");
            let message = format!("no broker answered within {limit:?}: {cause}");
            Err(connect_error(cluster, what, java, message))
        }
    }
}

/// Polls the error callback and asks for brokers in [`STEP`]s until one of them answers.
fn watch(producer: &BaseProducer<ProbeContext>, limit: Duration) -> Result<Probe, String> {
    let started = Instant::now();
    loop {
        // Serves the error callback (errors are events on the main queue).
        producer.poll(Duration::ZERO);
        let context = producer.context();
        if let Some(fatal) = context.fatal.lock().expect("lock").clone() {
            return Err(fatal);
        }
        let left = limit.saturating_sub(started.elapsed());
        if left.is_zero() {
            let last_error = context.last.lock().expect("lock").clone();
            return Ok(Probe::Silent { last_error });
        }
        if let Some(brokers) = brokers(producer, left.min(STEP)) {
            return Ok(Probe::Answered { brokers });
        }
    }
}

/// One metadata request for no topics (`all_topics` 0, no topic handle: brokers only), which
/// the safe `fetch_metadata` cannot ask for. `None` when no broker answered in `timeout`.
fn brokers(producer: &BaseProducer<ProbeContext>, timeout: Duration) -> Option<usize> {
    let mut metadata: *const rdsys::rd_kafka_metadata = std::ptr::null();
    let timeout_ms = i32::try_from(timeout.as_millis())
        .unwrap_or(i32::MAX)
        .max(1);
    // SAFETY: the client pointer is live for the call; on success librdkafka hands us a
    // metadata struct that we read once and free with its own destructor.
    unsafe {
        let err = rdsys::rd_kafka_metadata(
            producer.client().native_ptr(),
            0,
            std::ptr::null_mut(),
            &mut metadata,
            timeout_ms,
        );
        if err != rdsys::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR || metadata.is_null() {
            return None;
        }
        let count = (*metadata).broker_cnt.max(0) as usize;
        rdsys::rd_kafka_metadata_destroy(metadata);
        Some(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::props_of;

    #[test]
    fn clients_that_connect_alike_are_probed_once_and_others_by_name() {
        let admin = props_of(&[
            ("bootstrap.servers", "a:9092"),
            ("sasl.jaas.config", "right"),
            ("client.id", "admin"),
        ]);
        let producer = props_of(&[
            ("bootstrap.servers", "a:9092"),
            ("sasl.jaas.config", "right"),
            ("linger.ms", "5"),
        ]);
        let alike = connections(&admin, &[("producer", &producer)]);
        let only = Connection {
            what: "connect".into(),
            admin: true,
            props: admin.clone(),
        };
        assert_eq!(alike, vec![only]);

        let mut consumer = admin.clone();
        consumer.insert("sasl.jaas.config".into(), "own".into());
        consumer.insert("rdkafka.ssl.ca.location".into(), "/ca.pem".into());
        consumer.insert("group.id".into(), "g".into());
        let found = connections(&admin, &[("consumer", &consumer), ("producer", &producer)]);
        let whats: Vec<(&str, bool)> = found.iter().map(|c| (c.what.as_str(), c.admin)).collect();
        assert_eq!(
            whats,
            [
                ("connect as admin and producer", true),
                ("connect as consumer", false)
            ]
        );
        // The consumer's connection settings on the admin's others: no group.id.
        let expected = props_of(&[
            ("bootstrap.servers", "a:9092"),
            ("sasl.jaas.config", "own"),
            ("rdkafka.ssl.ca.location", "/ca.pem"),
            ("client.id", "admin"),
        ]);
        assert_eq!(found[1].props, expected);
    }

    #[test]
    fn the_refused_broker_is_read_from_librdkafkas_message() {
        let message = "sasl_ssl://b-1.msk.example:9096/1: SSL handshake failed: \
                       error:0A000086:SSL routines::certificate verify failed";
        assert_eq!(refused_broker(message), Some("b-1.msk.example:9096"));
        assert_eq!(refused_broker("SSL handshake failed"), None);
    }

    #[test]
    fn fatal_errors_are_credentials_certificates_and_protocol_mismatches() {
        let global = |code| KafkaError::Global(code);
        let transport = global(RDKafkaErrorCode::BrokerTransportFailure);
        assert!(is_fatal(&global(RDKafkaErrorCode::Authentication), ""));
        assert!(is_fatal(&global(RDKafkaErrorCode::SSL), ""));
        assert!(is_fatal(
            &transport,
            "Receive failed: error:0A000412:SSL routines::sslv3 alert bad certificate: \
             SSL alert number 42"
        ));
        assert!(is_fatal(
            &transport,
            "Disconnected while requesting ApiVersion: might be caused by incorrect \
             security.protocol configuration (connecting to a SSL listener?)"
        ));
        assert!(!is_fatal(
            &transport,
            "Connect to ipv4#127.0.0.1:1 failed: Connection refused"
        ));
        assert!(!is_fatal(
            &global(RDKafkaErrorCode::AllBrokersDown),
            "1/1 brokers are down"
        ));
    }
}
