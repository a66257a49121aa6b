//! Read-side commands: validate, properties, prompt, list, show, read.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use skillcat::document::{Fault, FaultKind, Skill, ValidateOptions};
use skillcat::prompt::{PromptFormat, PromptOptions, PromptSkill};
use skillcat::source::{self, DirOptions, DirSource, Discovery, Source, SourceExt};

use super::{FAULTS, Format, OK, PromptFormatArg, USAGE};

/// A PATH argument naming a `SKILL.md` (any case) stands for its directory, as in the reference.
fn skill_dir_of(arg: &str) -> (String, PathBuf) {
    let path = Path::new(arg);
    let is_doc = path.file_name().is_some_and(|n| n.to_string_lossy().eq_ignore_ascii_case("skill.md"));
    if is_doc && path.is_file() {
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        return (parent.display().to_string(), parent.to_path_buf());
    }
    (arg.to_string(), path.to_path_buf())
}

fn has_document_entry(dir: &Path) -> bool {
    ["SKILL.md", "skill.md"].iter().any(|n| std::fs::symlink_metadata(dir.join(n)).is_ok())
}

/// Opens what a command line names: a skill directory (or its SKILL.md) as one skill, anything
/// else through [`source::open`]. Errors are printed; the exit code is returned.
fn open_source(arg: &str) -> Result<Arc<dyn Source>, u8> {
    let (shown, path) = skill_dir_of(arg);
    let result = if path.is_dir() && has_document_entry(&path) {
        DirSource::open_skill(&path, DirOptions::default()).map(|s| Arc::new(s) as Arc<dyn Source>)
    } else {
        source::open(&path.to_string_lossy())
    };
    result.map_err(|e| {
        eprintln!("Error: {}", describe_open_error(&shown, &e));
        USAGE
    })
}

fn describe_open_error(shown: &str, e: &skillcat::Error) -> String {
    match e {
        skillcat::Error::NotFound(_) => format!("Path does not exist: {shown}"),
        other => other.to_string(),
    }
}

fn print_text_report(path: &str, faults: &[Fault]) {
    if faults.is_empty() {
        println!("Valid skill: {path}");
    } else {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "Validation failed for {path}:");
        for f in faults {
            let _ = writeln!(err, "  - {}", f.message());
        }
    }
}

struct Report {
    path: String,
    name: Option<String>,
    faults: Vec<Fault>,
}

fn report_of_discovery(shown: &str, d: &Discovery, opts: &ValidateOptions, out: &mut Vec<Report>) {
    let join = |root: &str| {
        if root.is_empty() { shown.to_string() } else { format!("{}/{}", shown.trim_end_matches('/'), root) }
    };
    // Report in the source's order: skills and faults interleaved by root.
    let mut items: Vec<(&str, Report)> = Vec::new();
    for s in &d.skills {
        items.push((s.root(), Report {
            path: join(s.root()),
            name: s.raw_name().map(str::to_string),
            faults: s.validate(opts),
        }));
    }
    for f in &d.faults {
        items.push((&f.root, Report { path: join(&f.root), name: None, faults: vec![f.fault.clone()] }));
    }
    items.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    out.extend(items.into_iter().map(|(_, r)| r));
}

/// `skillcat validate PATH...`
pub async fn validate(paths: &[String], format: Format, allow_field: Vec<String>) -> u8 {
    let mut opts = ValidateOptions::default();
    for f in allow_field {
        opts = opts.allow_field(f);
    }
    let mut reports = Vec::new();
    let mut unreadable = false;
    for arg in paths {
        let (shown, path) = skill_dir_of(arg);
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) => {
                unreadable = true;
                let fault = if e.kind() == std::io::ErrorKind::NotFound {
                    Fault::missing_path(&shown)
                } else {
                    Fault::unreadable(format!("{shown}: {e}"))
                };
                reports.push(Report { path: shown, name: None, faults: vec![fault] });
                continue;
            }
        };
        if meta.is_dir() && has_document_entry(&path) {
            // One skill: check the path before reading anything.
            if let Err(fault) = source::check(&path) {
                reports.push(Report { path: shown, name: None, faults: vec![fault] });
                continue;
            }
            match DirSource::open_skill(&path, DirOptions::default()) {
                Ok(src) => match source::discover(&src).await {
                    Ok(d) => report_of_discovery(&shown, &d, &opts, &mut reports),
                    Err(e) => {
                        unreadable = true;
                        reports.push(Report { path: shown, name: None, faults: vec![Fault::unreadable(e)] });
                    }
                },
                Err(e) => {
                    unreadable = true;
                    reports.push(Report { path: shown, name: None, faults: vec![Fault::unreadable(e)] });
                }
            }
            continue;
        }
        let src = match source::open(&path.to_string_lossy()) {
            Ok(s) => s,
            Err(skillcat::Error::UnsupportedSource(_)) if meta.is_file() => {
                reports.push(Report { path: shown.clone(), name: None, faults: vec![Fault::not_a_directory(&shown)] });
                continue;
            }
            Err(e) => {
                unreadable = true;
                reports.push(Report { path: shown, name: None, faults: vec![Fault::unreadable(e)] });
                continue;
            }
        };
        match source::discover(&*src).await {
            Ok(d) if d.skills.is_empty() && d.faults.is_empty() => {
                // A directory with no document and no skill below it is a skill directory
                // missing its document, as the reference says — not an empty success.
                reports.push(Report { path: shown, name: None, faults: vec![Fault::missing_document()] });
            }
            Ok(d) => report_of_discovery(&shown, &d, &opts, &mut reports),
            Err(e) => {
                unreadable = true;
                reports.push(Report { path: shown, name: None, faults: vec![Fault::unreadable(e)] });
            }
        }
    }
    match format {
        Format::Text => {
            for r in &reports {
                print_text_report(&r.path, &r.faults);
            }
        }
        Format::Json => {
            let arr: Vec<_> = reports
                .iter()
                .map(|r| json!({"path": r.path, "name": r.name, "valid": r.faults.is_empty(), "faults": r.faults}))
                .collect();
            println!("{}", serde_json::to_string_pretty(&arr).expect("json"));
        }
    }
    if unreadable {
        USAGE
    } else if reports.iter().any(|r| !r.faults.is_empty()) {
        FAULTS
    } else {
        OK
    }
}

/// The reference's wording for a refusal in `properties` and `prompt`.
fn refusal_message(location: &str, fault: &Fault) -> String {
    if fault.kind() == FaultKind::MissingDocument {
        format!("SKILL.md not found in {location}")
    } else {
        fault.message().to_string()
    }
}

/// `skillcat properties PATH`
pub async fn properties(arg: &str) -> u8 {
    let (shown, path) = skill_dir_of(arg);
    if !path.exists() {
        eprintln!("Error: Path does not exist: {shown}");
        return USAGE;
    }
    let src = match open_source(arg) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let d = match source::discover(&*src).await {
        Ok(d) => d,
        Err(e) => {
            eprintln!("Error: {e}");
            return USAGE;
        }
    };
    if let Some(f) = d.faults.first() {
        eprintln!("Error: {}", refusal_message(&shown, &f.fault));
        return FAULTS;
    }
    let Some(skill) = d.skills.first() else {
        eprintln!("Error: SKILL.md not found in {shown}");
        return FAULTS;
    };
    if d.skills.len() > 1 {
        eprintln!("Error: {shown} holds {} skills; name one skill directory", d.skills.len());
        return USAGE;
    }
    match skill.properties() {
        Ok(p) => {
            println!("{}", serde_json::to_string_pretty(&p).expect("json"));
            OK
        }
        Err(f) => {
            eprintln!("Error: {}", f.message());
            FAULTS
        }
    }
}

async fn discover_all(args: &[String]) -> Result<Vec<(Arc<dyn Source>, Discovery)>, u8> {
    let mut out = Vec::new();
    for arg in args {
        let src = open_source(arg)?;
        match source::discover(&*src).await {
            Ok(d) => out.push((src, d)),
            Err(e) => {
                eprintln!("Error: {e}");
                return Err(USAGE);
            }
        }
    }
    Ok(out)
}

/// `skillcat prompt PATH...`
pub async fn prompt(args: &[String], format: PromptFormatArg, budget: Option<usize>) -> u8 {
    let found = match discover_all(args).await {
        Ok(f) => f,
        Err(code) => return code,
    };
    let mut errors = Vec::new();
    let mut entries: Vec<(String, String, String)> = Vec::new();
    for (_, d) in &found {
        for f in &d.faults {
            errors.push(refusal_message(&f.location, &f.fault));
        }
        for s in &d.skills {
            match s.properties() {
                Ok(_) => entries.push((
                    s.raw_name().unwrap_or_default().to_string(),
                    s.description().to_string(),
                    s.location().to_string(),
                )),
                Err(f) => errors.push(format!("{}: {}", s.location(), f.message())),
            }
        }
    }
    if !errors.is_empty() {
        for e in errors {
            eprintln!("Error: {e}");
        }
        return FAULTS;
    }
    let skills: Vec<PromptSkill<'_>> = entries
        .iter()
        .map(|(n, d, l)| PromptSkill { name: n, description: d, location: l })
        .collect();
    let opts = PromptOptions {
        format: match format {
            PromptFormatArg::Xml => PromptFormat::Xml,
            PromptFormatArg::Markdown => PromptFormat::Markdown,
            PromptFormatArg::Json => PromptFormat::Json,
        },
        budget,
        omit_when_empty: false,
    };
    let rendered = skillcat::prompt::render(&skills, &opts);
    println!("{}", rendered.text);
    if !rendered.report.is_clean() {
        eprintln!("{}", rendered.report);
    }
    OK
}

fn print_faults(d: &Discovery) {
    for f in &d.faults {
        eprintln!("Error: {}: {} [{}]", f.location, f.fault.message(), f.fault.kind());
    }
}

/// `skillcat list SOURCE`
pub async fn list(arg: &str, format: Format) -> u8 {
    let found = match discover_all(std::slice::from_ref(&arg.to_string())).await {
        Ok(f) => f,
        Err(code) => return code,
    };
    let (src, d) = &found[0];
    let opts = ValidateOptions::default();
    let mut rows = Vec::new();
    let mut any_fault = !d.faults.is_empty();
    for s in &d.skills {
        let faults = s.validate(&opts);
        any_fault |= !faults.is_empty();
        let name = s.name();
        let manifest = src.manifest(s.root(), &name, s.version().unwrap_or("")).await;
        let digest = match manifest {
            Ok(m) => Some(m.digest),
            Err(e) => {
                eprintln!("Error: {}: {e}", s.location());
                any_fault = true;
                None
            }
        };
        rows.push((s, name, digest, faults));
    }
    match format {
        Format::Text => {
            let mut out = std::io::stdout().lock();
            for (s, name, digest, faults) in &rows {
                let desc = s.description().split_whitespace().collect::<Vec<_>>().join(" ");
                let _ = writeln!(out, "{name}  {desc}");
                let _ = writeln!(out, "    {}  {}", s.location(), digest.as_deref().unwrap_or("-"));
                for f in faults {
                    let _ = writeln!(out, "    ! {} [{}]", f.message(), f.kind());
                }
            }
        }
        Format::Json => {
            let skills: Vec<_> = rows
                .iter()
                .map(|(s, name, digest, faults)| {
                    json!({"name": name, "description": s.description(), "location": s.location(),
                           "root": s.root(), "digest": digest, "valid": faults.is_empty(), "faults": faults})
                })
                .collect();
            let faults: Vec<_> = d
                .faults
                .iter()
                .map(|f| json!({"root": f.root, "location": f.location, "kind": f.fault.kind().as_str(), "message": f.fault.message()}))
                .collect();
            println!("{}", serde_json::to_string_pretty(&json!({"skills": skills, "faults": faults})).expect("json"));
        }
    }
    print_faults(d);
    if any_fault { FAULTS } else { OK }
}

/// Finds a skill by name, `-` and `_` alike.
fn find<'a>(d: &'a Discovery, name: &str) -> Option<&'a Skill> {
    let want = skillcat::document::normalize_name(name).replace('_', "-");
    d.skills.iter().find(|s| s.name().replace('_', "-") == want)
}

async fn find_skill(arg: &str, name: &str) -> Result<(Arc<dyn Source>, Skill), u8> {
    let mut found = discover_all(std::slice::from_ref(&arg.to_string())).await?;
    let (src, d) = found.pop().expect("one source");
    match find(&d, name) {
        Some(s) => Ok((src, s.clone())),
        None => {
            print_faults(&d);
            eprintln!("Error: no skill named '{name}' in {arg}");
            Err(FAULTS)
        }
    }
}

/// `skillcat show SOURCE NAME`
pub async fn show(arg: &str, name: &str) -> u8 {
    match find_skill(arg, name).await {
        Ok((_, skill)) => {
            println!("{}", skill.body());
            OK
        }
        Err(code) => code,
    }
}

/// `skillcat read SOURCE NAME PATH`
pub async fn read(arg: &str, name: &str, path: &str) -> u8 {
    let (src, skill) = match find_skill(arg, name).await {
        Ok(x) => x,
        Err(code) => return code,
    };
    let Some(rel) = skill.resolve(path) else {
        eprintln!("Error: '{path}' is not a file inside skill '{}' (absolute paths, '..' and URLs are refused)", skill.name());
        return FAULTS;
    };
    if !skill.files().iter().any(|f| f.path == rel) {
        eprintln!("Error: skill '{}' has no file '{rel}'", skill.name());
        return FAULTS;
    }
    match src.read(&source::join_path(skill.root(), &rel)).await {
        Ok(bytes) => {
            let mut out = std::io::stdout().lock();
            if out.write_all(&bytes).and_then(|_| out.flush()).is_err() {
                return USAGE;
            }
            OK
        }
        Err(e) => {
            eprintln!("Error: {e}");
            FAULTS
        }
    }
}
