//! Secrets in the stack's AWS Secrets Manager (moto), as an operator stores them.

use aws_sdk_secretsmanager::config::{BehaviorVersion, Credentials, Region};

/// Stores `value` as secret `name` (a new secret each time: names are unique per test);
/// returns its ARN.
pub async fn put_secret(name: &str, value: &str) -> String {
    let stack = super::stack();
    let config = aws_sdk_secretsmanager::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(&stack.dynamodb)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "static"))
        .build();
    let out = aws_sdk_secretsmanager::Client::from_conf(config)
        .create_secret()
        .name(name)
        .secret_string(value)
        .send()
        .await
        .unwrap_or_else(|e| panic!("CreateSecret {name}: {e:?}"));
    out.arn.expect("CreateSecret returns the ARN")
}
