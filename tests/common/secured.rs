//! The secured listeners of the Apache Kafka stack's cluster A (`stack.sh`: SASL_PLAINTEXT,
//! SSL, mTLS and SASL_SSL, a CA generated at each start) and the credentials they accept.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Where cluster A's secured listeners are and what opens them.
#[derive(Debug)]
pub struct Secured {
    pub sasl_plaintext: String,
    pub ssl: String,
    pub mtls: String,
    pub sasl_ssl: String,
    pub tls_dir: PathBuf,
    /// A SCRAM user (both SHA-256 and SHA-512) created through the admin API for this process.
    pub scram_user: String,
    pub scram_password: String,
}

impl Secured {
    /// A file of the stack's TLS directory (`ca.pem`, `client.p12`, ...).
    pub fn file(&self, name: &str) -> String {
        self.tls_dir.join(name).display().to_string()
    }

    /// The content of a password file of the stack's TLS directory.
    pub fn password(&self, name: &str) -> String {
        std::fs::read_to_string(self.tls_dir.join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .trim()
            .to_string()
    }
}

const SCRAM_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";
const PLAIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";

/// `prefix.`-scoped settings (`A`, `A.consumer`, ...) for a SASL mechanism with
/// `user`/`password`.
pub fn sasl(prefix: &str, protocol: &str, mechanism: &str, user: &str, password: &str) -> String {
    let module = if mechanism == "PLAIN" {
        PLAIN_MODULE
    } else {
        SCRAM_MODULE
    };
    format!(
        "{prefix}.security.protocol = {protocol}\n\
         {prefix}.sasl.mechanism = {mechanism}\n\
         {prefix}.sasl.jaas.config = {module} required username=\"{user}\" \
         password=\"{password}\";\n"
    )
}

/// The secured listeners, on the Apache Kafka stack only (`None` on tansu, saying why).
pub fn secured() -> Option<&'static Secured> {
    let stack = super::kafka_only("tansu cannot serve TLS or SASL listeners")?;
    static SECURED: OnceLock<Secured> = OnceLock::new();
    Some(SECURED.get_or_init(|| {
        let var = super::stack_exports();
        let scram_user = super::unique("scram");
        let scram_password = super::unique("pw");
        create_scram_user(&stack.a, &scram_user, &scram_password);
        Secured {
            sasl_plaintext: var("MIRRORSLICE_STACK_A_SASL_PLAINTEXT"),
            ssl: var("MIRRORSLICE_STACK_A_SSL"),
            mtls: var("MIRRORSLICE_STACK_A_MTLS"),
            sasl_ssl: var("MIRRORSLICE_STACK_A_SASL_SSL"),
            tls_dir: PathBuf::from(var("MIRRORSLICE_STACK_TLS_DIR")),
            scram_user,
            scram_password,
        }
    }))
}

/// `tests/java/ScramUsers.java`: SCRAM-SHA-256 and -512 credentials for `user`.
pub fn create_scram_user(bootstrap: &str, user: &str, password: &str) {
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/ScramUsers.java");
    let out = Command::new(super::stack_script())
        .arg("java-exec")
        .arg(program)
        .args([bootstrap, user, password])
        .stdin(Stdio::null())
        .output()
        .expect("run ScramUsers.java (stack.sh java-exec)");
    assert!(
        out.status.success(),
        "ScramUsers {user}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
