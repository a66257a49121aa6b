//! Secrets in a text file: private key blocks, tokens of a known shape, and high-entropy
//! values assigned to names that say they are secret.
//!
//! A hand matcher over a reviewed table: each pattern is a literal prefix, the characters its
//! body may hold and the body's length bounds. A match must start at a word boundary, and its
//! body must look random (a digit and at least eight distinct characters), which keeps
//! placeholders such as `sk-XXXXXXXX…` and ordinary words out.

use crate::rule::{Hit, RuleId};
use crate::text::Lines;

/// The characters a token's body is made of.
#[derive(Debug, Clone, Copy)]
enum Body {
    /// `[A-Z0-9]`.
    UpperAlnum,
    /// `[A-Za-z0-9]`.
    Alnum,
    /// `[A-Za-z0-9_]`.
    AlnumUnderscore,
    /// `[A-Za-z0-9_-]`.
    AlnumDash,
}

impl Body {
    fn holds(self, c: char) -> bool {
        match self {
            Body::UpperAlnum => c.is_ascii_uppercase() || c.is_ascii_digit(),
            Body::Alnum => c.is_ascii_alphanumeric(),
            Body::AlnumUnderscore => c.is_ascii_alphanumeric() || c == '_',
            Body::AlnumDash => c.is_ascii_alphanumeric() || c == '_' || c == '-',
        }
    }
}

/// One reviewed token shape.
struct Pattern {
    /// What it is, for the message.
    what: &'static str,
    prefix: &'static str,
    body: Body,
    min: usize,
    max: usize,
}

/// The reviewed token shapes, most specific prefix first (`sk-ant-` before `sk-`).
const PATTERNS: &[Pattern] = &[
    // AWS access key id: `AKIA` (long-term) or `ASIA` (temporary) and exactly 16 upper-case
    // letters and digits. Ordinary text has no 20-character upper-case word starting so.
    Pattern {
        what: "AWS access key id",
        prefix: "AKIA",
        body: Body::UpperAlnum,
        min: 16,
        max: 16,
    },
    Pattern {
        what: "AWS temporary access key id",
        prefix: "ASIA",
        body: Body::UpperAlnum,
        min: 16,
        max: 16,
    },
    // GitHub tokens: `ghp_` (personal), `gho_` (OAuth), `ghu_` (user-to-server), `ghs_`
    // (server-to-server), `ghr_` (refresh), then 36 letters and digits. The underscore after
    // two letters never starts an English word.
    Pattern {
        what: "GitHub personal access token",
        prefix: "ghp_",
        body: Body::Alnum,
        min: 36,
        max: 255,
    },
    Pattern {
        what: "GitHub OAuth token",
        prefix: "gho_",
        body: Body::Alnum,
        min: 36,
        max: 255,
    },
    Pattern {
        what: "GitHub user-to-server token",
        prefix: "ghu_",
        body: Body::Alnum,
        min: 36,
        max: 255,
    },
    Pattern {
        what: "GitHub server-to-server token",
        prefix: "ghs_",
        body: Body::Alnum,
        min: 36,
        max: 255,
    },
    Pattern {
        what: "GitHub refresh token",
        prefix: "ghr_",
        body: Body::Alnum,
        min: 36,
        max: 255,
    },
    // GitHub fine-grained token: `github_pat_`, 22 characters, `_`, 59 characters.
    Pattern {
        what: "GitHub fine-grained token",
        prefix: "github_pat_",
        body: Body::AlnumUnderscore,
        min: 60,
        max: 255,
    },
    // GitLab personal access token: `glpat-` and 20 or more of `[A-Za-z0-9_-]`.
    Pattern {
        what: "GitLab personal access token",
        prefix: "glpat-",
        body: Body::AlnumDash,
        min: 20,
        max: 255,
    },
    // Slack tokens: `xoxb-` (bot), `xoxa-`, `xoxp-` (user), `xoxr-` (refresh), `xoxs-`, then
    // dash-separated numbers and letters. `xox` and a dash is no word.
    Pattern {
        what: "Slack bot token",
        prefix: "xoxb-",
        body: Body::AlnumDash,
        min: 10,
        max: 255,
    },
    Pattern {
        what: "Slack app token",
        prefix: "xoxa-",
        body: Body::AlnumDash,
        min: 10,
        max: 255,
    },
    Pattern {
        what: "Slack user token",
        prefix: "xoxp-",
        body: Body::AlnumDash,
        min: 10,
        max: 255,
    },
    Pattern {
        what: "Slack refresh token",
        prefix: "xoxr-",
        body: Body::AlnumDash,
        min: 10,
        max: 255,
    },
    Pattern {
        what: "Slack session token",
        prefix: "xoxs-",
        body: Body::AlnumDash,
        min: 10,
        max: 255,
    },
    // Anthropic API key: `sk-ant-` and a long body (`sk-ant-api03-…`, about 100 characters).
    Pattern {
        what: "Anthropic API key",
        prefix: "sk-ant-",
        body: Body::AlnumDash,
        min: 32,
        max: 255,
    },
    // OpenAI project key: `sk-proj-` and a long body.
    Pattern {
        what: "OpenAI project key",
        prefix: "sk-proj-",
        body: Body::AlnumDash,
        min: 32,
        max: 255,
    },
    // OpenAI key: `sk-` and 32 or more characters (48 for the classic shape). Words such as
    // `task-…` or `disk-…` do not match: the prefix must start a word.
    Pattern {
        what: "OpenAI API key",
        prefix: "sk-",
        body: Body::AlnumDash,
        min: 32,
        max: 255,
    },
];

/// The example credentials AWS's own documentation prints: quoted in many READMEs, valid
/// nowhere.
const DOCUMENTED_EXAMPLES: &[&str] = &[
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
];

/// Whether `c` continues a word a token could be part of.
fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '/' || c == '+'
}

/// A random-looking body: a digit and at least eight distinct characters.
fn looks_random(body: &str) -> bool {
    let mut seen: Vec<char> = body.chars().collect();
    seen.sort_unstable();
    seen.dedup();
    body.chars().any(|c| c.is_ascii_digit()) && seen.len() >= 8
}

/// A secret shown without giving it away: its first four characters and its length.
fn masked(secret: &str) -> String {
    let head: String = secret.chars().take(4).collect();
    format!("{head}… ({} characters)", secret.chars().count())
}

const ADVICE: &str = "a secret in a skill is readable by everyone who installs it: revoke it, remove it, and have the skill read credentials from the environment";

/// The hits of one text: private key blocks, known token shapes, and secret assignments not
/// already reported as a token.
pub(crate) fn scan(text: &str, lines: &Lines<'_>) -> Vec<Hit> {
    let mut hits = private_keys(text, lines);
    hits.extend(tokens(text, lines));
    let known: Vec<u32> = hits.iter().filter_map(|h| h.line).collect();
    hits.extend(
        assignments(text, lines)
            .into_iter()
            .filter(|h| !h.line.is_some_and(|l| known.contains(&l))),
    );
    hits
}

/// The words that make an assigned name a secret's (matched in the lower-cased name, `-` and
/// `_` removed): what `.env` files, configuration and code call credentials.
const SECRET_NAMES: &[&str] = &[
    "secret",
    "token",
    "password",
    "passwd",
    "apikey",
    "accesskey",
    "privatekey",
    "credential",
    "authkey",
    "signingkey",
    "encryptionkey",
];

/// Names that hold something about a secret, not the secret itself: where it is, how long,
/// what kind (`TOKEN_URL`, `password_length`, `secret_name`), and public keys.
const NOT_SECRET_NAMES: &[&str] = &[
    "public", "url", "uri", "path", "file", "dir", "name", "env", "var", "length", "len", "size",
    "type", "count", "limit", "header", "endpoint", "field", "format", "prefix", "expires",
    "expiry", "ttl", "id",
];

/// Words in a value that mark it as a placeholder.
const PLACEHOLDERS: &[&str] = &[
    "example",
    "your",
    "xxxx",
    "changeme",
    "placeholder",
    "dummy",
    "redacted",
    "sample",
    "fake",
    "replace",
];

/// The shortest value the assignment rule considers: shorter random strings are ids and
/// nonces more often than keys.
const MIN_ASSIGNED: usize = 20;

/// Shannon entropy of `s` in bits per character.
fn entropy(s: &str) -> f64 {
    let mut counts = [0u32; 128];
    let mut n = 0u32;
    for b in s.bytes().filter(u8::is_ascii) {
        counts[usize::from(b)] += 1;
        n += 1;
    }
    let n = f64::from(n.max(1));
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// Whether `value` looks like a generated secret rather than a word, a path or a placeholder:
/// long enough, of the base64/hex/URL-safe alphabet, with letters and digits, mixed case (or
/// 32+ hex digits), and at least 3.5 bits of entropy per character.
fn secret_value(value: &str) -> bool {
    let len = value.len();
    if !(MIN_ASSIGNED..=512).contains(&len) {
        return false;
    }
    let lower = value.to_ascii_lowercase();
    if PLACEHOLDERS.iter().any(|p| lower.contains(p)) {
        return false;
    }
    let digits = value.bytes().any(|b| b.is_ascii_digit());
    let upper = value.bytes().any(|b| b.is_ascii_uppercase());
    let lower_case = value.bytes().any(|b| b.is_ascii_lowercase());
    let hex = len >= 32 && value.bytes().all(|b| b.is_ascii_hexdigit());
    digits && (hex || (upper && lower_case)) && entropy(value) >= 3.5 && !repeats(value)
}

/// Whether a run of four characters occurs twice in `value`: the mark of a structured value
/// (`TestRPA.process.TestRPA_1_0_0`, a versioned name), rare in a generated one.
fn repeats(value: &str) -> bool {
    let b = value.as_bytes();
    (0..b.len().saturating_sub(3)).any(|i| {
        let gram = &b[i..i + 4];
        b[i + 1..].windows(4).any(|w| w == gram)
    })
}

fn value_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '_' | '-' | '.' | '~')
}

/// `NAME = "value"`, `NAME: value`, `"name": "value"`, `export NAME=value`, `--name value`
/// is not (a flag is no assignment): a name that says it is a secret, given a literal that
/// looks generated ([`secret_value`]). References (`$TOKEN`, `${{ secrets.X }}`,
/// `os.environ[...]`) are not literals and are never reported.
fn assignments(text: &str, lines: &Lines<'_>) -> Vec<Hit> {
    let mut hits = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if let Some((at, name, value)) = assignment(line) {
            hits.push(Hit::at(
                RuleId::SecretAssignment,
                lines.position(offset + at),
                format!(
                    "a high-entropy value {} assigned to `{name}` looks like a live secret: {ADVICE}",
                    masked(value)
                ),
            ));
        }
        offset += line.len();
    }
    hits
}

/// The first secret assignment of one line: the value's byte offset, the name and the value.
fn assignment(line: &str) -> Option<(usize, &str, &str)> {
    let bytes = line.as_bytes();
    for (op, _) in line.match_indices(['=', ':']) {
        // Comparisons (`==`, `!=`, `<=`), arrows (`=>`), paths (`::`), a URL's scheme, and the
        // `:` of `:=` (its `=` is the operator) are no assignment.
        let next = bytes.get(op + 1).copied();
        let prev = op.checked_sub(1).map(|i| bytes[i]);
        let compares = bytes[op] == b'=' && matches!(prev, Some(b'=' | b'!' | b'<' | b'>'));
        let path = bytes[op] == b':' && prev == Some(b':');
        if matches!(next, Some(b'=' | b'>' | b':' | b'/')) || compares || path {
            continue;
        }
        let left = line[..op].trim_end();
        let left = left.strip_suffix(':').unwrap_or(left);
        let left = left.trim_end_matches(['"', '\'', '`', ']']).trim_end();
        // The name is the run of name characters (all ASCII) that ends the left side.
        let name_len = left
            .bytes()
            .rev()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
            .count();
        let name = &left[left.len() - name_len..];
        if name.is_empty() || !secret_name(name) {
            continue;
        }
        let rest = &line[op + 1..];
        let trimmed = rest.trim_start();
        let (quote, body) = match trimmed.chars().next() {
            Some(q @ ('"' | '\'' | '`')) => (Some(q), &trimmed[1..]),
            _ => (None, trimmed),
        };
        let len = body.find(|c: char| !value_char(c)).unwrap_or(body.len());
        let value = &body[..len];
        let ended = match quote {
            Some(q) => body[len..].starts_with(q),
            None => body[len..]
                .chars()
                .next()
                .is_none_or(|c| c.is_whitespace() || matches!(c, ',' | ';' | '#')),
        };
        if ended && secret_value(value) && !DOCUMENTED_EXAMPLES.contains(&value) {
            let at = op + 1 + (rest.len() - trimmed.len()) + usize::from(quote.is_some());
            return Some((at, name, value));
        }
    }
    None
}

/// Whether an assigned name says it holds a secret (`API_KEY`, `client-secret`,
/// `github.token`), and not something about one (`TOKEN_URL`, `public_key`).
fn secret_name(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    let squashed: String = last
        .chars()
        .filter(|c| !matches!(c, '_' | '-'))
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let words: Vec<String> = last
        .split(['_', '-'])
        .map(str::to_ascii_lowercase)
        .collect();
    (SECRET_NAMES.iter().any(|w| squashed.contains(w)) || words.iter().any(|w| w == "key"))
        && !words.iter().any(|w| {
            NOT_SECRET_NAMES
                .iter()
                .any(|n| w == n || (n.len() >= 5 && w.starts_with(n)))
        })
}

/// `-----BEGIN … PRIVATE KEY-----` followed by a line of key material (base64, or the
/// `Proc-Type:` header of an encrypted PEM key): a header quoted alone in documentation is not
/// a key.
fn private_keys(text: &str, lines: &Lines<'_>) -> Vec<Hit> {
    let mut hits = Vec::new();
    for (at, _) in text.match_indices("-----BEGIN ") {
        let rest = &text[at..];
        let Some(header_end) = rest.find('\n') else {
            continue;
        };
        let header = rest[..header_end].trim_end();
        if !(header.ends_with("PRIVATE KEY-----") && header.len() < 64) {
            continue;
        }
        let material = rest[header_end + 1..]
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .is_some_and(|l| {
                l.starts_with("Proc-Type:")
                    || (l.len() >= 20
                        && l.chars()
                            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=')))
            });
        if material {
            let kind = header
                .trim_start_matches("-----BEGIN ")
                .trim_end_matches("-----");
            hits.push(Hit::at(
                RuleId::SecretPrivateKey,
                lines.position(at),
                format!("{kind} block: {ADVICE}"),
            ));
        }
    }
    hits
}

/// The bytes a pattern's prefix starts with: every other byte is passed over at once.
static STARTS: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < PATTERNS.len() {
        table[PATTERNS[i].prefix.as_bytes()[0] as usize] = true;
        i += 1;
    }
    table
};

fn tokens(text: &str, lines: &Lines<'_>) -> Vec<Hit> {
    let mut hits = Vec::new();
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        // Every prefix is ASCII: only an ASCII byte that starts one, at the start of a word, is
        // worth trying (a byte of a multi-byte character never is, nor ends a word).
        let b = bytes[at];
        if !STARTS[usize::from(b)] {
            at += 1;
            continue;
        }
        let starts_word = at == 0 || !word_char(char::from(bytes[at - 1]));
        let found = starts_word
            .then(|| {
                PATTERNS
                    .iter()
                    .find_map(|p| token_at(&text[at..], p).map(|len| (p, len)))
            })
            .flatten();
        match found {
            Some((_, len)) if DOCUMENTED_EXAMPLES.contains(&&text[at..at + len]) => at += len,
            Some((p, len)) => {
                let token = &text[at..at + len];
                hits.push(Hit::at(
                    RuleId::SecretToken,
                    lines.position(at),
                    format!("possible {} {}: {ADVICE}", p.what, masked(token)),
                ));
                if p.prefix == "AKIA" || p.prefix == "ASIA" {
                    hits.extend(aws_secret_beside(text, at, lines));
                }
                at += len;
            }
            None => at += 1,
        }
    }
    hits
}

/// The length of a token of pattern `p` at the start of `s`, if there is one.
fn token_at(s: &str, p: &Pattern) -> Option<usize> {
    let body = s.strip_prefix(p.prefix)?;
    let len = body.find(|c: char| !p.body.holds(c)).unwrap_or(body.len());
    let ends_word = body[len..].chars().next().is_none_or(|c| !word_char(c));
    let body = &body[..len];
    (ends_word && (p.min..=p.max).contains(&len) && looks_random(body))
        .then_some(p.prefix.len() + len)
}

/// An AWS secret access key beside an access key id at `id_at`: 40 characters of
/// `[A-Za-z0-9/+]`, with a digit, a lower-case and an upper-case letter, on the id's line or the
/// two after it.
fn aws_secret_beside(text: &str, id_at: usize, lines: &Lines<'_>) -> Option<Hit> {
    let line_start = text[..id_at].rfind('\n').map_or(0, |i| i + 1);
    let window_end = text[id_at..]
        .match_indices('\n')
        .nth(2)
        .map_or(text.len(), |(i, _)| id_at + i);
    let window = &text[line_start..window_end];
    let is_key = |c: char| c.is_ascii_alphanumeric() || c == '/' || c == '+';
    let mut from = 0;
    while from < window.len() {
        let start = from + window[from..].find(is_key)?;
        let len = window[start..]
            .find(|c: char| !is_key(c))
            .unwrap_or(window.len() - start);
        let run = &window[start..start + len];
        if len == 40
            && !DOCUMENTED_EXAMPLES.contains(&run)
            && run.chars().any(|c| c.is_ascii_digit())
            && run.chars().any(|c| c.is_ascii_lowercase())
            && run.chars().any(|c| c.is_ascii_uppercase())
        {
            return Some(Hit::at(
                RuleId::SecretToken,
                lines.position(line_start + start),
                format!("possible AWS secret access key {}: {ADVICE}", masked(run)),
            ));
        }
        from = start + len;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(RuleId, u32, u32, String)> {
        scan(text, &Lines::new(text))
            .into_iter()
            .map(|h| (h.rule, h.line.unwrap(), h.column.unwrap(), h.message))
            .collect()
    }

    #[test]
    fn private_key_blocks_but_not_a_quoted_header() {
        let key = "x\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n";
        let hits = found(key);
        assert_eq!(hits.len(), 1);
        assert_eq!(
            (hits[0].0, hits[0].1, hits[0].2),
            (RuleId::SecretPrivateKey, 2, 1)
        );
        assert!(
            hits[0].3.starts_with("OPENSSH PRIVATE KEY block"),
            "{}",
            hits[0].3
        );
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n";
        assert_eq!(found(pem).len(), 1);
        // Documentation naming the header, a public key: nothing.
        assert!(
            found("Files start with `-----BEGIN OPENSSH PRIVATE KEY-----`\nand then…\n").is_empty()
        );
        assert!(
            found("-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n")
                .is_empty()
        );
    }

    #[test]
    fn each_token_shape_is_found_and_never_shown_whole() {
        let cases = [
            ("ghp_", "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"),
            ("gho_", "gho_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"),
            ("ghu_", "ghu_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"),
            ("ghs_", "ghs_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"),
            ("ghr_", "ghr_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"),
            (
                "gith",
                "github_pat_11ABCDEFG0123456789abc_defghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ab",
            ),
            ("glpa", "glpat-xY9zAb3Cd5Ef7Gh1Ij2K"),
            (
                "xoxb",
                "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
            ),
            ("xoxp", "xoxp-123456789012-1234567890123-AbCdEfGhIj"),
            (
                "sk-a",
                "sk-ant-api03-aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5zA7bC9dE1fG3",
            ),
            (
                "sk-p",
                "sk-proj-aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5zA7bC9d",
            ),
            ("sk-a", "sk-aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5zA7bC9dE1fG"),
            ("AKIA", "AKIAIOSFODNN7EXAMPL3"),
        ];
        for (head, token) in cases {
            let text = format!("token = \"{token}\"\n");
            let hits = found(&text);
            assert_eq!(hits.len(), 1, "{token}: {hits:?}");
            let (rule, line, column, message) = &hits[0];
            assert_eq!(
                (*rule, *line, *column),
                (RuleId::SecretToken, 1, 10),
                "{token}"
            );
            assert!(
                message.contains(&format!("{head}… ({} characters)", token.len())),
                "{message}"
            );
            assert!(!message.contains(token), "{message}");
        }
        // After a non-ASCII character, a token still starts a word; its column counts characters.
        let after = found("é→ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5");
        assert_eq!((after.len(), after[0].2), (1, 3));
        let anthropic = &found("k=sk-ant-api03-aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5zA7")[0].3;
        assert!(anthropic.contains("Anthropic"), "{anthropic}");
    }

    #[test]
    fn an_aws_secret_beside_its_key_id() {
        let text = "aws_access_key_id = AKIAIOSFODNN7EXAMPL3\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKE1\n";
        let hits = found(text);
        assert_eq!(hits.len(), 2, "{hits:?}");
        assert_eq!((hits[1].1, hits[1].2), (2, 25));
        assert!(
            hits[1]
                .3
                .contains("AWS secret access key wJal… (40 characters)")
        );
        // AWS's documented examples are not secrets.
        assert!(
            found("AKIAIOSFODNN7EXAMPLE\nwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n").is_empty()
        );
        // A 40-character run with no key id nearby is nothing.
        assert!(found("sha = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n").is_empty());
    }

    #[test]
    fn ordinary_text_and_placeholders_are_not_tokens() {
        for text in [
            "Run the task-runner: disk-usage and ask-questions-if-underspecified.",
            "OPENAI_API_KEY=sk-XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
            "export GITHUB_TOKEN=ghp_your_token_here",
            "AKIAEXAMPLE is not a key id, nor is AKIAIOSFODNN7EXAMPLEXX12",
            "a path like scikit-learn/sk-learn-0123456789abcdefghijklmnopqrstuvwxyz",
            "xoxb-not-a-token",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
    }

    #[test]
    fn high_entropy_values_assigned_to_secret_names() {
        let value = "q8Z2vR7kLm4XpT9wNc3bHs6Yd1Fa";
        for (line, column) in [
            (format!("API_KEY={value}\n"), 9),
            (format!("export CLIENT_SECRET=\"{value}\"\n"), 23),
            (format!("  \"password\": \"{value}\",\n"), 16),
            (format!("db_password: '{value}'\n"), 15),
            (format!("config.auth_token = `{value}`;\n"), 22),
            (format!("SIGNING_KEY := {value} # generated\n"), 16),
        ] {
            let hits = found(&line);
            assert_eq!(hits.len(), 1, "{line}: {hits:?}");
            assert_eq!(
                (hits[0].0, hits[0].1, hits[0].2),
                (RuleId::SecretAssignment, 1, column),
                "{line}"
            );
            assert!(
                !hits[0].3.contains(value),
                "the value is shown whole: {}",
                hits[0].3
            );
            assert!(hits[0].3.contains("q8Z2… (28 characters)"), "{}", hits[0].3);
        }
        // 32 hex digits count, whatever their case.
        assert_eq!(
            found("secret = \"9f86d081884c7d659a2feaa0c55ad015\"\n").len(),
            1
        );
    }

    #[test]
    fn names_values_and_references_that_are_not_secrets() {
        let value = "q8Z2vR7kLm4XpT9wNc3bHs6Yd1Fa";
        for text in [
            // Not a secret's name, or something about a secret.
            format!("checksum = \"{value}\"\n"),
            format!("TOKEN_URL={value}\n"),
            format!("public_key: {value}\n"),
            format!("password_length = {value}\n"),
            format!("monkey = {value}\n"),
            // A reference, a call, an interpolation: not a literal.
            "API_KEY=$API_KEY\n".to_string(),
            "token: ${{ secrets.GITHUB_TOKEN }}\n".to_string(),
            "password = os.environ[\"DB_PASSWORD\"]\n".to_string(),
            format!("api_key = getenv(\"{value}\")\n"),
            // A structured value (a name repeated in it), placeholders, words, short values,
            // one case only, a URL.
            "\"key\": \"TestRPA.process.TestRPA_1_0_0\"\n".to_string(),
            "API_KEY=your-api-key-goes-here-1234\n".to_string(),
            "SECRET=ExampleSecretValue12345678\n".to_string(),
            "password = \"correct_horse_battery_staple_2\"\n".to_string(),
            "token = \"a1B2c3D4e5\"\n".to_string(),
            "TOKEN=abcdefghij0123456789klmnop\n".to_string(),
            "token: https://example.org/q8Z2vR7kLm4XpT9wNc3bHs6Yd1Fa\n".to_string(),
            // Comparisons and arrows.
            format!("if token == \"{value}\":\n"),
            format!("token => \"{value}\"\n"),
        ] {
            assert!(found(&text).is_empty(), "{text}: {:?}", found(&text));
        }
    }

    #[test]
    fn a_known_token_is_reported_once_not_again_as_an_assignment() {
        let hits = found("GITHUB_TOKEN=ghp_q8Z2vR7kLm4XpT9wNc3bHs6Yd1FaQ8Z2vR7kLm4X\n");
        let rules: Vec<RuleId> = hits.iter().map(|h| h.0).collect();
        assert_eq!(rules, vec![RuleId::SecretToken]);
    }
}
