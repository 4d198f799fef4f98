//! **3. Secured listeners** (`MIRRORSLICE_BENCH_ONLY=secured`, Apache Kafka stack only): the
//! same data copied from cluster A through its plaintext, TLS, SCRAM-over-TLS and MSK IAM
//! listeners (`stack.sh`), the three alternating `MIRRORSLICE_BENCH_TP_REPS` times, each copy deleted from
//! B right after its run; then idle slices (caught up: connect, check, commit, exit) of one
//! flow per listener, interleaved `MIRRORSLICE_BENCH_REPS` times. Figures are medians, ratios
//! against plaintext measured in the same run.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use super::{
    create_topic, delete_topics, median, produce, tail, unique, BenchResult, Finished, Flow,
    Settings,
};

/// One way to reach cluster A: a label, the source alias's settings (`{a}` is the alias) and
/// the environment its slices need (MSK IAM: the listener's credential and region).
struct Listener {
    label: &'static str,
    settings: String,
    env: Vec<(&'static str, String)>,
}

/// The secured listeners `stack.sh env` prints, with a SCRAM user made for this run.
fn listeners(s: &Settings) -> BenchResult<Option<Vec<Listener>>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(root.join("infra/local/stack.sh"))
        .arg("env")
        .output()
        .map_err(|e| e.to_string())?;
    let env: BTreeMap<String, String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("export ")?.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let (Some(ssl), Some(sasl_ssl), Some(tls), Some(iam)) = (
        env.get("MIRRORSLICE_STACK_A_SSL"),
        env.get("MIRRORSLICE_STACK_A_SASL_SSL"),
        env.get("MIRRORSLICE_STACK_TLS_DIR"),
        env.get("MIRRORSLICE_STACK_A_IAM"),
    ) else {
        return Ok(None);
    };
    let (user, password) = (unique("benchuser"), unique("benchpw"));
    let created = Command::new(root.join("infra/local/stack.sh"))
        .arg("java-exec")
        .arg(root.join("tests/java/ScramUsers.java"))
        .args([&s.a, &user, &password])
        .output()
        .map_err(|e| e.to_string())?;
    if !created.status.success() {
        return Err(format!(
            "ScramUsers: {}",
            tail(&String::from_utf8_lossy(&created.stderr), 5)
        ));
    }
    let trust =
        format!("{{a}}.ssl.truststore.type = PEM\n{{a}}.ssl.truststore.location = {tls}/ca.pem\n");
    Ok(Some(vec![
        Listener {
            label: "plaintext",
            settings: format!("{{a}}.bootstrap.servers = {}\n", s.a),
            env: Vec::new(),
        },
        Listener {
            label: "TLS",
            settings: format!("{{a}}.bootstrap.servers = {ssl}\n{{a}}.security.protocol = SSL\n")
                + &trust,
            env: Vec::new(),
        },
        Listener {
            label: "SCRAM-SHA-512 over TLS",
            settings: format!(
                "{{a}}.bootstrap.servers = {sasl_ssl}\n\
                 {{a}}.security.protocol = SASL_SSL\n\
                 {{a}}.sasl.mechanism = SCRAM-SHA-512\n\
                 {{a}}.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule \
                 required username=\"{user}\" password=\"{password}\";\n"
            ) + &trust,
            env: Vec::new(),
        },
        Listener {
            label: IAM,
            settings: format!(
                "{{a}}.bootstrap.servers = {}\n\
                 {{a}}.security.protocol = SASL_SSL\n\
                 {{a}}.sasl.mechanism = AWS_MSK_IAM\n\
                 {{a}}.sasl.jaas.config = software.amazon.msk.auth.iam.IAMLoginModule required;\n\
                 {{a}}.sasl.client.callback.handler.class = \
                 software.amazon.msk.auth.iam.IAMClientCallbackHandler\n",
                iam
            ) + &trust,
            env: vec![
                (
                    "AWS_ACCESS_KEY_ID",
                    env["MIRRORSLICE_STACK_IAM_ACCESS_KEY_ID"].clone(),
                ),
                (
                    "AWS_SECRET_ACCESS_KEY",
                    env["MIRRORSLICE_STACK_IAM_SECRET_ACCESS_KEY"].clone(),
                ),
                ("AWS_REGION", env["MIRRORSLICE_STACK_IAM_REGION"].clone()),
                ("AWS_EC2_METADATA_DISABLED", "true".into()),
            ],
        },
    ]))
}

const IAM: &str = "MSK IAM over TLS";

/// A flow from A through `l` (later lines of the file win, so the bootstrap is replaced).
fn flow_through(s: &Settings, topic: &str, l: &Listener) -> BenchResult<Flow> {
    let flow = Flow::new(s, Some(&format!("^{topic}$")), "")?;
    flow.append(&l.settings.replace("{a}", &flow.source))?;
    Ok(flow)
}

fn mb_per_s(report: &serde_json::Value, f: &Finished) -> f64 {
    let bytes = report["slices"][0]["bytes"].as_f64().unwrap_or(0.0);
    bytes / 1e6 / f.wall.as_secs_f64()
}

pub async fn secured(s: &Settings) -> BenchResult<()> {
    let Some(listeners) = listeners(s)? else {
        println!("\n## Secured listeners\n\nskipped: the stack has none (tansu); run with MIRRORSLICE_BROKER=kafka");
        return Ok(());
    };
    let topic = unique("benchsec-");
    create_topic(&s.a, &topic, s.partitions).await?;
    let per_partition = s.records / s.partitions as u64;
    produce(
        &s.a,
        &topic,
        s.partitions,
        per_partition,
        s.size,
        "sec",
        "none",
    )?;

    // Throughput: the listeners alternate, each copy deleted after its run.
    let mut copies: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    let mut idle_flows = Vec::new();
    for rep in 0..s.tp_reps {
        for l in &listeners {
            let flow = flow_through(s, &topic, l)?;
            eprintln!("secured: {} #{} → {}", l.label, rep + 1, flow.name());
            let (f, report) = flow.run_with("600s", "warn", &l.env)?;
            let cpu = f.cpu.map_or(f64::NAN, |c| c.as_secs_f64());
            copies
                .entry(l.label)
                .or_default()
                .push((mb_per_s(&report, &f), cpu));
            if rep + 1 == s.tp_reps {
                idle_flows.push((l.label, flow));
            } else {
                delete_topics(&s.b, &[flow.remote(&topic)]).await;
            }
        }
    }
    // Idle slices: every flow is caught up; interleaved.
    let mut idle: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for _ in 0..s.reps {
        for ((label, flow), l) in idle_flows.iter().zip(&listeners) {
            let (f, _) = flow.run_with("60s", "warn", &l.env)?;
            idle.entry(label)
                .or_default()
                .push(f.wall.as_secs_f64() * 1000.0);
        }
    }
    print_secured(s, &listeners, &copies, &idle);
    tokens_per_idle_slice(&listeners, &idle_flows)?;
    let remotes: Vec<String> = idle_flows.iter().map(|(_, f)| f.remote(&topic)).collect();
    delete_topics(&s.b, &remotes).await;
    delete_topics(&s.a, &[topic]).await;
    Ok(())
}

fn print_secured(
    s: &Settings,
    listeners: &[Listener],
    copies: &BTreeMap<&str, Vec<(f64, f64)>>,
    idle: &BTreeMap<&str, Vec<f64>>,
) {
    let mb = |label: &str| median(&copies[label].iter().map(|c| c.0).collect::<Vec<_>>());
    let cpu = |label: &str| median(&copies[label].iter().map(|c| c.1).collect::<Vec<_>>());
    let idle_ms = |label: &str| median(&idle[label]);
    let base = listeners[0].label;
    println!(
        "\n## Secured listeners: {} records x {} B over {} partitions, medians of {} copies and {} idle slices\n",
        s.records, s.size, s.partitions, s.tp_reps, s.reps
    );
    println!(
        "| source listener | MB/s (wall) | vs plaintext | CPU s | idle slice ms | vs plaintext |"
    );
    println!("|---|---|---|---|---|---|");
    for l in listeners {
        println!(
            "| {} | {:.1} | {:.2}x | {:.2} | {:.0} | {:.2}x |",
            l.label,
            mb(l.label),
            mb(l.label) / mb(base),
            cpu(l.label),
            idle_ms(l.label),
            idle_ms(l.label) / idle_ms(base),
        );
    }
}

/// How many MSK IAM tokens one idle slice signs (our debug log) and presents (one per
/// authenticated connection).
fn tokens_per_idle_slice(listeners: &[Listener], flows: &[(&str, Flow)]) -> BenchResult<()> {
    let Some(((_, flow), l)) = (flows.iter().zip(listeners)).find(|((label, _), _)| *label == IAM)
    else {
        return Ok(());
    };
    let (f, _) = flow.run_with("60s", "warn,mirrorslice::kafka::msk_iam=debug", &l.env)?;
    let signed = f.stderr.matches("MSK IAM token signed").count();
    // Signing alone (the credential is cached in a slice): what each of those tokens cost.
    use mirrorslice::kafka::msk_iam::{token, USER_AGENT};
    let credential =
        aws_credential_types::Credentials::new("AKIDEXAMPLE", "secret", None, None, "bench");
    let rounds = 10_000u32;
    let started = std::time::Instant::now();
    for _ in 0..rounds {
        let now = std::time::SystemTime::now();
        token::token(
            &credential,
            "eu-west-3",
            now,
            token::MAX_VALIDITY,
            USER_AGENT,
        )?;
    }
    let each = started.elapsed() / rounds;
    println!("\nMSK IAM: one idle slice signed {signed} tokens; signing one takes {each:?}.");
    Ok(())
}
