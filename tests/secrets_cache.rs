//! Secrets Manager values are cached per process for `cache.ttl.ms`. Its own test binary:
//! the SDK reads endpoint and region from this process's environment, which is set here, and
//! no librdkafka thread may be reading the environment meanwhile (`setenv` would race it).

mod common;

use common::secrets::put_secret;
use common::{stack, unique};

// A warm process (a Lambda container) fetches a secret again only once `cache.ttl.ms` has
// passed: within it a rotation is not seen, after it (here: a TTL of 0) it is.
#[tokio::test]
async fn a_rotated_secret_is_seen_after_the_cache_ttl() {
    use mirrorslice::config::providers::ConfigProviders;
    use mirrorslice::config::Props;
    let s = stack();
    let id = unique("mm2-rotated");
    put_secret(&id, "first").await;
    let config = |ttl_ms: u64| -> Props {
        [
            ("config.providers", "secrets".to_string()),
            (
                "config.providers.secrets.class",
                "SecretsManagerConfigProvider".to_string(),
            ),
            (
                "config.providers.secrets.param.cache.ttl.ms",
                ttl_ms.to_string(),
            ),
            ("A.ssl.key.password", format!("${{secrets:{id}}}")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    };
    // The SDK reads its endpoint and region from the environment, as in Lambda.
    for (k, v) in s.env() {
        std::env::set_var(k, v);
    }
    let resolved = |props: &Props| {
        let providers = ConfigProviders::from_props(props).unwrap();
        providers.resolve_all(props).unwrap()["A.ssl.key.password"].clone()
    };
    let cached = config(600_000);
    let providers = ConfigProviders::from_props(&cached).unwrap();
    providers.fetch_secrets(&cached).await.unwrap();
    assert_eq!(resolved(&cached), "first");

    common::secrets::update_secret(&id, "second").await;
    providers.fetch_secrets(&cached).await.unwrap();
    assert_eq!(resolved(&cached), "first", "fetched again within the TTL");

    let expiring = config(0);
    let providers = ConfigProviders::from_props(&expiring).unwrap();
    providers.fetch_secrets(&expiring).await.unwrap();
    assert_eq!(
        resolved(&expiring),
        "second",
        "not fetched again after the TTL"
    );
}
