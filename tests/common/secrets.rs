//! Secrets in the stack's AWS Secrets Manager (moto), as an operator stores them.

use aws_sdk_secretsmanager::config::{BehaviorVersion, Credentials, Region};

/// A client of the stack's Secrets Manager (moto serves it beside DynamoDB).
fn client() -> aws_sdk_secretsmanager::Client {
    let config = aws_sdk_secretsmanager::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(&super::stack().dynamodb)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "static"))
        .build();
    aws_sdk_secretsmanager::Client::from_conf(config)
}

/// Stores `value` as secret `name` (a new secret each time: names are unique per test);
/// returns its ARN.
pub async fn put_secret(name: &str, value: &str) -> String {
    let out = client()
        .create_secret()
        .name(name)
        .secret_string(value)
        .send()
        .await
        .unwrap_or_else(|e| panic!("CreateSecret {name}: {e:?}"));
    out.arn.expect("CreateSecret returns the ARN")
}

/// Gives secret `name` a new value (a new version), as a rotation does.
pub async fn update_secret(name: &str, value: &str) {
    client()
        .put_secret_value()
        .secret_id(name)
        .secret_string(value)
        .send()
        .await
        .unwrap_or_else(|e| panic!("PutSecretValue {name}: {e:?}"));
}
