//! `${secrets:<secret id or ARN>:<JSON key>}` and `${secrets:<secret id>}`: values kept in AWS
//! Secrets Manager, in Kafka's config-provider syntax.
//!
//! Declared like any provider (`config.providers=secrets`,
//! `config.providers.secrets.class=`[`SECRETS_MANAGER_CONFIG_PROVIDER`]); the class names of
//! the providers MSK users already run ([`ALSO_ACCEPTED`]) are accepted too, with the same
//! meaning. A JSON secret (what the console writes for key/value pairs, and what MSK's SCRAM
//! secrets hold: `{"username":…,"password":…}`) is read by key; a plain one whole.
//!
//! Providers resolve synchronously, secrets are fetched over the network: so every secret a
//! configuration names is fetched first, concurrently ([`fetch`]), into a process-wide cache
//! that resolution then reads ([`lookup`]). Each invocation fetches again what is older than
//! the provider's `cache.ttl.ms` (default 5 minutes), so a warm Lambda does not call Secrets
//! Manager on every run and sees a rotated secret within that time. Errors name the secret and
//! the key, never the value.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::aws::describe_sdk_error;
use aws_config::{BehaviorVersion, Region};

/// Our class name for the provider.
pub const SECRETS_MANAGER_CONFIG_PROVIDER: &str =
    "mirrorslice.config.provider.SecretsManagerConfigProvider";
/// Class names of Secrets Manager providers users already configure, read the same way
/// (secret id as the path, JSON key as the key): MSK's `msk-config-providers`, Confluent Hub's
/// `kafka-config-provider-aws`, Lenses' `secret-provider`.
pub const ALSO_ACCEPTED: &[&str] = &[
    "com.amazonaws.kafka.config.providers.SecretsManagerConfigProvider",
    "com.github.jcustenborder.kafka.config.aws.SecretsManagerConfigProvider",
    "io.lenses.connect.secrets.providers.AWSSecretProvider",
];
/// Whether `class` names this provider: ours or one of [`ALSO_ACCEPTED`], fully qualified or
/// by simple name (as Connect resolves plugin classes).
pub fn is_provider_class(class: &str) -> bool {
    let class = class.trim();
    std::iter::once(SECRETS_MANAGER_CONFIG_PROVIDER)
        .chain(ALSO_ACCEPTED.iter().copied())
        .any(|fqcn| fqcn == class || fqcn.rsplit('.').next() == Some(class))
}

/// `config.providers.<name>.param.cache.ttl.ms`.
pub const CACHE_TTL_PARAM: &str = "cache.ttl.ms";
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(300);
/// Bound on one fetch, retries included: a configuration is resolved before anything else.
const FETCH_TIMEOUT: Duration = Duration::from_secs(15);

/// What one placeholder asks for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SecretRef {
    /// Secret name or full ARN.
    pub id: String,
    /// The key in a JSON secret; `None` for the whole secret string.
    pub json_key: Option<String>,
}

impl SecretRef {
    /// From the path and key Kafka's placeholder pattern split `${secrets:…}` into. An ARN
    /// holds colons of its own (`arn:aws:secretsmanager:region:account:secret:name`, seven
    /// parts), so it is put back together and only an eighth part is a JSON key.
    pub fn parse(path: &str, key: &str) -> SecretRef {
        let whole = if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}:{key}")
        };
        if whole.starts_with("arn:") {
            let parts: Vec<&str> = whole.splitn(8, ':').collect();
            return SecretRef {
                id: parts[..parts.len().min(7)].join(":"),
                json_key: parts.get(7).map(|k| k.to_string()),
            };
        }
        match path.is_empty() {
            true => SecretRef {
                id: key.to_string(),
                json_key: None,
            },
            false => SecretRef {
                id: path.to_string(),
                json_key: Some(key.to_string()),
            },
        }
    }

    /// The region of an ARN id: the secret is fetched there, whatever `AWS_REGION` says.
    fn region(&self) -> Option<&str> {
        let region = self.id.strip_prefix("arn:")?.split(':').nth(2)?;
        (!region.is_empty()).then_some(region)
    }
}

struct Cached {
    fetched: Instant,
    value: String,
}

fn cache() -> &'static Mutex<HashMap<String, Cached>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Cached>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Fetches every secret of `refs` not fetched within `ttl`, concurrently. On failure, the
/// reference that failed and why (the SDK's message, which never holds the value).
pub async fn fetch(refs: &BTreeSet<SecretRef>, ttl: Duration) -> Result<(), (SecretRef, String)> {
    let stale: Vec<&SecretRef> = {
        let cache = cache().lock().expect("secrets cache lock");
        let mut seen = BTreeSet::new();
        refs.iter()
            .filter(|r| seen.insert(&r.id))
            .filter(|r| cache.get(&r.id).is_none_or(|c| c.fetched.elapsed() >= ttl))
            .collect()
    };
    if stale.is_empty() {
        return Ok(());
    }
    let sdk = aws_config::defaults(BehaviorVersion::latest())
        .timeout_config(
            aws_config::timeout::TimeoutConfig::builder()
                .operation_timeout(FETCH_TIMEOUT)
                .build(),
        )
        .load()
        .await;
    let mut fetches = tokio::task::JoinSet::new();
    for r in stale {
        // One line per GetSecretValue call, naming the secret (never its value): how often a
        // warm function calls Secrets Manager is visible at debug level.
        tracing::debug!(secret = %r.id, "fetching secret from Secrets Manager");
        let (sdk, r) = (sdk.clone(), r.clone());
        fetches.spawn(async move {
            let fetched = fetch_one(&sdk, &r).await;
            (r, fetched)
        });
    }
    while let Some(joined) = fetches.join_next().await {
        let (r, fetched) = joined.expect("secret fetch panicked");
        let value = fetched.map_err(|reason| (r.clone(), reason))?;
        let cached = Cached {
            fetched: Instant::now(),
            value,
        };
        cache()
            .lock()
            .expect("secrets cache lock")
            .insert(r.id.clone(), cached);
    }
    Ok(())
}

async fn fetch_one(sdk: &aws_config::SdkConfig, r: &SecretRef) -> Result<String, String> {
    let mut config = aws_sdk_secretsmanager::config::Builder::from(sdk);
    if let Some(region) = r.region() {
        config = config.region(Region::new(region.to_string()));
    }
    let config = config.build();
    if config.region().is_none() {
        return Err("no AWS region configured (set AWS_REGION)".into());
    }
    let client = aws_sdk_secretsmanager::Client::from_conf(config);
    let out = client
        .get_secret_value()
        .secret_id(&r.id)
        .send()
        .await
        .map_err(|e| format!("GetSecretValue: {}", describe_sdk_error(&e)))?;
    out.secret_string.ok_or_else(|| {
        "the secret holds binary data (SecretBinary); only secret strings are supported".into()
    })
}

/// The value `r` names, from what [`fetch`] cached. `None` for a secret not fetched: every
/// command fetches first, except `plan --offline`, which leaves the placeholder as it is.
pub fn lookup(r: &SecretRef) -> Result<Option<String>, String> {
    let cache = cache().lock().expect("secrets cache lock");
    let Some(secret) = cache.get(&r.id) else {
        return Ok(None);
    };
    let Some(key) = &r.json_key else {
        return Ok(Some(secret.value.clone()));
    };
    let json: serde_json::Value = serde_json::from_str(&secret.value)
        .map_err(|_| format!("secret {} is not JSON, so it has no key {key}", r.id))?;
    let object = json.as_object().ok_or_else(|| {
        format!(
            "secret {} is not a JSON object, so it has no key {key}",
            r.id
        )
    })?;
    match object.get(key) {
        Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Ok(Some(other.to_string())),
        None => Err(format!("secret {} has no key {key}", r.id)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Written out rather than read from the constants, so dropping or misspelling a name
    // users already write fails here.
    #[test]
    fn accepts_our_msk_jcustenborder_and_lenses_class_names_full_or_simple() {
        for class in [
            "mirrorslice.config.provider.SecretsManagerConfigProvider",
            "com.amazonaws.kafka.config.providers.SecretsManagerConfigProvider",
            "com.github.jcustenborder.kafka.config.aws.SecretsManagerConfigProvider",
            "io.lenses.connect.secrets.providers.AWSSecretProvider",
            // Simple names, as Connect resolves plugin classes; the first is all but Lenses'.
            "SecretsManagerConfigProvider",
            "AWSSecretProvider",
            // Properties files keep trailing blanks.
            " SecretsManagerConfigProvider ",
        ] {
            assert!(is_provider_class(class), "{class:?} is refused");
        }
        for class in [
            "org.apache.kafka.common.config.provider.FileConfigProvider",
            "FileConfigProvider",
            "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
            // Another package's class of the same simple name is another provider.
            "com.example.SecretsManagerConfigProvider",
            "secretsmanagerconfigprovider",
            "config.provider.SecretsManagerConfigProvider",
            "",
        ] {
            assert!(!is_provider_class(class), "{class:?} is accepted");
        }
    }

    #[test]
    fn references_by_name_and_by_arn() {
        assert_eq!(
            SecretRef::parse("", "mm2/plain"),
            SecretRef {
                id: "mm2/plain".into(),
                json_key: None
            }
        );
        assert_eq!(
            SecretRef::parse("AmazonMSK_source", "password"),
            SecretRef {
                id: "AmazonMSK_source".into(),
                json_key: Some("password".into())
            }
        );
        // Kafka's pattern splits an ARN at its first colon: path "arn", the rest the key.
        let arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:AmazonMSK_x-AbCdEf";
        let whole = SecretRef::parse("arn", arn.strip_prefix("arn:").unwrap());
        assert_eq!(whole.id, arn);
        assert_eq!(whole.json_key, None);
        assert_eq!(whole.region(), Some("eu-west-1"));
        let keyed = SecretRef::parse("arn", &format!("{}:username", &arn[4..]));
        assert_eq!(keyed.id, arn);
        assert_eq!(keyed.json_key.as_deref(), Some("username"));
        assert_eq!(SecretRef::parse("", "name").region(), None);
    }

    #[test]
    fn lookup_reads_json_keys_and_never_shows_the_value() {
        let id = format!("unit-{}", std::process::id());
        cache().lock().unwrap().insert(
            id.clone(),
            Cached {
                fetched: Instant::now(),
                value: r#"{"username":"u","password":"hunter2","port":9096}"#.into(),
            },
        );
        let get = |k: Option<&str>| {
            lookup(&SecretRef {
                id: id.clone(),
                json_key: k.map(str::to_string),
            })
        };
        assert_eq!(get(Some("password")).unwrap().unwrap(), "hunter2");
        assert_eq!(get(Some("port")).unwrap().unwrap(), "9096");
        let missing = get(Some("token")).unwrap_err();
        assert!(
            missing.contains(&id) && missing.contains("token"),
            "{missing}"
        );
        assert!(!missing.contains("hunter2"), "{missing}");
        assert_eq!(lookup(&SecretRef::parse("", "never-fetched")), Ok(None));
    }
}
