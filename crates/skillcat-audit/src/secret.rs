//! Secrets in a text file: private key blocks and tokens of a known shape.
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
fn redacted(secret: &str) -> String {
    let head: String = secret.chars().take(4).collect();
    format!("{head}… ({} characters)", secret.chars().count())
}

const ADVICE: &str = "a secret in a skill is readable by everyone who installs it: revoke it, remove it, and have the skill read credentials from the environment";

/// The hits of one text: private key blocks and known token shapes.
pub(crate) fn scan(text: &str, lines: &Lines<'_>) -> Vec<Hit> {
    let mut hits = private_keys(text, lines);
    hits.extend(tokens(text, lines));
    hits
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

fn tokens(text: &str, lines: &Lines<'_>) -> Vec<Hit> {
    let mut hits = Vec::new();
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        // Every prefix is ASCII: only an ASCII byte that starts one, at the start of a word, is
        // worth trying (a byte of a multi-byte character never is, nor ends a word).
        let b = bytes[at];
        let starts_word = at == 0 || !word_char(char::from(bytes[at - 1]));
        let found = (starts_word && PATTERNS.iter().any(|p| p.prefix.as_bytes()[0] == b))
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
                    format!("possible {} {}: {ADVICE}", p.what, redacted(token)),
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
                format!("possible AWS secret access key {}: {ADVICE}", redacted(run)),
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
}
