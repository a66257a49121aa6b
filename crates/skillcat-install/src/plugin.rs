//! `add SOURCE --plugin NAME`: the skills of one plugin of a Claude Code marketplace, as the
//! source records them ([`RootRecord::plugins`](skillcat_core::source::RootRecord::plugins)).

use skillcat_core::source::{Discovery, Source};

use super::InstallError;

/// Keeps in `found` the skills (and the faults) of `plugin` alone. A source that has no such
/// plugin is refused (exit 1, as for a skill it lacks: the request is well formed) naming the
/// plugins it has (or saying it is not a marketplace).
pub(crate) async fn keep_plugin(
    src: &dyn Source,
    typed: &str,
    plugin: &str,
    found: &mut Discovery,
) -> Result<(), InstallError> {
    let mut all: Vec<String> = Vec::new();
    let mut keep = std::collections::HashSet::new();
    let roots = found
        .skills
        .iter()
        .map(|s| s.root().to_string())
        .chain(found.faults.iter().map(|f| f.root.clone()));
    for root in roots {
        let plugins = src.record(&root).await?.plugins;
        if plugins.iter().any(|p| p == plugin) {
            keep.insert(root);
        }
        for p in plugins {
            if !all.contains(&p) {
                all.push(p);
            }
        }
    }
    if keep.is_empty() {
        return Err(InstallError::Refused(vec![if all.is_empty() {
            format!(
                "{typed}: not a Claude Code plugin marketplace (no .claude-plugin/marketplace.json with skills), so --plugin {plugin:?} names nothing"
            )
        } else {
            format!(
                "{typed}: no plugin {plugin:?} with skills in this marketplace (its plugins: {})",
                all.join(", ")
            )
        }]));
    }
    found.skills.retain(|s| keep.contains(s.root()));
    found.faults.retain(|f| keep.contains(&f.root));
    Ok(())
}
