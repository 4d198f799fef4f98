//! MSK IAM end to end: the settings MSK documents for Java clients, unchanged in
//! `mm2.properties`, authenticate every client of `plan` and `run`; and what cannot work (no
//! region, no credential) fails at once naming the cluster.

mod common;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::cli_flow::Flow;
use common::stack;

/// Errors must come before any connection attempt, let alone an API timeout.
const AT_ONCE: Duration = Duration::from_secs(5);

/// The `AWS_MSK_IAM` form, as MSK's documentation writes it, for `alias`.
fn aws_msk_iam(alias: &str, jaas_options: &str) -> String {
    format!(
        "{alias}.security.protocol = SASL_SSL\n\
         {alias}.sasl.mechanism = AWS_MSK_IAM\n\
         {alias}.sasl.jaas.config = software.amazon.msk.auth.iam.IAMLoginModule required{jaas_options};\n\
         {alias}.sasl.client.callback.handler.class = software.amazon.msk.auth.iam.IAMClientCallbackHandler\n"
    )
}

/// `plan` of `flow`, with `env` on top of the stack's environment.
fn plan(flow: &Flow, env: &[(&str, Option<&str>)]) -> Output {
    let mut cmd = Command::new(common::mirrorslice_bin());
    cmd.arg("plan")
        .arg(&flow.config)
        .args(["--flow", &flow.name(), "--json", "--timeout", "30s"])
        .envs(stack().env());
    with_env(&mut cmd, env);
    cmd.output().expect("run mirrorslice plan")
}

/// `run` of `flow`, with `env` on top of the stack's environment.
fn run(flow: &Flow, env: &[(&str, Option<&str>)]) -> Output {
    let mut cmd = flow.command("60s");
    with_env(&mut cmd, env);
    cmd.output().expect("run mirrorslice run")
}

fn with_env(cmd: &mut Command, env: &[(&str, Option<&str>)]) {
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
}

/// `plan` and `run` both exit 1 within [`AT_ONCE`], naming the source cluster and `cause`.
fn assert_fails_at_once(flow: &Flow, env: &[(&str, Option<&str>)], cause: &str) {
    let named = format!("client {}|", flow.source);
    for (command, out) in
        [("plan", plan as fn(&Flow, &[_]) -> Output), ("run", run)].map(|(name, f)| {
            let started = Instant::now();
            let out = f(flow, env);
            let took = started.elapsed();
            assert!(took < AT_ONCE, "{name} took {took:?}");
            (name, out)
        })
    {
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(1), "{command}: {text}");
        assert!(
            text.contains(&named),
            "{command} does not name the cluster: {text}"
        );
        assert!(text.contains(cause), "{command}: {text}");
    }
}

#[test]
fn without_a_region_plan_and_run_fail_at_once_naming_the_cluster() {
    let s = stack();
    let flow = Flow::between(&s.a, &s.b, "");
    flow.add_config(&aws_msk_iam(&flow.source, ""));
    let env = [("AWS_REGION", None), ("AWS_DEFAULT_REGION", None)];
    assert_fails_at_once(&flow, &env, "MSK IAM needs the cluster's region");
}

#[test]
fn without_a_credential_plan_and_run_fail_at_once_naming_the_cluster() {
    let s = stack();
    let dir = tempfile::tempdir().unwrap();
    let nothing = dir.path().join("none");
    let nothing = nothing.to_str().unwrap();
    let no_credential = [
        ("AWS_ACCESS_KEY_ID", None),
        ("AWS_SECRET_ACCESS_KEY", None),
        ("AWS_SESSION_TOKEN", None),
        ("AWS_CONFIG_FILE", Some(nothing)),
        ("AWS_SHARED_CREDENTIALS_FILE", Some(nothing)),
        ("AWS_EC2_METADATA_DISABLED", Some("true")),
    ];
    let flow = Flow::between(&s.a, &s.b, "");
    flow.add_config(&aws_msk_iam(&flow.source, ""));
    assert_fails_at_once(
        &flow,
        &no_credential,
        "MSK IAM: no credential from the default AWS credential chain",
    );
    // A profile that is not there is named.
    let flow = Flow::between(&s.a, &s.b, "");
    flow.add_config(&aws_msk_iam(&flow.source, " awsProfileName=\"dr\""));
    assert_fails_at_once(&flow, &no_credential, "no credential from AWS profile");
}
