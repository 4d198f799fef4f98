//! Reading `mm2.properties` exactly like `java.util.Properties.load(InputStream)`.
//!
//! Java MM2 never sees the file as text the way a human does: it decodes every byte as one
//! ISO-8859-1 character, joins backslash-continued lines, and splits key from value at the
//! first unescaped `=`, `:` or whitespace. A Rust re-implementation that used a "friendlier"
//! parser would silently read a different configuration from the same file, so this module
//! copies Java's rules, including the surprising ones (mm2-compat §1.1, §13 item 13):
//!
//! * there are **no inline comments**: `topics = .*  # note` has the value `.*  # note`;
//! * trailing whitespace of a value is **kept** (`A->B.enabled = true ` is not `true` for
//!   MM2's pair computation, §13 item 12);
//! * `#` and `!` start a comment only as the first non-blank character of a *natural* line,
//!   never on a continuation line;
//! * a malformed `\uXXXX` escape makes Java throw; we report the file and line instead.
//!
//! Every key remembers the line it was defined on, so later errors ("Invalid value ... for
//! configuration security.protocol") can point at `mm2.properties:12`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::error::Origin;
use super::{ConfigError, Props};

/// The message Java's `Properties.loadConvert` throws for a bad `\uXXXX` escape.
const MALFORMED_UNICODE: &str = "Malformed \\uxxxx encoding.";

/// Name used in errors when the text did not come from a file.
const NO_FILE: &str = "<properties>";

/// A parsed `.properties` file: the key/value map plus where each key came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Properties {
    entries: Props,
    /// Key -> 1-based line of the first physical line of its **last** definition.
    origins: HashMap<String, usize>,
    file: Option<PathBuf>,
}

impl Properties {
    /// Parse already-decoded text. `file` is only used for error messages and origins.
    pub fn parse(text: &str, file: Option<&Path>) -> Result<Properties, ConfigError> {
        let mut props = Properties {
            entries: Props::new(),
            origins: HashMap::new(),
            file: file.map(Path::to_path_buf),
        };
        let physical = physical_lines(text);
        for logical in logical_lines(&physical) {
            let (key, value) = split_key_value(&logical.chars);
            let syntax = |message: &str| ConfigError::Syntax {
                file: file.map_or_else(|| PathBuf::from(NO_FILE), Path::to_path_buf),
                line: logical.line,
                message: message.to_string(),
            };
            let key = unescape(key).map_err(&syntax)?;
            let value = unescape(value).map_err(syntax)?;
            // Duplicate keys: the last definition wins, as with `Hashtable.put`.
            props.origins.insert(key.clone(), logical.line);
            props.entries.insert(key, value);
        }
        Ok(props)
    }

    /// Read a file the way `Properties.load(InputStream)` does: every byte is one ISO-8859-1
    /// character, so UTF-8 multi-byte sequences become several characters, as in Java.
    pub fn load(path: &Path) -> Result<Properties, ConfigError> {
        let bytes = std::fs::read(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let text: String = bytes.iter().map(|&b| char::from(b)).collect();
        Properties::parse(&text, Some(path))
    }

    /// Build properties in code (tests, callers without a file). No origins are recorded.
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Properties {
        Properties {
            entries: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            origins: HashMap::new(),
            file: None,
        }
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.get(key).map(String::as_str)
    }

    pub fn map(&self) -> &Props {
        &self.entries
    }

    /// Where `key` was (last) defined; `None` when the properties did not come from a file.
    pub fn origin(&self, key: &str) -> Option<Origin> {
        let file = self.file.as_ref()?;
        let line = *self.origins.get(key)?;
        Some(Origin {
            file: file.clone(),
            line,
        })
    }

    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }
}

/// `.properties` whitespace: space, tab and form feed (line terminators are handled apart).
fn is_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\u{c}')
}

struct PhysicalLine {
    chars: Vec<char>,
    /// 1-based line number.
    number: usize,
}

/// Split on `\n`, `\r` and `\r\n`, like Java's `LineReader`.
fn physical_lines(text: &str) -> Vec<PhysicalLine> {
    let mut lines = Vec::new();
    let mut current = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' | '\n' => {
                if c == '\r' && chars.peek() == Some(&'\n') {
                    chars.next();
                }
                lines.push(PhysicalLine {
                    chars: std::mem::take(&mut current),
                    number: lines.len() + 1,
                });
            }
            _ => current.push(c),
        }
    }
    if !current.is_empty() {
        lines.push(PhysicalLine {
            chars: current,
            number: lines.len() + 1,
        });
    }
    lines
}

struct LogicalLine {
    chars: Vec<char>,
    /// Line number of the first physical line.
    line: usize,
}

fn trailing_backslashes(chars: &[char]) -> usize {
    chars.iter().rev().take_while(|&&c| c == '\\').count()
}

/// Join continuation lines and drop blank and comment lines.
fn logical_lines(physical: &[PhysicalLine]) -> Vec<LogicalLine> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < physical.len() {
        let natural = &physical[i];
        i += 1;
        let start = natural.chars.iter().position(|&c| !is_ws(c));
        let Some(start) = start else { continue }; // blank line
        if matches!(natural.chars[start], '#' | '!') {
            continue; // comments never continue, even with a trailing backslash
        }
        let mut chars = natural.chars[start..].to_vec();
        // An odd number of trailing backslashes escapes the line terminator. The parity of the
        // joined buffer equals the parity Java tracks for the newest segment alone, because the
        // remaining backslashes of earlier segments are always even.
        while trailing_backslashes(&chars) % 2 == 1 {
            chars.pop();
            let Some(next) = physical.get(i) else { break }; // EOF: Java drops the backslash
            i += 1;
            chars.extend(next.chars.iter().copied().skip_while(|&c| is_ws(c)));
        }
        out.push(LogicalLine {
            chars,
            line: natural.number,
        });
    }
    out
}

/// Java's key/value split: the key ends at the first unescaped `=`, `:` or whitespace; then
/// whitespace, at most one `=`/`:`, and whitespace are skipped. The value keeps the rest.
fn split_key_value(line: &[char]) -> (&[char], &[char]) {
    let mut key_len = 0;
    let mut value_start = line.len();
    let mut has_sep = false;
    let mut preceding_backslash = false;
    while key_len < line.len() {
        let c = line[key_len];
        if (c == '=' || c == ':') && !preceding_backslash {
            value_start = key_len + 1;
            has_sep = true;
            break;
        } else if is_ws(c) && !preceding_backslash {
            value_start = key_len + 1;
            break;
        }
        preceding_backslash = c == '\\' && !preceding_backslash;
        key_len += 1;
    }
    while value_start < line.len() {
        let c = line[value_start];
        if !is_ws(c) {
            if !has_sep && (c == '=' || c == ':') {
                has_sep = true;
            } else {
                break;
            }
        }
        value_start += 1;
    }
    (&line[..key_len], &line[value_start..])
}

/// Java's `loadConvert`: `\t \n \r \f \uXXXX`, and `\c` -> `c` for any other `c`.
/// `\u` escapes are UTF-16 code units, so surrogate pairs combine into one character.
fn unescape(chars: &[char]) -> Result<String, &'static str> {
    let mut units: Vec<u16> = Vec::with_capacity(chars.len());
    let mut buf = [0u16; 2];
    let mut i = 0;
    while i < chars.len() {
        let mut c = chars[i];
        i += 1;
        if c == '\\' {
            let Some(&escaped) = chars.get(i) else { break };
            i += 1;
            if escaped == 'u' {
                if i + 4 > chars.len() {
                    return Err(MALFORMED_UNICODE);
                }
                let mut value: u16 = 0;
                for &h in &chars[i..i + 4] {
                    let digit = h.to_digit(16).ok_or(MALFORMED_UNICODE)?;
                    value = (value << 4) | digit as u16;
                }
                i += 4;
                units.push(value);
                continue;
            }
            c = match escaped {
                't' => '\t',
                'r' => '\r',
                'n' => '\n',
                'f' => '\u{c}',
                other => other,
            };
        }
        units.extend_from_slice(c.encode_utf16(&mut buf));
    }
    Ok(String::from_utf16_lossy(&units))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Properties {
        Properties::parse(text, None).unwrap()
    }

    #[test]
    fn separators() {
        let p = parse("a=b\nc:d\ne f\ng  =  h\ni\\=j=k\nl\\ m=n\no\t:\tp\nq = = r\n");
        assert_eq!(p.get("a"), Some("b"));
        assert_eq!(p.get("c"), Some("d"));
        assert_eq!(p.get("e"), Some("f"));
        assert_eq!(p.get("g"), Some("h"));
        assert_eq!(p.get("i=j"), Some("k"));
        assert_eq!(p.get("l m"), Some("n"));
        assert_eq!(p.get("o"), Some("p"));
        // Only one separator is skipped; the second `=` belongs to the value.
        assert_eq!(p.get("q"), Some("= r"));
        assert_eq!(p.map().len(), 8);
    }

    #[test]
    fn key_with_colon_escape_and_whitespace_separator_then_equals() {
        let p = parse("A->B.enabled true\nx\\:y : z\nk =v");
        assert_eq!(p.get("A->B.enabled"), Some("true"));
        assert_eq!(p.get("x:y"), Some("z"));
        assert_eq!(p.get("k"), Some("v"));
    }

    #[test]
    fn empty_value_and_key_only() {
        let p = parse("a=\nb\n  c  \n");
        assert_eq!(p.get("a"), Some(""));
        assert_eq!(p.get("b"), Some(""));
        assert_eq!(p.get("c"), Some(""));
    }

    #[test]
    fn comments_and_blank_lines() {
        let p = parse("# hash\n! bang\n   # indented\n\n   \t\nreal=1\n#x=2\n!y=3\n");
        assert_eq!(p.map().len(), 1);
        assert_eq!(p.get("real"), Some("1"));
        assert_eq!(p.get("#x"), None);
    }

    #[test]
    fn no_inline_comments() {
        // §13 item 13: the docs' own `topics = .*  # ...` becomes part of the regex.
        let p = parse("topics = .*  # note\n");
        assert_eq!(p.get("topics"), Some(".*  # note"));
    }

    #[test]
    fn trailing_whitespace_is_kept() {
        // §13 item 12
        let p = parse("A->B.enabled = true \nb = x\t\n");
        assert_eq!(p.get("A->B.enabled"), Some("true "));
        assert_eq!(p.get("b"), Some("x\t"));
    }

    #[test]
    fn continuations() {
        let p = parse("topics = a, \\\n    b, \\\n\tc\nnext=1\n");
        assert_eq!(p.get("topics"), Some("a, b, c"));
        assert_eq!(p.get("next"), Some("1"));
        // An even number of trailing backslashes is an escaped backslash, not a continuation.
        let p = parse("a=x\\\\\nb=y\n");
        assert_eq!(p.get("a"), Some("x\\"));
        assert_eq!(p.get("b"), Some("y"));
        // Three: one escaped backslash, then a continuation.
        let p = parse("a=x\\\\\\\n  y\n");
        assert_eq!(p.get("a"), Some("x\\y"));
        // A continuation line starting with '#' is not a comment.
        let p = parse("a=1\\\n  # 2\n");
        assert_eq!(p.get("a"), Some("1# 2"));
        // A continued key.
        let p = parse("long\\\n  key=v\n");
        assert_eq!(p.get("longkey"), Some("v"));
        // A comment line never continues.
        let p = parse("# c \\\nx=1\n");
        assert_eq!(p.get("x"), Some("1"));
        // Continuation into an empty line ends the logical line.
        let p = parse("a=1\\\n\nb=2\n");
        assert_eq!(p.get("a"), Some("1"));
        assert_eq!(p.get("b"), Some("2"));
    }

    #[test]
    fn trailing_backslash_at_eof_is_dropped() {
        let p = parse("a=b\\");
        assert_eq!(p.get("a"), Some("b"));
        let p = parse("a=b\\\n");
        assert_eq!(p.get("a"), Some("b"));
    }

    #[test]
    fn every_escape() {
        let p = parse(r"k=\t|\n|\r|\f|\u0041|\u00e9|\z|\\|\=|\:|\ |\#");
        assert_eq!(p.get("k"), Some("\t|\n|\r|\u{c}|A|é|z|\\|=|:| |#"));
        // Surrogate pairs written as two escapes form one character.
        let p = parse(r"k=\uD83D\uDE00");
        assert_eq!(p.get("k"), Some("\u{1F600}"));
        // Escapes work in keys too.
        let p = parse(r"k\u0031=v");
        assert_eq!(p.get("k1"), Some("v"));
    }

    #[test]
    fn malformed_unicode_escape_reports_line() {
        let err =
            Properties::parse("a=1\n\nb=\\u12G4\n", Some(Path::new("mm2.properties"))).unwrap_err();
        match &err {
            ConfigError::Syntax {
                file,
                line,
                message,
            } => {
                assert_eq!(file, Path::new("mm2.properties"));
                assert_eq!(*line, 3);
                assert_eq!(message, "Malformed \\uxxxx encoding.");
            }
            other => panic!("unexpected error {other:?}"),
        }
        assert!(err.to_string().contains("mm2.properties:3"));
        // Too short.
        assert!(Properties::parse("x=\\u12", None).is_err());
    }

    #[test]
    fn duplicate_keys_last_wins_with_its_line() {
        let p = Properties::parse("a=1\nb=2\na=3\n", Some(Path::new("f.properties"))).unwrap();
        assert_eq!(p.get("a"), Some("3"));
        assert_eq!(p.origin("a").unwrap().line, 3);
        assert_eq!(p.origin("b").unwrap().line, 2);
    }

    #[test]
    fn line_terminators() {
        let p = Properties::parse("a=1\r\nb=2\rc=3\n\r\nd=4", Some(Path::new("f"))).unwrap();
        assert_eq!(p.get("a"), Some("1"));
        assert_eq!(p.get("b"), Some("2"));
        assert_eq!(p.get("c"), Some("3"));
        assert_eq!(p.get("d"), Some("4"));
        assert_eq!(p.origin("d").unwrap().line, 5);
        // CRLF continuation.
        let p = parse("a=1\\\r\n  2\r\n");
        assert_eq!(p.get("a"), Some("12"));
    }

    #[test]
    fn origin_is_first_physical_line_of_logical_line() {
        let p =
            Properties::parse("\n# c\nk = a \\\n b\nz=1", Some(Path::new("m.properties"))).unwrap();
        let o = p.origin("k").unwrap();
        assert_eq!(o.line, 3);
        assert_eq!(o.to_string(), "m.properties:3");
        assert_eq!(p.origin("z").unwrap().line, 5);
        assert!(p.origin("missing").is_none());
        assert!(parse("k=v").origin("k").is_none());
    }

    #[test]
    fn load_decodes_iso_8859_1() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mm2.properties");
        // 0xE9 is 'é' in ISO-8859-1; the UTF-8 bytes of 'é' (C3 A9) become two characters.
        std::fs::write(&path, b"a=caf\xe9\nb=\xc3\xa9\n").unwrap();
        let p = Properties::load(&path).unwrap();
        assert_eq!(p.get("a"), Some("café"));
        assert_eq!(p.get("b"), Some("\u{c3}\u{a9}"));
        assert_eq!(p.file(), Some(path.as_path()));
        assert_eq!(p.origin("b").unwrap().line, 2);
    }

    #[test]
    fn load_missing_file_names_path() {
        let err = Properties::load(Path::new("/nonexistent/dir/mm2.properties")).unwrap_err();
        assert!(matches!(err, ConfigError::Io { .. }));
        assert!(err.to_string().contains("/nonexistent/dir/mm2.properties"));
    }

    #[test]
    fn from_pairs_has_no_origins() {
        let p = Properties::from_pairs([("clusters", "a,b")]);
        assert_eq!(p.get("clusters"), Some("a,b"));
        assert!(p.origin("clusters").is_none());
        assert!(p.file().is_none());
    }
}
