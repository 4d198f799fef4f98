//! Kafka `ConfigProvider`s: `${env:NAME}`, `${file:/path:key}` and `${dir:/path:file}`.
//!
//! MM2 users keep secrets out of `mm2.properties` with placeholders that Kafka's
//! `ConfigTransformer` resolves. Java MM2 resolves them at two different moments, and the
//! difference is visible (mm2-compat §2.4, §2.5, §12.1 #7 and #15):
//!
//! * the **worker config** and `MirrorMakerConfig.clientConfig` are resolved eagerly;
//! * **connector configs** keep the placeholders (Connect resolves them when it starts the
//!   connector), so the config topic never holds a secret in clear text.
//!
//! This module only knows *how* to resolve; [`super::mm2`] decides *when*.
//!
//! Java's semantics are copied, including the lenient ones: a placeholder naming a provider
//! that is not declared in `config.providers`, or a key the provider does not have, stays
//! literally in the value. Only real failures (an unreadable file, an unknown provider class,
//! a path given to the env provider) are errors.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use fancy_regex::Regex;

use super::secrets_manager::{self, SecretRef};
use super::values::parse_list;
use super::{ConfigError, Properties, Props};

/// `config.providers`: the LIST of provider names.
pub const CONFIG_PROVIDERS_CONFIG: &str = "config.providers";

pub const ENV_VAR_CONFIG_PROVIDER: &str =
    "org.apache.kafka.common.config.provider.EnvVarConfigProvider";
pub const FILE_CONFIG_PROVIDER: &str = "org.apache.kafka.common.config.provider.FileConfigProvider";
pub const DIRECTORY_CONFIG_PROVIDER: &str =
    "org.apache.kafka.common.config.provider.DirectoryConfigProvider";

/// `EnvVarConfigProvider` parameter: only variables whose whole name matches are visible.
const ENV_ALLOWLIST_PATTERN: &str = "allowlist.pattern";
/// `FileConfigProvider`/`DirectoryConfigProvider` parameter (KIP-993): comma-separated
/// absolute paths outside which nothing is read.
const ALLOWED_PATHS: &str = "allowed.paths";

/// Kafka's `ConfigTransformer.DEFAULT_PATTERN`: `${provider:[path:]key}`.
fn placeholder_pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| {
        Regex::new(r"\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}").expect("valid placeholder regex")
    })
}

#[derive(Debug)]
enum Provider {
    Env {
        allowlist: Option<Regex>,
    },
    File {
        allowed: Option<Vec<PathBuf>>,
    },
    Directory {
        allowed: Option<Vec<PathBuf>>,
    },
    /// Values from AWS Secrets Manager, fetched beforehand by
    /// [`ConfigProviders::fetch_secrets`].
    SecretsManager {
        ttl: Duration,
    },
}

/// Whether `value` holds a `${provider:[path:]key}` placeholder (Java's
/// `AbstractHerder.keysWithVariableValues` test).
pub fn has_placeholder(value: &str) -> bool {
    value.contains("${") && placeholder_pattern().is_match(value).unwrap_or(false)
}

/// The providers declared in a configuration, ready to resolve placeholders.
#[derive(Debug, Default)]
pub struct ConfigProviders {
    providers: BTreeMap<String, Provider>,
}

/// Files read during one resolution pass, so a file referenced by many keys is read once.
type FileCache = HashMap<PathBuf, Properties>;

impl ConfigProviders {
    /// Instantiate the providers named in `config.providers` from their
    /// `config.providers.<name>.class` and `config.providers.<name>.param.*` keys.
    pub fn from_props(raw: &Props) -> Result<ConfigProviders, ConfigError> {
        let names = raw
            .get(CONFIG_PROVIDERS_CONFIG)
            .map(|v| parse_list(v))
            .unwrap_or_default();
        let mut providers = BTreeMap::new();
        for name in names.into_iter().filter(|n| !n.is_empty()) {
            let prefix = format!("{CONFIG_PROVIDERS_CONFIG}.{name}");
            let class_key = format!("{prefix}.class");
            // Like Java's `Plugins.newConfigProvider`, a name without a class yields no
            // provider, and its placeholders stay literal.
            let Some(class) = raw.get(&class_key) else {
                continue;
            };
            let param_prefix = format!("{prefix}.param.");
            let param = |p: &str| raw.get(&format!("{param_prefix}{p}"));
            if secrets_manager::is_provider_class(class) {
                let ttl = match param(secrets_manager::CACHE_TTL_PARAM) {
                    Some(ms) => Duration::from_millis(ms.trim().parse().map_err(|_| {
                        let key = format!("{param_prefix}{}", secrets_manager::CACHE_TTL_PARAM);
                        ConfigError::invalid(&key, ms, "not a number of milliseconds")
                    })?),
                    None => secrets_manager::DEFAULT_CACHE_TTL,
                };
                providers.insert(name, Provider::SecretsManager { ttl });
                continue;
            }
            let provider = match simple_class_name(class) {
                Some("EnvVarConfigProvider") => Provider::Env {
                    allowlist: match param(ENV_ALLOWLIST_PATTERN) {
                        Some(pattern) => Some(full_match_regex(
                            &format!("{param_prefix}{ENV_ALLOWLIST_PATTERN}"),
                            pattern,
                        )?),
                        None => None,
                    },
                },
                Some("FileConfigProvider") => Provider::File {
                    allowed: allowed_paths(
                        &format!("{param_prefix}{ALLOWED_PATHS}"),
                        param(ALLOWED_PATHS),
                    )?,
                },
                Some("DirectoryConfigProvider") => Provider::Directory {
                    allowed: allowed_paths(
                        &format!("{param_prefix}{ALLOWED_PATHS}"),
                        param(ALLOWED_PATHS),
                    )?,
                },
                _ => {
                    return Err(ConfigError::invalid(
                        &class_key,
                        class,
                        format!(
                        "unsupported config provider class; supported: {ENV_VAR_CONFIG_PROVIDER}, \
                             {FILE_CONFIG_PROVIDER}, {DIRECTORY_CONFIG_PROVIDER}, {}",
                        secrets_manager::SECRETS_MANAGER_CONFIG_PROVIDER
                    ),
                    ))
                }
            };
            providers.insert(name, provider);
        }
        Ok(ConfigProviders { providers })
    }

    /// True when no provider is declared: nothing would ever be resolved.
    pub fn is_empty(&self) -> bool {
        self.providers.is_empty()
    }

    /// Resolve every placeholder in one value. `key` is only used in error messages.
    pub fn resolve_value(&self, key: &str, value: &str) -> Result<String, ConfigError> {
        self.resolve_cached(key, value, &mut FileCache::new())
    }

    /// Resolve every value of a map, as `ConfigTransformer.transform` does.
    pub fn resolve_all(&self, props: &Props) -> Result<Props, ConfigError> {
        let mut cache = FileCache::new();
        props
            .iter()
            .map(|(k, v)| Ok((k.clone(), self.resolve_cached(k, v, &mut cache)?)))
            .collect()
    }

    /// Fetches every Secrets Manager secret a placeholder in `props` names (see
    /// [`secrets_manager`]), so that resolving them needs no network. An error names the
    /// property, the placeholder and why, never a value.
    pub async fn fetch_secrets(&self, props: &Props) -> Result<(), ConfigError> {
        for (name, provider) in &self.providers {
            let Provider::SecretsManager { ttl } = provider else {
                continue;
            };
            // Each secret with the first property and placeholder naming it, for errors.
            let mut refs: BTreeMap<SecretRef, (String, String)> = BTreeMap::new();
            for (key, value) in props {
                for (whole, provider, path, wanted) in placeholders(value).into_iter().flatten() {
                    if provider == name {
                        let r = SecretRef::parse(path, wanted);
                        refs.entry(r)
                            .or_insert_with(|| (key.clone(), whole.to_string()));
                    }
                }
            }
            let wanted = refs.keys().cloned().collect();
            if let Err((r, reason)) = secrets_manager::fetch(&wanted, *ttl).await {
                let (key, placeholder) = refs.remove(&r).unwrap_or_default();
                return Err(ConfigError::Provider {
                    key,
                    placeholder,
                    reason: format!("secret {}: {reason}", r.id),
                });
            }
            // A missing JSON key is found now, named by the property of the file that asked.
            for (r, (key, placeholder)) in refs {
                if let Err(reason) = secrets_manager::lookup(&r) {
                    return Err(ConfigError::Provider {
                        key,
                        placeholder,
                        reason,
                    });
                }
            }
        }
        Ok(())
    }

    fn resolve_cached(
        &self,
        key: &str,
        value: &str,
        cache: &mut FileCache,
    ) -> Result<String, ConfigError> {
        if self.providers.is_empty() || !value.contains("${") {
            return Ok(value.to_string());
        }
        let mut out = String::with_capacity(value.len());
        let mut last = 0;
        for found in placeholder_pattern().captures_iter(value) {
            // The value is not shown: it may hold a literal secret beside the placeholder.
            let caps = found.map_err(|e| ConfigError::Provider {
                key: key.to_string(),
                placeholder: "(value not shown)".to_string(),
                reason: e.to_string(),
            })?;
            let whole = caps.get(0).expect("group 0 always present");
            let provider_name = caps.get(1).map_or("", |m| m.as_str());
            let path = caps.get(3).map_or("", |m| m.as_str());
            let wanted = caps.get(4).map_or("", |m| m.as_str());
            out.push_str(&value[last..whole.start()]);
            let replacement = match self.providers.get(provider_name) {
                Some(provider) => provider.lookup(path, wanted, cache).map_err(|reason| {
                    ConfigError::Provider {
                        key: key.to_string(),
                        placeholder: whole.as_str().to_string(),
                        reason,
                    }
                })?,
                None => None,
            };
            out.push_str(replacement.as_deref().unwrap_or(whole.as_str()));
            last = whole.end();
        }
        out.push_str(&value[last..]);
        Ok(out)
    }
}

impl Provider {
    /// `Ok(None)` when the provider has no such key: the placeholder then stays literal.
    fn lookup(
        &self,
        path: &str,
        key: &str,
        cache: &mut FileCache,
    ) -> Result<Option<String>, String> {
        match self {
            Provider::Env { allowlist } => {
                if !path.is_empty() {
                    return Err(format!(
                        "Path is not supported for EnvVarConfigProvider, invalid value '{path}'"
                    ));
                }
                if let Some(re) = allowlist {
                    if !re.is_match(key).unwrap_or(false) {
                        return Ok(None);
                    }
                }
                Ok(std::env::var_os(key).map(|v| v.to_string_lossy().into_owned()))
            }
            Provider::File { allowed } => {
                if path.is_empty() {
                    return Ok(None);
                }
                let Some(file) = check_allowed(allowed, path) else {
                    return Ok(None);
                };
                if !cache.contains_key(&file) {
                    // FileConfigProvider reads through a UTF-8 reader (not ISO-8859-1).
                    let bytes = std::fs::read(&file).map_err(|e| {
                        format!(
                            "Could not read properties from file {}: {e}",
                            file.display()
                        )
                    })?;
                    let text = String::from_utf8(bytes).map_err(|_| {
                        format!(
                            "Could not read properties from file {}: not valid UTF-8",
                            file.display()
                        )
                    })?;
                    let props = Properties::parse(&text, Some(&file)).map_err(|e| e.to_string())?;
                    cache.insert(file.clone(), props);
                }
                Ok(cache[&file].get(key).map(str::to_string))
            }
            Provider::SecretsManager { .. } => {
                secrets_manager::lookup(&SecretRef::parse(path, key))
            }
            Provider::Directory { allowed } => {
                if path.is_empty() {
                    return Ok(None);
                }
                let Some(dir) = check_allowed(allowed, path) else {
                    return Ok(None);
                };
                // Only direct children whose file name is exactly the key are visible.
                if key.is_empty() || key.contains('/') || key == "." || key == ".." {
                    return Ok(None);
                }
                if !dir.is_dir() {
                    return Ok(None); // Java logs a warning and returns no data
                }
                let file = dir.join(key);
                if !file.is_file() {
                    return Ok(None);
                }
                let bytes = std::fs::read(&file).map_err(|e| {
                    format!(
                        "Could not read file {} for property {key}: {e}",
                        file.display()
                    )
                })?;
                Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
            }
        }
    }
}

/// Each placeholder of `value` as (whole placeholder, provider, path, key); `None` for a value
/// the pattern cannot be run on.
fn placeholders(value: &str) -> Option<Vec<(&str, &str, &str, &str)>> {
    if !value.contains("${") {
        return Some(Vec::new());
    }
    placeholder_pattern()
        .captures_iter(value)
        .map(|found| {
            let caps = found.ok()?;
            let group = |i| caps.get(i).map_or("", |m| m.as_str());
            Some((group(0), group(1), group(3), group(4)))
        })
        .collect()
}

/// Accept the fully qualified class name, or the simple name Connect also resolves.
fn simple_class_name(class: &str) -> Option<&'static str> {
    [
        ENV_VAR_CONFIG_PROVIDER,
        FILE_CONFIG_PROVIDER,
        DIRECTORY_CONFIG_PROVIDER,
    ]
    .into_iter()
    .find(|fqcn| *fqcn == class || fqcn.rsplit('.').next() == Some(class))
    .and_then(|fqcn| fqcn.rsplit('.').next())
}

fn full_match_regex(key: &str, pattern: &str) -> Result<Regex, ConfigError> {
    Regex::new(&format!("^(?:{pattern})$"))
        .map_err(|e| ConfigError::invalid(key, pattern, format!("invalid regex: {e}")))
}

/// Kafka's `AllowedPaths`: each entry must be absolute and exist.
fn allowed_paths(key: &str, value: Option<&String>) -> Result<Option<Vec<PathBuf>>, ConfigError> {
    let Some(value) = value.filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    value
        .split(',')
        .map(|entry| {
            let path = normalize(Path::new(entry));
            if path.is_absolute() && path.exists() {
                Ok(path)
            } else {
                Err(ConfigError::invalid(
                    key,
                    value,
                    format!(
                        "Path {} is not valid. The path should be absolute and exist",
                        path.display()
                    ),
                ))
            }
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// `AllowedPaths.parseUntrustedPath`: `None` when the path is outside every allowed path.
fn check_allowed(allowed: &Option<Vec<PathBuf>>, path: &str) -> Option<PathBuf> {
    match allowed {
        None => Some(PathBuf::from(path)),
        Some(list) => {
            let normalized = normalize(Path::new(path));
            list.iter()
                .any(|a| normalized.starts_with(a))
                .then_some(normalized)
        }
    }
}

/// Lexical normalisation like Java's `Path.normalize()`: drop `.`, fold `..`.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                let last = out.components().next_back();
                match last {
                    Some(Component::Normal(_)) => {
                        out.pop();
                    }
                    Some(Component::RootDir) | Some(Component::Prefix(_)) => {}
                    _ => out.push(".."),
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::props_of as props;

    fn unique_env(name: &str, value: &str) -> String {
        let var = format!("MIRRORSLICE_TEST_{}_{}", name, std::process::id());
        std::env::set_var(&var, value);
        var
    }

    #[test]
    fn env_provider_resolves_and_leaves_missing_literal() {
        let var = unique_env("ENV1", "s3cret");
        let p = ConfigProviders::from_props(&props(&[
            ("config.providers", "env"),
            ("config.providers.env.class", ENV_VAR_CONFIG_PROVIDER),
        ]))
        .unwrap();
        assert!(!p.is_empty());
        let v = format!("pw=${{env:{var}}};again=${{env::{var}}}");
        assert_eq!(p.resolve_value("k", &v).unwrap(), "pw=s3cret;again=s3cret");
        let missing = "${env:MIRRORSLICE_TEST_DOES_NOT_EXIST_42}";
        assert_eq!(p.resolve_value("k", missing).unwrap(), missing);
        // A path is not supported by the env provider: Java throws.
        let err = p
            .resolve_value("ssl.key.password", &format!("${{env:some/path:{var}}}"))
            .unwrap_err();
        assert!(matches!(err, ConfigError::Provider { .. }));
        assert!(err.to_string().contains("ssl.key.password"));
    }

    #[test]
    fn env_allowlist_pattern() {
        let var = unique_env("ALLOW", "v");
        let p = ConfigProviders::from_props(&props(&[
            ("config.providers", "env"),
            ("config.providers.env.class", ENV_VAR_CONFIG_PROVIDER),
            ("config.providers.env.param.allowlist.pattern", "NOPE_.*"),
        ]))
        .unwrap();
        let v = format!("${{env:{var}}}");
        assert_eq!(p.resolve_value("k", &v).unwrap(), v);
    }

    #[test]
    fn undeclared_provider_stays_literal() {
        let var = unique_env("UNDECLARED", "x");
        let p = ConfigProviders::from_props(&props(&[
            ("config.providers", "env"),
            ("config.providers.env.class", ENV_VAR_CONFIG_PROVIDER),
        ]))
        .unwrap();
        let v = format!("${{other:{var}}}");
        assert_eq!(p.resolve_value("k", &v).unwrap(), v);
        let none = ConfigProviders::from_props(&Props::new()).unwrap();
        assert!(none.is_empty());
        let v = format!("${{env:{var}}}");
        assert_eq!(none.resolve_value("k", &v).unwrap(), v);
    }

    #[test]
    fn declared_without_class_yields_no_provider() {
        let p = ConfigProviders::from_props(&props(&[("config.providers", "env")])).unwrap();
        assert!(p.is_empty());
    }

    #[test]
    fn unknown_class_names_the_key() {
        let err = ConfigProviders::from_props(&props(&[
            ("config.providers", "vault"),
            (
                "config.providers.vault.class",
                "com.example.VaultConfigProvider",
            ),
        ]))
        .unwrap_err();
        assert!(err.to_string().contains("config.providers.vault.class"));
    }

    #[test]
    fn file_provider_reads_properties_as_utf8() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secrets.properties");
        std::fs::write(&file, "password = secret2\nname=caf\u{e9}\n").unwrap();
        let p = ConfigProviders::from_props(&props(&[
            ("config.providers", "file"),
            ("config.providers.file.class", FILE_CONFIG_PROVIDER),
        ]))
        .unwrap();
        let path = file.display().to_string();
        let v = format!("${{file:{path}:password}}");
        assert_eq!(p.resolve_value("ssl.key.password", &v).unwrap(), "secret2");
        let v = format!("${{file:{path}:name}}");
        assert_eq!(p.resolve_value("k", &v).unwrap(), "café");
        // A key the file lacks stays literal.
        let v = format!("${{file:{path}:nope}}");
        assert_eq!(p.resolve_value("k", &v).unwrap(), v);
        // An empty path gives no data.
        assert_eq!(
            p.resolve_value("k", "${file:password}").unwrap(),
            "${file:password}"
        );
    }

    #[test]
    fn unreadable_file_is_an_error_naming_key_placeholder_and_path() {
        let p = ConfigProviders::from_props(&props(&[
            ("config.providers", "file"),
            ("config.providers.file.class", FILE_CONFIG_PROVIDER),
        ]))
        .unwrap();
        let v = "${file:/nonexistent/mirrorslice/x.properties:pw}";
        let err = p.resolve_value("ssl.truststore.password", v).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, ConfigError::Provider { .. }));
        assert!(msg.contains("ssl.truststore.password"), "{msg}");
        assert!(msg.contains(v), "{msg}");
        assert!(
            msg.contains("/nonexistent/mirrorslice/x.properties"),
            "{msg}"
        );
    }

    #[test]
    fn allowed_paths_restrict_file_provider() {
        let allowed = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("s.properties"), "k=v\n").unwrap();
        std::fs::write(allowed.path().join("s.properties"), "k=ok\n").unwrap();
        let p = ConfigProviders::from_props(&props(&[
            ("config.providers", "file"),
            ("config.providers.file.class", FILE_CONFIG_PROVIDER),
            (
                "config.providers.file.param.allowed.paths",
                &allowed.path().display().to_string(),
            ),
        ]))
        .unwrap();
        let outside = format!("${{file:{}/s.properties:k}}", other.path().display());
        assert_eq!(p.resolve_value("x", &outside).unwrap(), outside);
        let inside = format!("${{file:{}/./s.properties:k}}", allowed.path().display());
        assert_eq!(p.resolve_value("x", &inside).unwrap(), "ok");
        // Escaping with `..` is normalised away and refused.
        let escape = format!(
            "${{file:{}/../{}/s.properties:k}}",
            allowed.path().display(),
            other.path().file_name().unwrap().to_string_lossy()
        );
        assert_eq!(p.resolve_value("x", &escape).unwrap(), escape);
        // A relative allowed path is a configuration error.
        assert!(ConfigProviders::from_props(&props(&[
            ("config.providers", "file"),
            ("config.providers.file.class", FILE_CONFIG_PROVIDER),
            ("config.providers.file.param.allowed.paths", "relative/dir"),
        ]))
        .is_err());
    }

    #[test]
    fn directory_provider_reads_file_contents() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("password"), "top\nsecret").unwrap();
        let p = ConfigProviders::from_props(&props(&[
            ("config.providers", "dir"),
            ("config.providers.dir.class", DIRECTORY_CONFIG_PROVIDER),
        ]))
        .unwrap();
        let d = dir.path().display();
        assert_eq!(
            p.resolve_value("k", &format!("${{dir:{d}:password}}"))
                .unwrap(),
            "top\nsecret"
        );
        let missing = format!("${{dir:{d}:nope}}");
        assert_eq!(p.resolve_value("k", &missing).unwrap(), missing);
        let traversal = format!("${{dir:{d}:../password}}");
        assert_eq!(p.resolve_value("k", &traversal).unwrap(), traversal);
    }

    #[test]
    fn resolve_all_is_single_pass() {
        let inner = unique_env("INNER", "resolved");
        // The substituted value itself looks like a placeholder; Java does not re-scan it.
        let outer = unique_env("OUTER", &format!("${{env:{inner}}}"));
        let p = ConfigProviders::from_props(&props(&[
            ("config.providers", "env"),
            ("config.providers.env.class", ENV_VAR_CONFIG_PROVIDER),
        ]))
        .unwrap();
        let input = props(&[
            ("a", &format!("${{env:{outer}}}")),
            ("b", &format!("x-${{env:{inner}}}-y")),
            ("c", "plain"),
        ]);
        let out = p.resolve_all(&input).unwrap();
        assert_eq!(out["a"], format!("${{env:{inner}}}"));
        assert_eq!(out["b"], "x-resolved-y");
        assert_eq!(out["c"], "plain");
    }

    #[test]
    fn normalize_like_java() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("/..")), PathBuf::from("/"));
        assert_eq!(normalize(Path::new("../x")), PathBuf::from("../x"));
    }
}
