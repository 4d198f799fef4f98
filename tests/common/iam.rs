//! The MSK IAM listeners of the Apache Kafka stack (`stack.sh`: SASL_SSL with OAUTHBEARER on
//! A+6 and B+2, validated by `infra/kafka/iam/MskIamValidator.java` against the stack's test
//! credential and region) and the log where the validator records every token it saw.

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::Value;

/// Where the IAM listeners are, and the credential and region their validator accepts.
#[derive(Debug)]
pub struct Iam {
    pub a: String,
    pub b: String,
    pub access_key_id: String,
    pub secret_access_key: String,
    pub region: String,
    pub ca: String,
    pub token_log: PathBuf,
}

impl Iam {
    /// Environment for a child process signing with the listeners' credential: nothing else
    /// of the chain (no session token, no profile, no instance metadata).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", self.access_key_id.clone()),
            ("AWS_SECRET_ACCESS_KEY", self.secret_access_key.clone()),
            ("AWS_REGION", self.region.clone()),
            ("AWS_EC2_METADATA_DISABLED", "true".into()),
            ("AWS_CONFIG_FILE", "/dev/null".into()),
            ("AWS_SHARED_CREDENTIALS_FILE", "/dev/null".into()),
        ]
    }

    /// MSK IAM for every cluster of a flow, as MSK documents it: the OAUTHBEARER form at top
    /// level (both clusters) and the `AWS_MSK_IAM` form for `source`, which overrides it, as in
    /// MM2; trusting the stack's CA.
    pub fn settings(&self, source: &str) -> String {
        format!(
            "security.protocol = SASL_SSL\n\
             sasl.mechanism = OAUTHBEARER\n\
             sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;\n\
             sasl.login.callback.handler.class = software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler\n\
             ssl.truststore.type = PEM\n\
             ssl.truststore.location = {ca}\n\
             {source}.sasl.mechanism = AWS_MSK_IAM\n\
             {source}.sasl.jaas.config = software.amazon.msk.auth.iam.IAMLoginModule required;\n\
             {source}.sasl.client.callback.handler.class = software.amazon.msk.auth.iam.IAMClientCallbackHandler\n",
            ca = self.ca
        )
    }

    /// Where the token log ends now: [`Iam::tokens_since`] reads what comes after.
    pub fn mark(&self) -> u64 {
        std::fs::metadata(&self.token_log).map_or(0, |m| m.len())
    }

    /// The validator's records after `mark` (one JSON object per authentication).
    pub fn tokens_since(&self, mark: u64) -> Vec<Value> {
        let text = std::fs::read(&self.token_log).unwrap_or_default();
        let after = text.get(mark as usize..).unwrap_or_default();
        String::from_utf8_lossy(after)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }
}

/// The IAM listeners, on the Apache Kafka stack only (`None` on tansu, saying why).
pub fn iam() -> Option<&'static Iam> {
    super::kafka_only("tansu cannot serve SASL/OAUTHBEARER listeners")?;
    static IAM: OnceLock<Iam> = OnceLock::new();
    Some(IAM.get_or_init(|| {
        let var = super::stack_exports();
        Iam {
            a: var("MIRRORSLICE_STACK_A_IAM"),
            b: var("MIRRORSLICE_STACK_B_IAM"),
            access_key_id: var("MIRRORSLICE_STACK_IAM_ACCESS_KEY_ID"),
            secret_access_key: var("MIRRORSLICE_STACK_IAM_SECRET_ACCESS_KEY"),
            region: var("MIRRORSLICE_STACK_IAM_REGION"),
            ca: format!("{}/ca.pem", var("MIRRORSLICE_STACK_TLS_DIR")),
            token_log: PathBuf::from(var("MIRRORSLICE_STACK_IAM_TOKEN_LOG")),
        }
    }))
}
