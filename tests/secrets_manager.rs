//! `${secrets:…}` placeholders resolved from AWS Secrets Manager (the stack's moto), as MSK
//! users keep their cluster credentials: a slice replicates with settings taken from secrets,
//! the config topic keeps the placeholders, and a missing secret or key stops the command
//! naming the secret, the key and the property, never a value.

mod common;

use common::cli_flow::Flow;
use common::secrets::put_secret;
use common::{assert_all_copied, consume_all, create_topic, keyed_records, produce, stack, unique};

/// Declares the provider under the class name of MSK's own config providers.
const PROVIDER: &str = "config.providers = secrets\n\
     config.providers.secrets.class = com.amazonaws.kafka.config.providers.SecretsManagerConfigProvider\n";

#[tokio::test]
async fn settings_from_secrets_replicate_and_stay_placeholders_in_the_config_topic() {
    let s = stack();
    // A JSON secret read by key (through its ARN) and a plain one read whole (by name).
    let planted = unique("planted-secret-value");
    let json = serde_json::json!({"bootstrap": s.a, "token": planted}).to_string();
    let json_arn = put_secret(&unique("mm2-source"), &json).await;
    let plain = unique("mm2-target");
    put_secret(&plain, &s.b).await;

    let source_placeholder = format!("${{secrets:{json_arn}:bootstrap}}");
    let target_placeholder = format!("${{secrets:{plain}}}");
    let token_placeholder = format!("${{secrets:{json_arn}:token}}");
    let flow = Flow::between(&source_placeholder, &target_placeholder, PROVIDER);
    // A secret in a setting the connector config carries (and librdkafka never sees).
    flow.add_config(&format!(
        "{}.sasl.oauthbearer.client.secret.unused = {token_placeholder}\n",
        flow.source
    ));
    let topic = format!("orders-{}", flow.source);
    create_topic(&s.a, &topic, 2, &[]).await;
    produce(&s.a, &topic, &keyed_records(2, 100)).await;
    let slice = flow.run_ok();
    assert_eq!(slice["records"], 100, "{slice:#}");
    assert_eq!(
        assert_all_copied(&s.b, &flow.remote(&topic), 2, 100).await,
        0
    );

    let configs = format!("mm2-configs.{}.internal", flow.source);
    let records = consume_all(&s.b, &configs, 1).await;
    let text: String = records
        .iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
        .collect();
    assert!(text.contains(&source_placeholder), "{text}");
    assert!(text.contains(&token_placeholder), "{text}");
    assert!(
        !text.contains(&planted),
        "the resolved secret is in {configs}"
    );
}

#[tokio::test]
async fn a_missing_secret_or_key_names_secret_key_and_property() {
    let s = stack();
    let planted = unique("planted");
    let id = unique("mm2-creds");
    put_secret(&id, &serde_json::json!({"password": planted}).to_string()).await;
    for (placeholder, expected) in [
        (
            format!("${{secrets:{id}:username}}"),
            format!("secret {id} has no key username"),
        ),
        (
            format!("${{secrets:{id}-missing:password}}"),
            format!("secret {id}-missing:"),
        ),
    ] {
        let flow = Flow::between(&s.a, &s.b, PROVIDER);
        let property = format!("{}.ssl.key.password", flow.source);
        flow.add_config(&format!("{property} = {placeholder}\n"));
        let out = flow.command("30s").output().expect("run mirrorslice");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(&expected), "{stderr}");
        assert!(stderr.contains(&placeholder), "{stderr}");
        assert!(stderr.contains(&property), "{stderr}");
        assert!(!stderr.contains(&planted), "{stderr}");
    }
}

/// `plan` of `flow` with the stack's environment but no `AWS_ENDPOINT_URL_SECRETS_MANAGER`:
/// Secrets Manager is reached through the generic `AWS_ENDPOINT_URL`, set to `endpoint`.
/// DynamoDB keeps its own variable, which the generic one does not override.
fn plan_with_generic_endpoint(flow: &Flow, endpoint: &str) -> std::process::Output {
    std::process::Command::new(common::mirrorslice_bin())
        .arg("plan")
        .arg(&flow.config)
        .args(["--flow", &flow.name(), "--json", "--timeout", "30s"])
        .envs(stack().env())
        .env_remove("AWS_ENDPOINT_URL_SECRETS_MANAGER")
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("MIRRORSLICE_LOG", "warn")
        .output()
        .expect("run mirrorslice plan")
}

#[tokio::test]
async fn the_generic_aws_endpoint_url_reaches_secrets_manager() {
    let s = stack();
    // The source's bootstrap servers only in a secret: the plan lists the topic only if the
    // secret was read.
    let id = unique("mm2-generic-endpoint");
    put_secret(&id, &s.a).await;
    let placeholder = format!("${{secrets:{id}}}");
    let flow = Flow::between(&placeholder, &s.b, PROVIDER);
    let topic = format!("listed-{}", flow.source);
    create_topic(&s.a, &topic, 2, &[]).await;

    let out = plan_with_generic_endpoint(&flow, &s.dynamodb);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let plan: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let topics = plan["flows"][0]["topics"].as_array().cloned();
    let listed = topics
        .unwrap_or_default()
        .into_iter()
        .find(|t| t["source_topic"] == *topic);
    assert_eq!(
        listed.map(|t| t["partitions"].clone()),
        Some(2.into()),
        "{plan:#}"
    );

    // A generic endpoint where nothing answers fails the same command, naming the secret: the
    // secret above came through that variable, not through another route to moto.
    let out = plan_with_generic_endpoint(&flow, "http://127.0.0.1:9");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    // The SDK's reason names the address it could not reach.
    assert!(stderr.contains("127.0.0.1:9"), "{stderr}");
    assert!(stderr.contains(&format!("secret {id}:")), "{stderr}");
    assert!(stderr.contains(&placeholder), "{stderr}");
}
