//! Which Java client settings mean MSK IAM, and what they ask for.
//!
//! MSK documents two forms for Java clients, both served by AWS's `aws-msk-iam-auth` library:
//!
//! * `sasl.mechanism=AWS_MSK_IAM` with
//!   `sasl.jaas.config=software.amazon.msk.auth.iam.IAMLoginModule required;` and
//!   `sasl.client.callback.handler.class=software.amazon.msk.auth.iam.IAMClientCallbackHandler`;
//! * `sasl.mechanism=OAUTHBEARER` with
//!   `sasl.login.callback.handler.class=software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler`
//!   (and `OAuthBearerLoginModule` as the JAAS module).
//!
//! Both become librdkafka's OAUTHBEARER with MSK's IAM token (MSK's IAM listeners accept
//! either mechanism). The library's JAAS options choose the credential: `awsProfileName`,
//! `awsRoleArn` (with `awsRoleSessionName`, `awsRoleExternalId`, `awsStsRegion`). What a
//! client's token needs travels in librdkafka's `sasl.oauthbearer.config`, which librdkafka
//! hands to the token-refresh callback: every client context can make the token without
//! knowing which cluster it talks to.

use crate::config::Props;
use crate::kafka::client_config::{parse_jaas_options, shown, unsupported, UnsupportedSetting};
use serde::{Deserialize, Serialize};

const IAM_LOGIN_MODULE: &str = "software.amazon.msk.auth.iam.IAMLoginModule";
const OAUTHBEARER_LOGIN_MODULE: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";
const IAM_CLIENT_HANDLER: &str = "software.amazon.msk.auth.iam.IAMClientCallbackHandler";
const IAM_LOGIN_HANDLER: &str = "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler";
/// The role session name when `awsRoleSessionName` is not given.
pub const DEFAULT_SESSION_NAME: &str = "mirrorslice";
/// Where `sasl.oauthbearer.config` says "this is ours" (librdkafka passes it through).
const MARKER: &str = "mirrorslice-msk-iam ";

/// The library's JAAS options that change nothing here (retries and debugging of its own STS
/// client); accepted so existing files work.
const NO_OP_OPTIONS: &[&str] = &["awsDebugCreds", "awsMaxRetries", "awsMaxBackOffTimeMs"];

/// What a token for one cluster needs: where it is signed, and whose credential signs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IamSettings {
    /// The cluster's region: the token is signed for `kafka.<region>.amazonaws.com`.
    pub region: String,
    #[serde(flatten)]
    pub credential: CredentialSource,
}

/// Whose credential: the default chain, a named profile, and optionally a role assumed with it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct CredentialSource {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub profile: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub role_arn: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub role_session_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub role_external_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sts_region: Option<String>,
}

impl IamSettings {
    /// The value for librdkafka's `sasl.oauthbearer.config`.
    pub fn encode(&self) -> String {
        format!(
            "{MARKER}{}",
            serde_json::to_string(self).expect("settings serialize")
        )
    }

    /// Settings from `sasl.oauthbearer.config`; `None` if that is not ours.
    pub fn decode(config: &str) -> Option<Self> {
        serde_json::from_str(config.strip_prefix(MARKER)?).ok()
    }
}

/// MSK IAM settings if `java` asks for MSK IAM, `None` if it does not, an error naming the key
/// if it asks in a way we cannot serve. `env` reads the environment (`AWS_REGION`,
/// `AWS_DEFAULT_REGION`).
pub fn from_java(
    java: &Props,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<IamSettings>, UnsupportedSetting> {
    let get = |k: &str| java.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    let mechanism = get("sasl.mechanism").unwrap_or("GSSAPI");
    let login_handler = get("sasl.login.callback.handler.class");
    let iam_login = login_handler == Some(IAM_LOGIN_HANDLER);
    let module = if mechanism.eq_ignore_ascii_case("AWS_MSK_IAM") {
        if let Some(h) = get("sasl.client.callback.handler.class") {
            if h != IAM_CLIENT_HANDLER {
                return Err(unsupported(
                    "sasl.client.callback.handler.class",
                    &format!("{h} cannot serve AWS_MSK_IAM; use {IAM_CLIENT_HANDLER}"),
                ));
            }
        }
        IAM_LOGIN_MODULE
    } else if mechanism == "OAUTHBEARER" && iam_login {
        if get("sasl.oauthbearer.token.endpoint.url").is_some() {
            return Err(unsupported(
                "sasl.oauthbearer.token.endpoint.url",
                "MSK IAM tokens are signed here, not fetched: remove it, or remove \
                 IAMOAuthBearerLoginCallbackHandler to use the token endpoint",
            ));
        }
        OAUTHBEARER_LOGIN_MODULE
    } else if iam_login {
        return Err(unsupported(
            "sasl.login.callback.handler.class",
            "IAMOAuthBearerLoginCallbackHandler needs sasl.mechanism=OAUTHBEARER",
        ));
    } else {
        return Ok(None);
    };
    if !get("security.protocol").is_some_and(|p| p.eq_ignore_ascii_case("SASL_SSL")) {
        // The token is a signed credential: never send it in the clear (MSK only offers IAM
        // over TLS anyway).
        return Err(unsupported(
            "security.protocol",
            "MSK IAM needs security.protocol=SASL_SSL",
        ));
    }
    let credential = match get("sasl.jaas.config") {
        Some(jaas) => credential_source(jaas, module)?,
        None => CredentialSource::default(),
    };
    let region = region(get("bootstrap.servers").unwrap_or(""), env)?;
    Ok(Some(IamSettings { region, credential }))
}

/// The JAAS options of the library's login modules.
fn credential_source(jaas: &str, expected: &str) -> Result<CredentialSource, UnsupportedSetting> {
    let key = "sasl.jaas.config";
    let (module, rest) = jaas.split_once(char::is_whitespace).unwrap_or((jaas, ""));
    if module != expected {
        return Err(unsupported(
            key,
            &format!("MSK IAM expects the login module {expected}, not {module}"),
        ));
    }
    let mut source = CredentialSource::default();
    for (name, value) in parse_jaas_options(rest).map_err(|r| unsupported(key, &r))? {
        let slot = match name.as_str() {
            "awsProfileName" => &mut source.profile,
            "awsRoleArn" => &mut source.role_arn,
            "awsRoleSessionName" => &mut source.role_session_name,
            "awsRoleExternalId" => &mut source.role_external_id,
            "awsStsRegion" => &mut source.sts_region,
            n if NO_OP_OPTIONS.contains(&n) => continue,
            n => {
                return Err(unsupported(
                    key,
                    &format!(
                        "option {} of the MSK IAM login module is not supported (supported: \
                         awsProfileName, awsRoleArn, awsRoleSessionName, awsRoleExternalId, \
                         awsStsRegion)",
                        shown(n)
                    ),
                ))
            }
        };
        *slot = Some(value).filter(|v| !v.is_empty());
    }
    Ok(source)
}

/// The region of the first MSK broker host name in `bootstrap`, else `AWS_REGION`, else
/// `AWS_DEFAULT_REGION`.
fn region(
    bootstrap: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<String, UnsupportedSetting> {
    let from_host = bootstrap
        .split(',')
        .map(|server| server.trim().rsplit_once(':').map_or(server, |(h, _)| h))
        .find_map(region_of_host);
    from_host
        .or_else(|| env("AWS_REGION").filter(|r| !r.is_empty()))
        .or_else(|| env("AWS_DEFAULT_REGION").filter(|r| !r.is_empty()))
        .ok_or_else(|| {
            unsupported(
                "bootstrap.servers",
                &format!(
                    "MSK IAM needs the cluster's region: {bootstrap:?} names no MSK broker \
                     (b-1.<cluster>.<id>.c2.kafka.<region>.amazonaws.com) and neither \
                     AWS_REGION nor AWS_DEFAULT_REGION is set"
                ),
            )
        })
}

/// `b-1.<cluster>.<id>.c2.kafka.<region>.amazonaws.com` (provisioned, also `b-1-public.`) and
/// `boot-<id>.c1.kafka-serverless.<region>.amazonaws.com` (serverless); `.com.cn` in China.
fn region_of_host(host: &str) -> Option<String> {
    let labels: Vec<&str> = host.trim_end_matches('.').split('.').collect();
    let at = labels.iter().position(|l| {
        l.eq_ignore_ascii_case("kafka") || l.eq_ignore_ascii_case("kafka-serverless")
    })?;
    let rest: Vec<String> = labels
        .get(at + 2..)
        .unwrap_or(&[])
        .iter()
        .map(|l| l.to_ascii_lowercase())
        .collect();
    let aws = rest == ["amazonaws", "com"] || rest == ["amazonaws", "com", "cn"];
    let region = labels.get(at + 1)?;
    (aws && !region.is_empty()).then(|| region.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::props_of as props;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    const MSK: &str = "b-1.prod.ab12cd.c2.kafka.eu-west-3.amazonaws.com:9098,b-2.prod.ab12cd.c2.kafka.eu-west-3.amazonaws.com:9098";

    #[test]
    fn both_documented_forms_are_iam() {
        let aws_msk_iam = props(&[
            ("bootstrap.servers", MSK),
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "AWS_MSK_IAM"),
            (
                "sasl.jaas.config",
                "software.amazon.msk.auth.iam.IAMLoginModule required;",
            ),
            ("sasl.client.callback.handler.class", IAM_CLIENT_HANDLER),
        ]);
        let oauthbearer = props(&[
            ("bootstrap.servers", MSK),
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "OAUTHBEARER"),
            (
                "sasl.jaas.config",
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
            ),
            ("sasl.login.callback.handler.class", IAM_LOGIN_HANDLER),
        ]);
        let expected = IamSettings {
            region: "eu-west-3".into(),
            credential: CredentialSource::default(),
        };
        for java in [aws_msk_iam, oauthbearer] {
            assert_eq!(from_java(&java, no_env).unwrap(), Some(expected.clone()));
        }
    }

    #[test]
    fn jaas_options_choose_the_credential() {
        let java = props(&[
            ("bootstrap.servers", MSK),
            ("security.protocol", "sasl_ssl"),
            ("sasl.mechanism", "AWS_MSK_IAM"),
            (
                "sasl.jaas.config",
                "software.amazon.msk.auth.iam.IAMLoginModule required awsProfileName=\"dr\" \
                 awsRoleArn=\"arn:aws:iam::123456789012:role/mirror\" awsRoleSessionName=\"s1\" \
                 awsStsRegion=\"eu-west-1\" awsDebugCreds=true;",
            ),
        ]);
        let s = from_java(&java, no_env).unwrap().unwrap();
        assert_eq!(s.credential.profile.as_deref(), Some("dr"));
        assert_eq!(
            s.credential.role_arn.as_deref(),
            Some("arn:aws:iam::123456789012:role/mirror")
        );
        assert_eq!(s.credential.role_session_name.as_deref(), Some("s1"));
        assert_eq!(s.credential.sts_region.as_deref(), Some("eu-west-1"));
        assert_eq!(IamSettings::decode(&s.encode()), Some(s));
        assert_eq!(IamSettings::decode("principal=x"), None);
    }

    #[test]
    fn other_mechanisms_are_not_iam() {
        for mechanism in ["PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"] {
            let java = props(&[
                ("sasl.mechanism", mechanism),
                ("security.protocol", "SASL_SSL"),
            ]);
            assert_eq!(from_java(&java, no_env).unwrap(), None, "{mechanism}");
        }
        assert_eq!(from_java(&Props::new(), no_env).unwrap(), None);
    }

    #[test]
    fn what_cannot_be_served_names_the_key() {
        let base = [
            ("bootstrap.servers", MSK),
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "AWS_MSK_IAM"),
        ];
        let case = |extra: &[(&str, &str)]| {
            let mut java = props(&base);
            java.extend(props(extra));
            from_java(&java, no_env).unwrap_err()
        };
        assert_eq!(
            case(&[("security.protocol", "SASL_PLAINTEXT")]).key,
            "security.protocol"
        );
        let e = case(&[(
            "sasl.jaas.config",
            "software.amazon.msk.auth.iam.IAMLoginModule required awsRoleAccessKeyId=\"x\";",
        )]);
        assert_eq!(e.key, "sasl.jaas.config");
        assert!(e.reason.contains("awsRoleAccessKeyId"), "{}", e.reason);
        let e = case(&[(
            "sasl.jaas.config",
            "org.apache.kafka.common.security.plain.PlainLoginModule required;",
        )]);
        assert!(e.reason.contains("IAMLoginModule"), "{}", e.reason);
        let e = case(&[("sasl.client.callback.handler.class", "com.example.Handler")]);
        assert_eq!(e.key, "sasl.client.callback.handler.class");
        let e = from_java(
            &props(&[
                ("security.protocol", "SASL_SSL"),
                ("sasl.mechanism", "OAUTHBEARER"),
                ("sasl.login.callback.handler.class", IAM_LOGIN_HANDLER),
                ("sasl.oauthbearer.token.endpoint.url", "https://idp/token"),
            ]),
            no_env,
        )
        .unwrap_err();
        assert_eq!(e.key, "sasl.oauthbearer.token.endpoint.url");
        let e = from_java(
            &props(&[("sasl.login.callback.handler.class", IAM_LOGIN_HANDLER)]),
            no_env,
        )
        .unwrap_err();
        assert_eq!(e.key, "sasl.login.callback.handler.class");
    }

    #[test]
    fn region_from_msk_host_names_else_the_environment() {
        for (host, region) in [
            (
                "b-1.prod.ab12cd.c2.kafka.us-east-2.amazonaws.com",
                Some("us-east-2"),
            ),
            (
                "b-1-public.prod.ab12cd.c2.kafka.ap-south-1.amazonaws.com",
                Some("ap-south-1"),
            ),
            (
                "boot-abcd1234.c1.kafka-serverless.eu-central-1.amazonaws.com",
                Some("eu-central-1"),
            ),
            (
                "b-1.x.y.c1.kafka.cn-north-1.amazonaws.com.cn",
                Some("cn-north-1"),
            ),
            ("kafka.example.com", None),
            ("localhost", None),
            ("kafka", None),
        ] {
            assert_eq!(region_of_host(host).as_deref(), region, "{host}");
        }
        let env = |k: &str| (k == "AWS_DEFAULT_REGION").then(|| "sa-east-1".to_string());
        assert_eq!(region("localhost:9098", env).unwrap(), "sa-east-1");
        let env = |k: &str| Some(format!("{k}-value"));
        assert_eq!(region("localhost:9098", env).unwrap(), "AWS_REGION-value");
        assert_eq!(region(MSK, env).unwrap(), "eu-west-3");
        let e = region("localhost:9098", no_env).unwrap_err();
        assert!(e.reason.contains("AWS_REGION"), "{}", e.reason);
    }
}
