//! [`Config::parse`] along the file's sections: the TOML read into the raw tables, then each
//! section checked and resolved on its own, every error naming its key and `line:column`.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::{
    Config, ConfigError, Environment, RuntimeAudit, ScriptsConfig, SourceConfig, TrustedProject,
    default_sources, key_at, line_col, resolve_spec,
};
use skillcat_core::capability::Ceiling;

use crate::matcher::RawMatcher;

/// Makes the errors of one text: its origin's name, and the line and column of a span.
struct Fail<'a> {
    text: &'a str,
    origin: String,
}

impl Fail<'_> {
    fn fail(
        &self,
        span: Option<Range<usize>>,
        key: Option<String>,
        message: String,
    ) -> ConfigError {
        let (line, column) = match &span {
            Some(s) => {
                let (l, c) = line_col(self.text, s.start);
                (Some(l), Some(c))
            }
            None => (None, None),
        };
        ConfigError::Invalid {
            origin: self.origin.clone(),
            line,
            column,
            key,
            message,
        }
    }
}

/// [`Config::parse`].
pub(super) fn parse(
    text: &str,
    origin: Option<&Path>,
    env: &Environment,
) -> Result<Config, ConfigError> {
    let f = Fail {
        text,
        origin: origin.map_or_else(|| "<config>".to_string(), |p| p.display().to_string()),
    };
    let raw: RawConfig = match toml::from_str(text) {
        Ok(raw) => raw,
        Err(e) => {
            let key = e.span().and_then(|s| key_at(text, s.start));
            let mut message = e.message().trim().replace("unknown field", "unknown key");
            if let Some(k) = &key {
                message = format!("{k}: {message}");
            }
            return Err(f.fail(e.span(), key, message));
        }
    };
    // Relative paths are taken against the file's directory (the working directory without one).
    let base = origin
        .and_then(Path::parent)
        .map(|d| {
            if d.is_absolute() {
                d.to_path_buf()
            } else {
                env.cwd.join(d)
            }
        })
        .unwrap_or_else(|| env.cwd.clone());
    let home = env.home.as_deref();
    let mut config = Config {
        origin: origin.map(Path::to_path_buf),
        ..Config::default()
    };
    config.sources = match raw.sources {
        None => default_sources(env),
        Some(list) => sources(list, &base, home, &f)?,
    };
    if let Some(sb) = raw.sandbox {
        sandbox(sb, &mut config.sandbox, &f)?;
    }
    if let Some(sc) = raw.scripts {
        scripts(sc, &mut config.scripts, &f)?;
    }
    if let Some(sk) = raw.skills {
        config.skills = skills(sk, &f)?;
    }
    let raw = RawRest {
        keyring: raw.keyring,
        cache_dir: raw.cache_dir,
        max_index_age: raw.max_index_age,
        prompt: raw.prompt,
        matcher: raw.matcher,
        trusted_projects: raw.trusted_projects,
        install: raw.install,
        runtime: raw.runtime,
    };
    rest(raw, &mut config, &base, home, &f)?;
    Ok(config)
}

/// `[[sources]]`: each path resolved, names unique, `core` only with `trusted`.
fn sources(
    list: Vec<RawSource>,
    base: &Path,
    home: Option<&Path>,
    f: &Fail<'_>,
) -> Result<Vec<SourceConfig>, ConfigError> {
    let mut out = Vec::new();
    let mut names: Vec<(String, usize)> = Vec::new();
    for (i, s) in list.into_iter().enumerate() {
        let key = |k: &str| Some(format!("sources[{i}].{k}"));
        let path = s.path.get_ref().trim();
        if path.is_empty() {
            return Err(f.fail(
                Some(s.path.span()),
                key("path"),
                format!("sources[{i}].path: must not be empty"),
            ));
        }
        let trusted = s.trusted.unwrap_or(false);
        let core = s.core.as_ref().is_some_and(|c| *c.get_ref());
        if core && !trusted {
            let span = s.core.as_ref().map(Spanned::span);
            return Err(f.fail(
                span,
                key("core"),
                format!(
                    "sources[{i}].core: a core-trusted source must also be trusted \
                     (add `trusted = true`)"
                ),
            ));
        }
        let name = match &s.name {
            Some(n) if n.get_ref().trim().is_empty() => {
                return Err(f.fail(
                    Some(n.span()),
                    key("name"),
                    format!("sources[{i}].name: must not be empty"),
                ));
            }
            Some(n) => n.get_ref().trim().to_string(),
            None => path.to_string(),
        };
        let span = s.name.as_ref().map_or(s.path.span(), Spanned::span);
        if names.iter().any(|(n, _)| *n == name) {
            return Err(f.fail(
                Some(span),
                key(if s.name.is_some() { "name" } else { "path" }),
                format!(
                    "sources[{i}]: a source named `{name}` is already configured \
                     (give each source its own `name`)"
                ),
            ));
        }
        names.push((name.clone(), i));
        out.push(SourceConfig {
            path: resolve_spec(path, base, home),
            name: Some(name),
            trusted,
            core,
        });
    }
    Ok(out)
}

/// `[sandbox]`: the ceiling and the run limits, each limit at least 1, `timeout` and
/// `max_timeout` defaulting to each other.
fn sandbox(sb: RawSandbox, c: &mut Ceiling, f: &Fail<'_>) -> Result<(), ConfigError> {
    if let Some(v) = sb.fs_read {
        c.fs_read = v;
    }
    if let Some(v) = sb.fs_write {
        c.fs_write = v;
    }
    if let Some(v) = sb.protect {
        c.protect = v;
    }
    if let Some(v) = sb.network {
        let span = v.span();
        c.network = match v.into_inner() {
            RawNetwork::Bool(b) => skillcat_core::capability::Network::from_bool(b),
            RawNetwork::List(l) => {
                skillcat_core::capability::Network::from_patterns(l.iter().map(String::as_str))
                    .map_err(|e| {
                        f.fail(
                            Some(span.clone()),
                            Some("sandbox.network".to_string()),
                            format!("sandbox.network: {e}"),
                        )
                    })?
            }
        };
    }
    if let Some(pins) = sb.resolve {
        for (key, value) in pins {
            let span = value.span();
            let pin =
                skillcat_core::capability::Pin::parse(&key, value.get_ref()).map_err(|e| {
                    f.fail(
                        Some(span),
                        Some(format!("sandbox.resolve.{key}")),
                        format!("sandbox.resolve: {e}"),
                    )
                })?;
            c.resolve.push(pin);
        }
    }
    for (name, field, target) in [
        ("timeout", &sb.timeout, &mut c.timeout),
        ("memory", &sb.memory, &mut c.memory),
        ("processes", &sb.processes, &mut c.processes),
        (
            "workspace_bytes",
            &sb.workspace_bytes,
            &mut c.workspace_bytes,
        ),
        (
            "workspace_files",
            &sb.workspace_files,
            &mut c.workspace_files,
        ),
    ] {
        if let Some(v) = field {
            if *v.get_ref() == 0 {
                return Err(f.fail(
                    Some(v.span()),
                    Some(format!("sandbox.{name}")),
                    format!("sandbox.{name}: must be at least 1"),
                ));
            }
            *target = *v.get_ref();
        }
    }
    if let Some(v) = sb.output {
        c.output = v;
    }
    // Each defaults to the other: `timeout` alone is also the hard limit, `max_timeout`
    // alone lowers the default timeout when it is below it.
    match (&sb.timeout, &sb.max_timeout) {
        (Some(t), Some(m)) if m.get_ref() < t.get_ref() => {
            return Err(f.fail(
                Some(m.span()),
                Some("sandbox.max_timeout".to_string()),
                format!(
                    "sandbox.max_timeout: {} is less than sandbox.timeout ({})",
                    m.get_ref(),
                    t.get_ref()
                ),
            ));
        }
        (_, Some(m)) if *m.get_ref() == 0 => {
            return Err(f.fail(
                Some(m.span()),
                Some("sandbox.max_timeout".to_string()),
                "sandbox.max_timeout: must be at least 1".to_string(),
            ));
        }
        (Some(_), Some(m)) => c.max_timeout = *m.get_ref(),
        (Some(_), None) => c.max_timeout = c.timeout,
        (None, Some(m)) => {
            c.max_timeout = *m.get_ref();
            c.timeout = c.timeout.min(c.max_timeout);
        }
        (None, None) => {}
    }
    Ok(())
}

/// `[scripts]`: absolute interpreters, extensions mapped to their names.
fn scripts(sc: RawScripts, scripts: &mut ScriptsConfig, f: &Fail<'_>) -> Result<(), ConfigError> {
    scripts.extension_fields = sc.extension_fields.unwrap_or(false);
    for (name, path) in sc.interpreters.unwrap_or_default() {
        let p = Path::new(path.get_ref());
        if name.trim().is_empty() || !p.is_absolute() {
            let what = if name.trim().is_empty() {
                "an interpreter needs a name"
            } else {
                "must be an absolute path (scripts run with an empty environment: no PATH)"
            };
            return Err(f.fail(
                Some(path.span()),
                Some(format!("scripts.interpreters.{name}")),
                format!("scripts.interpreters.{name}: {what}"),
            ));
        }
        scripts.interpreters.insert(name, p.to_path_buf());
    }
    for (extension, name) in sc.by_extension.unwrap_or_default() {
        let what = if extension.is_empty()
            || !extension
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            Some("an extension is letters, digits, `_` and `-`, without the dot (`py`)")
        } else if name.get_ref().trim().is_empty() || name.get_ref().contains('/') {
            Some("must name an interpreter of [scripts.interpreters] (`python3`), not a path")
        } else {
            None
        };
        if let Some(what) = what {
            return Err(f.fail(
                Some(name.span()),
                Some(format!("scripts.by_extension.{extension}")),
                format!("scripts.by_extension.{extension}: {what}"),
            ));
        }
        scripts
            .by_extension
            .insert(extension, name.get_ref().trim().to_string());
    }
    Ok(())
}

/// `[skills.NAME]`: each skill's grants, `allow_net` checked as `[sandbox] network` is.
fn skills(
    raw: BTreeMap<String, RawSkill>,
    f: &Fail<'_>,
) -> Result<BTreeMap<String, super::SkillGrants>, ConfigError> {
    use skillcat_core::capability::Network;
    let mut out = BTreeMap::new();
    for (name, s) in raw {
        let allow_net = match s.allow_net {
            None => Network::Off,
            Some(v) => {
                let span = v.span();
                match v.into_inner() {
                    RawNetwork::Bool(b) => Network::from_bool(b),
                    RawNetwork::List(l) => Network::from_patterns(l.iter().map(String::as_str))
                        .map_err(|e| {
                            f.fail(
                                Some(span.clone()),
                                Some(format!("skills.{name}.allow_net")),
                                format!("skills.{name}.allow_net: {e}"),
                            )
                        })?,
                }
            }
        };
        out.insert(
            name,
            super::SkillGrants {
                allow_read: s.allow_read.unwrap_or_default(),
                allow_write: s.allow_write.unwrap_or_default(),
                allow_net,
            },
        );
    }
    Ok(out)
}

/// What [`RawConfig`] holds besides the sources, the sandbox and the scripts.
struct RawRest {
    keyring: Option<Spanned<String>>,
    cache_dir: Option<Spanned<String>>,
    max_index_age: Option<u64>,
    prompt: Option<RawPrompt>,
    matcher: Option<RawMatcher>,
    trusted_projects: Option<Vec<RawTrusted>>,
    install: Option<RawInstall>,
    runtime: Option<RawRuntime>,
}

/// The paths (keyring, cache, trusted projects, the model), `[prompt]`, `[install]`,
/// `[runtime]` and `[matcher]`.
fn rest(
    raw: RawRest,
    config: &mut Config,
    base: &Path,
    home: Option<&Path>,
    f: &Fail<'_>,
) -> Result<(), ConfigError> {
    config.keyring = raw
        .keyring
        .map(|k| PathBuf::from(resolve_spec(k.get_ref(), base, home)));
    config.cache_dir = raw
        .cache_dir
        .map(|k| PathBuf::from(resolve_spec(k.get_ref(), base, home)));
    config.max_index_age = raw.max_index_age;
    config.trusted_projects = raw
        .trusted_projects
        .unwrap_or_default()
        .into_iter()
        .map(|t| {
            let (path, sha256) = match t {
                RawTrusted::Path(p) => (p, None),
                RawTrusted::Digest { path, sha256 } => (path, Some(sha256)),
            };
            TrustedProject {
                dir: PathBuf::from(resolve_spec(&path, base, home)),
                sha256,
            }
        })
        .collect();
    config.prompt.budget = raw.prompt.and_then(|p| p.budget);
    if let Some(install) = raw.install {
        config.install.require_signatures = install.require_signatures.unwrap_or(false);
        if let Some(audit) = install.audit {
            config.install.audit = audit.get_ref().parse().map_err(|e: crate::PolicyError| {
                f.fail(
                    Some(audit.span()),
                    Some("install.audit".into()),
                    format!("install.audit: {e}"),
                )
            })?;
        }
    }
    if let Some(audit) = raw.runtime.and_then(|r| r.audit) {
        config.runtime.audit = match audit.get_ref().as_str() {
            "off" => RuntimeAudit::Off,
            "withhold" => RuntimeAudit::Withhold,
            other => {
                return Err(f.fail(
                    Some(audit.span()),
                    Some("runtime.audit".into()),
                    format!("runtime.audit: {other:?}: expected \"off\" or \"withhold\""),
                ));
            }
        };
    }
    if let Some(m) = raw.matcher {
        config.matcher = m
            .resolve()
            .map_err(|e| f.fail(Some(e.span), Some(e.key), e.message))?;
        if let Some(dir) = &config.matcher.model_dir {
            let resolved = resolve_spec(&dir.display().to_string(), base, home);
            config.matcher.model_dir = Some(PathBuf::from(resolved));
        }
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    sources: Option<Vec<RawSource>>,
    sandbox: Option<RawSandbox>,
    scripts: Option<RawScripts>,
    keyring: Option<Spanned<String>>,
    cache_dir: Option<Spanned<String>>,
    max_index_age: Option<u64>,
    prompt: Option<RawPrompt>,
    matcher: Option<RawMatcher>,
    trusted_projects: Option<Vec<RawTrusted>>,
    install: Option<RawInstall>,
    runtime: Option<RawRuntime>,
    skills: Option<BTreeMap<String, RawSkill>>,
}

/// A `[skills.NAME]` table.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSkill {
    allow_read: Option<Vec<String>>,
    allow_write: Option<Vec<String>>,
    allow_net: Option<Spanned<RawNetwork>>,
}

/// A `trusted_projects` entry: `{ path = "/dir", sha256 = "sha256:…" }`, or a bare path (from
/// before digests were recorded: trusts no content).
#[derive(Deserialize)]
#[serde(untagged)]
enum RawTrusted {
    Path(String),
    Digest { path: String, sha256: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSource {
    path: Spanned<String>,
    name: Option<Spanned<String>>,
    trusted: Option<bool>,
    core: Option<Spanned<bool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSandbox {
    fs_read: Option<Vec<String>>,
    fs_write: Option<Vec<String>>,
    network: Option<Spanned<RawNetwork>>,
    resolve: Option<BTreeMap<String, Spanned<String>>>,
    timeout: Option<Spanned<u64>>,
    max_timeout: Option<Spanned<u64>>,
    memory: Option<Spanned<u64>>,
    processes: Option<Spanned<u64>>,
    output: Option<u64>,
    workspace_bytes: Option<Spanned<u64>>,
    workspace_files: Option<Spanned<u64>>,
    protect: Option<Vec<String>>,
}

/// `network = true | false | ["host", …]`.
#[derive(Deserialize)]
#[serde(untagged, expecting = "true, false or a list of host patterns")]
enum RawNetwork {
    Bool(bool),
    List(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScripts {
    interpreters: Option<BTreeMap<String, Spanned<String>>>,
    by_extension: Option<BTreeMap<String, Spanned<String>>>,
    extension_fields: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPrompt {
    budget: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInstall {
    require_signatures: Option<bool>,
    audit: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRuntime {
    audit: Option<Spanned<String>>,
}
