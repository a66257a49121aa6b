//! Scripts that use the network while their skill declares none (a heuristic: the names of
//! network tools and libraries in a script's text, comments included).

use crate::rule::{Hit, RuleId};
use crate::text::Lines;

/// How a needle must sit in the text to count.
#[derive(Debug, Clone, Copy)]
enum Fit {
    /// A whole word: no letter, digit, `_` or `-` on either side.
    Word,
    /// A whole word followed by a space (a command with arguments: `nc host 80`).
    Command,
    /// Not preceded by a letter, digit or `_` (`fetch(`, `urllib.request`).
    Start,
}

/// The network uses looked for: the needle, how it must sit, and what it is.
const USES: &[(&str, Fit)] = &[
    ("curl", Fit::Word),
    ("wget", Fit::Word),
    ("nc", Fit::Command),
    ("ncat", Fit::Command),
    ("urllib", Fit::Start),
    ("import requests", Fit::Start),
    ("from requests", Fit::Start),
    ("requests.get", Fit::Start),
    ("requests.post", Fit::Start),
    ("requests.Session", Fit::Start),
    ("httpx", Fit::Word),
    ("aiohttp", Fit::Word),
    ("http.client", Fit::Start),
    ("fetch(", Fit::Start),
    ("socket", Fit::Word),
    ("/dev/tcp/", Fit::Start),
    ("Invoke-WebRequest", Fit::Word),
];

fn ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Where `needle` first sits in `text` as `fit` asks.
fn first(text: &str, needle: &str, fit: Fit) -> Option<usize> {
    text.match_indices(needle).map(|(i, _)| i).find(|&i| {
        let before = text[..i].chars().next_back();
        let after = text[i + needle.len()..].chars().next();
        let free = |c: Option<char>| c.is_none_or(|c| !ident(c) && c != '-');
        match fit {
            Fit::Word => free(before) && free(after),
            Fit::Command => free(before) && after == Some(' '),
            Fit::Start => before.is_none_or(|c| !ident(c)),
        }
    })
}

/// The hit of one script of a skill that declares no network: where its first network use is,
/// and every kind it uses.
pub(crate) fn scan(text: &str, lines: &Lines<'_>) -> Option<Hit> {
    let mut found: Vec<(usize, &str)> = USES
        .iter()
        .filter_map(|&(needle, fit)| first(text, needle, fit).map(|at| (at, needle)))
        .collect();
    found.sort();
    let &(at, _) = found.first()?;
    let names: Vec<&str> = found
        .iter()
        .map(|&(_, n)| n.trim_end_matches('('))
        .collect();
    Some(Hit::at(
        RuleId::UndeclaredNetwork,
        lines.position(at),
        format!(
            "heuristic: the script uses the network ({}) but the skill declares no network, so a confined run will fail or the skill does what it does not say; declare it if it needs it (`skillcat.network: \"true\"` or host names under `metadata:` in SKILL.md, or `network: true` in agents/skillcat.yaml), or remove the network use",
            names.join(", ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Option<(u32, u32, String)> {
        scan(text, &Lines::new(text)).map(|h| (h.line.unwrap(), h.column.unwrap(), h.message))
    }

    #[test]
    fn network_tools_and_libraries() {
        let (line, column, message) =
            at("#!/bin/sh\nset -e\ncurl -s https://x | sh\nwget y\n").unwrap();
        assert_eq!((line, column), (3, 1));
        assert!(message.contains("(curl, wget)"), "{message}");
        assert_eq!(at("import socket\n").map(|h| (h.0, h.1)), Some((1, 8)));
        assert!(at("import urllib.request\n").is_some());
        assert!(at("import requests\n").is_some());
        assert!(at("r = await fetch(url)\n").is_some());
        assert!(at("cat < /dev/tcp/10.0.0.1/80\n").is_some());
        assert!(at("echo hi | nc host 80\n").is_some());
    }

    #[test]
    fn words_that_merely_contain_the_needles_are_not_uses() {
        for text in [
            "# handles incoming requests from the caller\n",
            "prefetch(data)\nsocketpair_count = 1\n",
            "func (nc) string\nsync -n\n",
            "curly = 1\n",
        ] {
            assert!(at(text).is_none(), "{text}");
        }
    }
}
