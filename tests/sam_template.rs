//! The SAM template grants what the function needs and nothing more (cfn-lint checks the
//! syntax in `infra/local/test.sh`; these check the meaning of the statements we rely on).

fn template() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/template.yaml");
    std::fs::read_to_string(path).expect("template.yaml")
}

/// The indented block of lines starting at the first line containing `needle`.
fn block_after<'a>(text: &'a str, needle: &str, lines: usize) -> Vec<&'a str> {
    let start = text
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("template.yaml has no {needle:?}"));
    text.lines().skip(start).take(lines).collect()
}

#[test]
fn secrets_are_readable_only_as_listed_and_decrypted_only_through_secrets_manager() {
    let t = template();
    let get = block_after(&t, "Action: secretsmanager:GetSecretValue", 2);
    assert_eq!(get[1].trim(), "Resource: !Ref SecretArns", "{get:?}");
    let decrypt = block_after(&t, "Action: kms:Decrypt", 5);
    assert_eq!(
        decrypt[1].trim(),
        "Resource: !Ref SecretsKmsKeyArn",
        "{decrypt:?}"
    );
    assert!(
        decrypt[4].contains("kms:ViaService") && decrypt[4].contains("secretsmanager."),
        "{decrypt:?}"
    );
    // Nothing else reaches secrets or keys, and no statement is a wildcard.
    assert_eq!(t.matches("secretsmanager:").count(), 1);
    assert_eq!(t.matches("kms:Decrypt").count(), 1);
    assert!(!t.contains("Resource: \"*\"") && !t.contains("Resource: '*'"));
    // Without secret ARNs the statement is not there at all.
    assert!(t.contains("HasSecrets: !Not [!Equals [!Join [\"\", !Ref SecretArns], \"\"]]"));
}
