//! `oci://HOST[:PORT]/REPO[:TAG|@sha256:HEX]`: what the text names, checked.

use std::fmt;

use crate::error::{Error, Result};

/// The scheme of an OCI source.
pub const SCHEME: &str = "oci://";

/// The tag read when a reference names neither a tag nor a digest.
pub const DEFAULT_TAG: &str = "latest";

/// A parsed `oci://` reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reference {
    /// `host` or `host:port`, lowercased.
    pub registry: String,
    /// The repository path (`team/skills/pdf`).
    pub repository: String,
    /// The tag, when one was given.
    pub tag: Option<String>,
    /// The manifest digest (`sha256:<hex>`), when one was given.
    pub digest: Option<String>,
}

impl Reference {
    /// Parses `oci://HOST[:PORT]/REPO[:TAG][@sha256:HEX]`.
    pub fn parse(text: &str) -> Result<Reference> {
        let bad = |why: &dyn std::fmt::Display| Error::Invalid(format!("{text}: {why}"));
        let rest = text
            .strip_prefix(SCHEME)
            .ok_or_else(|| bad(&"an OCI reference starts with oci://"))?;
        let (registry, path) = rest
            .split_once('/')
            .ok_or_else(|| bad(&"an OCI reference is oci://HOST[:PORT]/REPOSITORY[:TAG]"))?;
        check_registry(registry).map_err(|why| bad(&why))?;
        let (path, digest) = match path.split_once('@') {
            Some((p, d)) => {
                check_digest(d).map_err(|why| bad(&why))?;
                (p, Some(d.to_string()))
            }
            None => (path, None),
        };
        // A tag follows the last ':' after the last '/'.
        let last = path.rfind('/').map_or(0, |i| i + 1);
        let (repository, tag) = match path[last..].find(':') {
            Some(i) => (&path[..last + i], Some(path[last + i + 1..].to_string())),
            None => (path, None),
        };
        check_repository(repository).map_err(|why| bad(&why))?;
        if let Some(t) = &tag {
            check_tag(t).map_err(|why| bad(&why))?;
        }
        Ok(Reference {
            registry: registry.to_ascii_lowercase(),
            repository: repository.to_string(),
            tag,
            digest,
        })
    }

    /// What a manifest request names: the digest when given, else the tag, else `latest`.
    pub fn manifest_ref(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or(DEFAULT_TAG)
    }

    /// The same repository at another tag (and no digest).
    pub fn with_tag(&self, tag: &str) -> Reference {
        Reference {
            tag: Some(tag.to_string()),
            digest: None,
            ..self.clone()
        }
    }

    /// The same repository at a digest (the tag kept for people).
    pub fn with_digest(&self, digest: &str) -> Reference {
        Reference {
            digest: Some(digest.to_string()),
            ..self.clone()
        }
    }

    /// The host without the port.
    pub fn host(&self) -> &str {
        match self.registry.strip_prefix('[') {
            Some(v6) => v6.split_once(']').map_or(v6, |(h, _)| h),
            None => self.registry.split(':').next().unwrap_or(&self.registry),
        }
    }

    /// Whether the registry is this machine (`localhost`, `127.0.0.0/8`, `::1`): the only
    /// registries spoken to over plain HTTP without `--allow-insecure`.
    pub fn is_loopback(&self) -> bool {
        let host = self.host();
        host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    /// The repository's last component (ToolHive names a skill after it).
    pub fn name(&self) -> &str {
        self.repository
            .rsplit('/')
            .next()
            .unwrap_or(&self.repository)
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

/// Why a part of an OCI reference is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReferenceError {
    /// Nothing before the first `/`.
    #[error("no registry host")]
    NoRegistry,
    /// A user name (and password) before the host.
    #[error(
        "credentials do not belong in the reference (use ~/.docker/config.json or \
         SKILLCAT_OCI_USERNAME/SKILLCAT_OCI_PASSWORD with SKILLCAT_OCI_REGISTRY)"
    )]
    Credentials,
    /// Not `host[:port]`.
    #[error("{0:?} is not a registry host[:port]")]
    Registry(String),
    /// Not the distribution spec's repository grammar.
    #[error("{0:?} is not a repository name (lowercase letters, digits, . _ - and /)")]
    Repository(String),
    /// Not `[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`.
    #[error("{0:?} is not a tag (letters, digits, _ . -, at most 128, not starting with . or -)")]
    Tag(String),
    /// Not `sha256:` and 64 lowercase hex digits.
    #[error("{0:?} is not a sha256:<64 hex> digest")]
    Digest(String),
}

fn check_registry(r: &str) -> std::result::Result<(), ReferenceError> {
    if r.is_empty() {
        return Err(ReferenceError::NoRegistry);
    }
    if r.contains('@') {
        return Err(ReferenceError::Credentials);
    }
    let ok = r
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    if !ok {
        return Err(ReferenceError::Registry(r.to_string()));
    }
    Ok(())
}

/// Repository components: lowercase letters and digits, separated by one `.`, `_`, `__` or
/// any number of `-` (the distribution spec's grammar).
fn check_repository(repo: &str) -> std::result::Result<(), ReferenceError> {
    let why = || ReferenceError::Repository(repo.to_string());
    if repo.is_empty() || repo.len() > 255 {
        return Err(why());
    }
    for part in repo.split('/') {
        let b = part.as_bytes();
        let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        if b.is_empty() || !alnum(&b[0]) || !alnum(&b[b.len() - 1]) {
            return Err(why());
        }
        if !b
            .iter()
            .all(|c| alnum(c) || matches!(c, b'.' | b'_' | b'-'))
        {
            return Err(why());
        }
        if part.contains("..") || part.contains("___") || part.contains("._") || part.contains("_.")
        {
            return Err(why());
        }
    }
    Ok(())
}

/// The highest of `tags` that is a semantic version (`1.10.0` above `1.9.0`, a pre-release
/// below its release): what a reference without a tag reads when the repository has no
/// [`DEFAULT_TAG`], and what `push` will not move `latest` below.
pub fn highest_version<'a>(tags: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    tags.into_iter()
        .filter(|t| semver::Version::parse(t).is_ok())
        .max_by(|a, b| skillcat_core::version::compare(a, b))
}

/// `[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`.
pub fn check_tag(tag: &str) -> std::result::Result<(), ReferenceError> {
    let b = tag.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 128
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(ReferenceError::Tag(tag.to_string()))
    }
}

/// `sha256:` and 64 lowercase hex digits: the only digest skillcat accepts.
pub fn check_digest(d: &str) -> std::result::Result<(), ReferenceError> {
    match d.strip_prefix("sha256:") {
        Some(hex)
            if hex.len() == 64
                && hex
                    .bytes()
                    .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)) =>
        {
            Ok(())
        }
        _ => Err(ReferenceError::Digest(d.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse_and_print_back() {
        let d = format!("sha256:{}", "ab".repeat(32));
        for (text, registry, repo, tag, digest) in [
            (
                "oci://127.0.0.1:5000/pdf",
                "127.0.0.1:5000",
                "pdf",
                None,
                None,
            ),
            (
                "oci://ghcr.io/org/skills/pdf:1.2.0",
                "ghcr.io",
                "org/skills/pdf",
                Some("1.2.0"),
                None,
            ),
            (
                &format!("oci://h/a/b@{d}")[..],
                "h",
                "a/b",
                None,
                Some(d.as_str()),
            ),
            (
                &format!("oci://h:1/a:v1@{d}")[..],
                "h:1",
                "a",
                Some("v1"),
                Some(d.as_str()),
            ),
        ] {
            let r = Reference::parse(text).unwrap();
            assert_eq!(r.registry, registry);
            assert_eq!(r.repository, repo);
            assert_eq!(r.tag.as_deref(), tag);
            assert_eq!(r.digest.as_deref(), digest);
            assert_eq!(r.to_string(), text);
        }
        assert_eq!(
            Reference::parse("oci://h/a").unwrap().manifest_ref(),
            "latest"
        );
    }

    #[test]
    fn the_highest_version_tag_in_semver_order() {
        let tags = [
            "latest",
            "1.9.0",
            "1.10.0",
            "1.10.0-rc.1",
            "v2.0.0",
            "sha256-abc",
        ];
        assert_eq!(highest_version(tags), Some("1.10.0"));
        assert_eq!(highest_version(["latest", "main"]), None);
    }

    #[test]
    fn bad_references_say_why() {
        for bad in [
            "http://h/a",
            "oci://h",
            "oci:///a",
            "oci://h/A",
            "oci://h/a/",
            "oci://h/a:-x",
            "oci://h/a@sha256:12",
            "oci://u:p@h/a",
            "oci://h/a..b",
        ] {
            assert!(Reference::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn loopback_is_told_apart() {
        for (text, lo) in [
            ("oci://localhost:5000/a", true),
            ("oci://127.0.0.1/a", true),
            ("oci://[::1]:5000/a", true),
            ("oci://ghcr.io/a", false),
            ("oci://10.0.0.1:5000/a", false),
        ] {
            assert_eq!(Reference::parse(text).unwrap().is_loopback(), lo, "{text}");
        }
    }
}
