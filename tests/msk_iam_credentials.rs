//! Whose credential signs an MSK IAM token: the default chain, a named profile
//! (`awsProfileName`) or a role assumed through STS (`awsRoleArn`, session `awsRoleSessionName`
//! or "mirrorslice"), against moto's STS from the local stack. One test: it sets the process
//! environment, which the credential chain reads.

mod common;

use base64::Engine;
use mirrorslice::kafka::msk_iam::{
    credentials, settings::CredentialSource, settings::IamSettings, token_for,
};

/// The query parameters of a token.
fn token_query(settings: &IamSettings) -> Vec<(String, String)> {
    let token = token_for(settings).expect("token");
    let url = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(&token.value)
        .expect("base64url");
    let url = String::from_utf8(url).unwrap();
    let (_, query) = url.split_once('?').unwrap();
    query
        .split('&')
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn param<'a>(query: &'a [(String, String)], name: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn settings(credential: CredentialSource) -> IamSettings {
    IamSettings {
        region: "eu-west-3".into(),
        credential,
    }
}

/// The ARN STS says the credential belongs to.
async fn caller_arn(c: &aws_credential_types::Credentials) -> String {
    let config = aws_sdk_sts::Config::builder()
        .behavior_version(aws_sdk_sts::config::BehaviorVersion::latest())
        .region(aws_sdk_sts::config::Region::new("eu-west-3"))
        .credentials_provider(c.clone())
        .endpoint_url(std::env::var("AWS_ENDPOINT_URL_STS").unwrap())
        .build();
    let who = aws_sdk_sts::Client::from_conf(config)
        .get_caller_identity()
        .send()
        .await
        .expect("GetCallerIdentity");
    who.arn().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_signed_by_the_chain_a_profile_or_an_assumed_role() {
    let stack = common::stack();
    let dir = tempfile::tempdir().unwrap();
    let credentials_file = dir.path().join("credentials");
    std::fs::write(
        &credentials_file,
        "[dr]\naws_access_key_id = AKIAPROFILEDR\naws_secret_access_key = profile-secret\n",
    )
    .unwrap();
    // moto serves STS on the endpoint it serves DynamoDB on.
    let moto = &stack.dynamodb;
    // Edition 2021: setting the environment is safe; nothing else in this binary reads it.
    std::env::set_var("AWS_ENDPOINT_URL_STS", moto);
    std::env::set_var("AWS_SHARED_CREDENTIALS_FILE", &credentials_file);
    std::env::set_var("AWS_CONFIG_FILE", dir.path().join("no-config"));
    std::env::set_var("AWS_EC2_METADATA_DISABLED", "true");
    std::env::set_var("AWS_ACCESS_KEY_ID", "AKIAFROMENV");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "env-secret");
    std::env::remove_var("AWS_SESSION_TOKEN");

    // The default chain: the environment's keys, no session token.
    let q = token_query(&settings(CredentialSource::default()));
    let credential = param(&q, "X-Amz-Credential").unwrap();
    assert!(credential.starts_with("AKIAFROMENV%2F"), "{credential}");
    assert!(credential.ends_with("%2Feu-west-3%2Fkafka-cluster%2Faws4_request"));
    assert_eq!(param(&q, "X-Amz-Security-Token"), None);

    // A named profile, whatever the environment holds.
    let profile = CredentialSource {
        profile: Some("dr".into()),
        ..Default::default()
    };
    let q = token_query(&settings(profile));
    let credential = param(&q, "X-Amz-Credential").unwrap();
    assert!(credential.starts_with("AKIAPROFILEDR%2F"), "{credential}");

    // A role assumed with the chain's credential: STS's temporary credential signs, its
    // session token travels in the token, the session is called "mirrorslice".
    let role = "arn:aws:iam::123456789012:role/mirror";
    let assumed = CredentialSource {
        role_arn: Some(role.into()),
        ..Default::default()
    };
    let q = token_query(&settings(assumed.clone()));
    let credential = param(&q, "X-Amz-Credential").unwrap();
    assert!(!credential.starts_with("AKIAFROMENV"), "{credential}");
    assert!(param(&q, "X-Amz-Security-Token").is_some_and(|t| !t.is_empty()));
    let c = credentials::credentials(&assumed, "eu-west-3").unwrap();
    assert!(credential.starts_with(&format!("{}%2F", c.access_key_id())));
    let arn = caller_arn(&c).await;
    assert!(arn.ends_with(":assumed-role/mirror/mirrorslice"), "{arn}");

    // awsRoleSessionName names the session.
    let named = CredentialSource {
        role_arn: Some(role.into()),
        role_session_name: Some("dr-sync".into()),
        ..Default::default()
    };
    let c = credentials::credentials(&named, "eu-west-3").unwrap();
    let arn = caller_arn(&c).await;
    assert!(arn.ends_with(":assumed-role/mirror/dr-sync"), "{arn}");

    // No credential anywhere: an error that says where it looked.
    std::env::remove_var("AWS_ACCESS_KEY_ID");
    std::env::remove_var("AWS_SECRET_ACCESS_KEY");
    mirrorslice::kafka::msk_iam::forget_cached();
    let err = token_for(&settings(CredentialSource::default())).unwrap_err();
    assert!(err.contains("default AWS credential chain"), "{err}");
    let missing = CredentialSource {
        profile: Some("missing".into()),
        ..Default::default()
    };
    let err = token_for(&settings(missing)).unwrap_err();
    assert!(err.contains("AWS profile \"missing\""), "{err}");
}
