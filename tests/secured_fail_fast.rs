//! A rejected password fails every command at once, naming the cluster and the cause —
//! whichever client it belongs to. librdkafka retries a refused login forever, so without a
//! probe a command ends at its own timeout with "timed out". Apache Kafka stack only: cluster
//! A serves the secured listeners (`stack.sh`); see also `secured_clusters.rs`.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::cli_flow::Flow;
use common::secured::secured;
use common::stack;

const SCRAM_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";
/// Well before the commands' own timeouts (`--timeout 60s` below).
const AT_ONCE: Duration = Duration::from_secs(10);

/// `prefix`-scoped SCRAM-SHA-512 settings over SASL_PLAINTEXT.
fn scram(prefix: &str, user: &str, password: &str) -> String {
    format!(
        "{prefix}.security.protocol = SASL_PLAINTEXT\n\
         {prefix}.sasl.mechanism = SCRAM-SHA-512\n\
         {prefix}.sasl.jaas.config = {SCRAM_MODULE} required username=\"{user}\" \
         password=\"{password}\";\n"
    )
}

/// Runs the binary with `args`; exit code, stdout and stderr, and how long it took.
fn timed(args: &[&str]) -> (Option<i32>, String, String, Duration) {
    let started = Instant::now();
    let out = Command::new(common::mirrorslice_bin())
        .args(args)
        .output()
        .expect("run mirrorslice");
    let took = started.elapsed();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    println!(
        "$ mirrorslice {}\n[{:?} in {took:?}]",
        args.join(" "),
        out.status
    );
    (
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr),
        took,
    )
}

/// `translate-offsets` and `failover` read the target's checkpoints: a target that refuses
/// the password fails both within seconds, naming the target and the cause.
#[test]
fn translate_offsets_and_failover_fail_at_once_on_a_wrong_password() {
    let Some(sec) = secured() else { return };
    let s = stack();
    // Flow B->A: the secured cluster A is the target the commands read from.
    let flow = Flow::between(&s.b, &sec.sasl_plaintext, "");
    flow.add_config(&scram(&flow.target, &sec.scram_user, "wrong"));
    let config = flow.config.display().to_string();
    let name = flow.name();
    let named = format!("cluster {} ({}): connect", flow.target, sec.sasl_plaintext);
    for command in ["translate-offsets", "failover"] {
        let args = [
            command,
            &config,
            "--flow",
            &name,
            "--group",
            "g",
            "--timeout",
            "60s",
        ];
        let (code, stdout, stderr, took) = timed(&args);
        let text = format!("{stdout}\n{stderr}");
        assert_eq!(code, Some(1), "{command}: {text}");
        assert!(took < AT_ONCE, "{command} took {took:?}");
        assert!(text.contains(&named), "{command}: {text}");
        assert!(text.contains("Authentication failed"), "{command}: {text}");
    }
}

/// A password set for the source's consumer alone (`A.consumer.sasl.jaas.config`) is tried
/// too: `plan` reports it and exits 1, `run` fails before copying, both naming the consumer.
#[test]
fn a_wrong_consumer_password_fails_plan_and_run_at_once() {
    let Some(sec) = secured() else { return };
    let s = stack();
    let flow = Flow::between(&sec.sasl_plaintext, &s.b, "");
    let a = flow.source.clone();
    flow.add_config(&scram(&a, &sec.scram_user, &sec.scram_password));
    flow.add_config(&scram(&format!("{a}.consumer"), &sec.scram_user, "wrong"));
    let named = format!("cluster {a} ({}): connect as consumer:", sec.sasl_plaintext);

    let config = flow.config.display().to_string();
    let args = [
        "plan",
        &config,
        "--flow",
        &flow.name(),
        "--json",
        "--timeout",
        "60s",
    ];
    let (code, stdout, _, took) = timed(&args);
    assert_eq!(code, Some(1), "plan: {stdout}");
    assert!(took < AT_ONCE, "plan took {took:?}");
    let plan: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let problem = plan["problems"][0].as_str().unwrap_or_default();
    assert!(problem.starts_with(&named), "{problem}");
    assert!(problem.contains("Authentication failed"), "{problem}");

    let started = Instant::now();
    let (code, report, stderr) = flow.run();
    let took = started.elapsed();
    let text = format!("{report}\n{stderr}");
    assert_eq!(code, 1, "{text}");
    assert!(took < AT_ONCE, "run took {took:?}");
    assert!(text.contains(&named), "{text}");
}
