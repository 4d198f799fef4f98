//! Replication through listeners that enforce TLS, mTLS and SASL (PLAIN, SCRAM-SHA-256,
//! SCRAM-SHA-512), and the errors a wrong password, CA, host name or protocol gives in every
//! command (`plan`, `run`, `translate-offsets`, `failover`; a password of one client alone
//! too): at once, naming the cluster alias and the cause. Apache Kafka stack only: cluster A
//! serves the secured listeners (`stack.sh`), cluster B stays plaintext, so each flow reads
//! through the listener under test and writes offset syncs back through it.

mod common;

use std::time::{Duration, Instant};

use common::cli_flow::Flow;
use common::secured::{sasl, secured, Secured};
use common::{assert_all_copied, create_topic, keyed_records, produce, stack};

/// An authentication or TLS error must end the command well before any API timeout (60 s).
const AT_ONCE: Duration = Duration::from_secs(10);

/// `alias.`-scoped settings trusting the PEM CA file `ca`.
fn trust(alias: &str, ca: &str) -> String {
    format!(
        "{alias}.ssl.truststore.type = PEM\n\
         {alias}.ssl.truststore.location = {ca}\n"
    )
}

/// The user the listener knows for `mechanism`: PLAIN's is in the broker's JAAS file, the
/// SCRAM one is created for this process.
fn user_for<'a>(sec: &'a Secured, mechanism: &str) -> &'a str {
    if mechanism == "PLAIN" {
        "plain-mirror"
    } else {
        &sec.scram_user
    }
}

/// SASL settings for `mechanism` with the credentials the listener knows for it.
fn sasl_for(sec: &Secured, alias: &str, protocol: &str, mechanism: &str) -> String {
    let password = if mechanism == "PLAIN" {
        sec.password("plain.password")
    } else {
        sec.scram_password.clone()
    };
    sasl(
        alias,
        protocol,
        mechanism,
        user_for(sec, mechanism),
        &password,
    )
}

/// One slice of a flow whose source is cluster A reached at `bootstrap` with `settings` (for
/// the source alias): every record reaches B exactly once.
async fn assert_replicates(label: &str, bootstrap: &str, settings: impl Fn(&str) -> String) {
    let s = stack();
    let flow = Flow::between(bootstrap, &s.b, "");
    flow.add_config(&settings(&flow.source));
    let topic = format!("{label}-{}", flow.source);
    create_topic(&s.a, &topic, 2, &[]).await;
    produce(&s.a, &topic, &keyed_records(2, 300)).await;
    let slice = flow.run_ok();
    assert_eq!(slice["records"], 300, "{slice:#}");
    let duplicates = assert_all_copied(&s.b, &flow.remote(&topic), 2, 300).await;
    assert_eq!(duplicates, 0);
}

#[tokio::test]
async fn sasl_mechanisms_over_plaintext_replicate() {
    let Some(sec) = secured() else { return };
    for mechanism in ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] {
        let label = mechanism.to_ascii_lowercase();
        assert_replicates(&label, &sec.sasl_plaintext, |a| {
            sasl_for(sec, a, "SASL_PLAINTEXT", mechanism)
        })
        .await;
    }
}

#[tokio::test]
async fn sasl_mechanisms_over_tls_replicate() {
    let Some(sec) = secured() else { return };
    for mechanism in ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] {
        let label = format!("tls-{}", mechanism.to_ascii_lowercase());
        assert_replicates(&label, &sec.sasl_ssl, |a| {
            sasl_for(sec, a, "SASL_SSL", mechanism) + &trust(a, &sec.file("ca.pem"))
        })
        .await;
    }
}

#[tokio::test]
async fn tls_with_a_pem_trust_store_replicates() {
    let Some(sec) = secured() else { return };
    assert_replicates("tls", &sec.ssl, |a| {
        format!("{a}.security.protocol = SSL\n") + &trust(a, &sec.file("ca.pem"))
    })
    .await;
}

#[tokio::test]
async fn mtls_with_pkcs12_or_pem_key_stores_replicates() {
    let Some(sec) = secured() else { return };
    assert_replicates("mtls-p12", &sec.mtls, |a| {
        format!(
            "{a}.security.protocol = SSL\n\
             {a}.ssl.keystore.type = PKCS12\n\
             {a}.ssl.keystore.location = {}\n\
             {a}.ssl.keystore.password = {}\n",
            sec.file("client.p12"),
            sec.password("client.p12.password")
        ) + &trust(a, &sec.file("ca.pem"))
    })
    .await;
    // Java's PEM key store: the encrypted key and its certificate in one file.
    assert_replicates("mtls-pem", &sec.mtls, |a| {
        format!(
            "{a}.security.protocol = SSL\n\
             {a}.ssl.keystore.type = PEM\n\
             {a}.ssl.keystore.location = {}\n\
             {a}.ssl.key.password = {}\n",
            sec.file("client-keystore.pem"),
            sec.password("client.key.password")
        ) + &trust(a, &sec.file("ca.pem"))
    })
    .await;
}

/// `plan` and `run` of a flow from A at `bootstrap` with `settings` both fail within
/// [`AT_ONCE`], naming the source alias and containing `cause`.
fn assert_refused_at_once(bootstrap: &str, settings: impl Fn(&str) -> String, cause: &str) {
    assert_refused_as(bootstrap, settings, "connect", cause)
}

/// [`assert_refused_at_once`], for a probe named `what` (`connect as consumer`).
fn assert_refused_as(bootstrap: &str, settings: impl Fn(&str) -> String, what: &str, cause: &str) {
    let s = stack();
    let flow = Flow::between(bootstrap, &s.b, "");
    flow.add_config(&settings(&flow.source));

    let started = Instant::now();
    let out = std::process::Command::new(common::mirrorslice_bin())
        .arg("plan")
        .arg(&flow.config)
        .args(["--flow", &flow.name(), "--json", "--timeout", "60s"])
        .output()
        .expect("run mirrorslice plan");
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "plan: {stdout}");
    assert!(took < AT_ONCE, "plan took {took:?}");
    let plan: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let problem = plan["problems"][0].as_str().unwrap_or_default().to_string();
    let named = format!("cluster {} ({bootstrap}): {what}:", flow.source);
    assert!(problem.starts_with(&named), "{problem}");
    assert!(problem.contains(cause), "{problem}");

    let started = Instant::now();
    let (code, report, stderr) = flow.run();
    let took = started.elapsed();
    assert_eq!(code, 1, "{report:#}\n{stderr}");
    assert!(took < AT_ONCE, "run took {took:?}");
    let text = format!("{report}\n{stderr}");
    assert!(text.contains(&named) && text.contains(cause), "{text}");
}

/// The cause librdkafka reports for a wrong password: the broker's own words, which differ
/// between PLAIN's authenticator and SCRAM's (the latter naming the mechanism).
fn wrong_password_cause(mechanism: &str) -> String {
    let why = if mechanism == "PLAIN" {
        "Authentication failed: Invalid username or password".to_string()
    } else {
        format!(
            "Authentication failed during authentication due to invalid credentials \
             with SASL mechanism {mechanism}"
        )
    };
    format!("SASL authentication error: {why}")
}

// Each mechanism over each SASL listener, a known user with a wrong password. Six cases of
// `plan` and `run`, each refused in about a second, so they run one after the other.
#[test]
fn a_wrong_password_fails_at_once_naming_the_cluster() {
    let Some(sec) = secured() else { return };
    let ca = sec.file("ca.pem");
    // Over SASL_SSL the broker's SASL answer also shows TLS was negotiated: a client speaking
    // plaintext to that listener gets a transport error instead.
    for (protocol, bootstrap) in [
        ("SASL_PLAINTEXT", &sec.sasl_plaintext),
        ("SASL_SSL", &sec.sasl_ssl),
    ] {
        for mechanism in ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] {
            let settings = |a: &str| {
                let user = user_for(sec, mechanism);
                let sasl = sasl(a, protocol, mechanism, user, "wrong");
                match protocol {
                    "SASL_SSL" => sasl + &trust(a, &ca),
                    _ => sasl,
                }
            };
            eprintln!("wrong password: {mechanism} over {protocol}");
            assert_refused_at_once(bootstrap, settings, &wrong_password_cause(mechanism));
        }
    }
}

#[test]
fn an_untrusted_certificate_fails_at_once_naming_the_cluster() {
    let Some(sec) = secured() else { return };
    // A CA of this test's own: the broker's certificate was not signed by it.
    let dir = tempfile::tempdir().unwrap();
    let other_ca = dir.path().join("other-ca.pem");
    let out = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=not the test CA", "-keyout"])
        .arg(dir.path().join("other-ca.key"))
        .arg("-out")
        .arg(&other_ca)
        .output()
        .expect("run openssl");
    assert!(out.status.success(), "{out:?}");
    let ca = other_ca.display().to_string();
    assert_refused_at_once(
        &sec.ssl,
        |a| format!("{a}.security.protocol = SSL\n") + &trust(a, &ca),
        &format!(
            "fails verification: unable to get local issuer certificate; no CA in the trust \
             store {ca} signed it"
        ),
    );
}

#[test]
fn a_host_name_the_certificate_does_not_cover_fails_at_once() {
    let Some(sec) = secured() else { return };
    // The certificate is for "localhost" only; the same listener as 127.0.0.1.
    let by_ip = sec.ssl.replace("localhost", "127.0.0.1");
    assert_refused_at_once(
        &by_ip,
        |a| format!("{a}.security.protocol = SSL\n") + &trust(a, &sec.file("ca.pem")),
        "the broker's certificate does not name 127.0.0.1 (it names localhost)",
    );
}

#[test]
fn mtls_without_a_client_certificate_or_plaintext_to_tls_fails_at_once() {
    let Some(sec) = secured() else { return };
    assert_refused_at_once(
        &sec.mtls,
        |a| format!("{a}.security.protocol = SSL\n") + &trust(a, &sec.file("ca.pem")),
        "SSL",
    );
    assert_refused_at_once(&sec.ssl, |_| String::new(), "security.protocol");
}

/// A password set for the source's consumer alone (`A.consumer.sasl.jaas.config`) is tried
/// too: `plan` and `run` fail at once, naming the consumer.
#[test]
fn a_wrong_consumer_password_fails_at_once_naming_the_consumer() {
    let Some(sec) = secured() else { return };
    let (user, password) = (&sec.scram_user, &sec.scram_password);
    assert_refused_as(
        &sec.sasl_plaintext,
        |a| {
            sasl(a, "SASL_PLAINTEXT", "SCRAM-SHA-512", user, password)
                + &sasl(
                    &format!("{a}.consumer"),
                    "SASL_PLAINTEXT",
                    "SCRAM-SHA-512",
                    user,
                    "wrong",
                )
        },
        "connect as consumer",
        "Authentication failed",
    );
}

/// `translate-offsets` and `failover` read the target's checkpoints: a target that refuses
/// the password fails both at once, naming the target and the cause (without a probe they
/// ended at `--timeout`, "timed out").
#[test]
fn translate_offsets_and_failover_fail_at_once_on_a_wrong_password() {
    let Some(sec) = secured() else { return };
    // Flow B->A: the secured cluster A is the target the commands read from.
    let flow = Flow::between(&stack().b, &sec.sasl_plaintext, "");
    let settings = sasl(
        &flow.target,
        "SASL_PLAINTEXT",
        "SCRAM-SHA-512",
        &sec.scram_user,
        "wrong",
    );
    flow.add_config(&settings);
    let named = format!("cluster {} ({}): connect:", flow.target, sec.sasl_plaintext);
    for command in ["translate-offsets", "failover"] {
        let started = Instant::now();
        let out = std::process::Command::new(common::mirrorslice_bin())
            .arg(command)
            .arg(&flow.config)
            .args(["--flow", &flow.name(), "--group", "g", "--timeout", "60s"])
            .output()
            .expect("run mirrorslice");
        let took = started.elapsed();
        let text = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{command}: {text}");
        assert!(took < AT_ONCE, "{command} took {took:?}");
        assert!(text.contains(&named), "{command}: {text}");
        assert!(text.contains("Authentication failed"), "{command}: {text}");
    }
}

// MSK's SCRAM setup: the credentials in a Secrets Manager secret named `AmazonMSK_…` holding
// `{"username":…,"password":…}`, referenced from `sasl.jaas.config`, over TLS.
#[tokio::test]
async fn scram_credentials_from_secrets_manager_replicate() {
    let Some(sec) = secured() else { return };
    let secret = common::unique("AmazonMSK_mirror");
    let value = serde_json::json!({"username": sec.scram_user, "password": sec.scram_password});
    common::secrets::put_secret(&secret, &value.to_string()).await;
    assert_replicates("sm-scram", &sec.sasl_ssl, |a| {
        "config.providers = secrets\n\
         config.providers.secrets.class = mirrorslice.config.provider.SecretsManagerConfigProvider\n"
            .to_string()
            + &sasl(
            a,
            "SASL_SSL",
            "SCRAM-SHA-512",
            &format!("${{secrets:{secret}:username}}"),
            &format!("${{secrets:{secret}:password}}"),
        ) + &trust(a, &sec.file("ca.pem"))
    })
    .await;
}
