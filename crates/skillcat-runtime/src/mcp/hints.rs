//! Hints in a tool result, written for the model that reads it (step 29, item 12). The command
//! line explains a failed run to its operator (`hint: … run with --allow-read PATH`); a model
//! can pass no flag, so what it reads says what it can do — work inside its work directory,
//! connect through the proxy by name — or what to ask the operator for: a grant of the server
//! (`skillcat mcp … --allow-read PATH`) or of the skill (`[skills.NAME] allow_read` in
//! `skillcat.toml`). The same reading of the output as the command line's
//! ([`denial`](crate::script::denial)), so the same allow-list: a path that may not be
//! suggested gets no hint at all. Narrower than the command line's: a path the arguments name
//! is not suggested for that alone, since here the model wrote them (a hint would tell it
//! which files exist on the host).

use serde_json::Value as Json;

use crate::capability::{Grant, Network};
use crate::script::denial::{self, Reach};
use crate::script::{NetworkReport, RunnerConfig};

/// At most this many bytes of hints follow a result's text.
pub(crate) const MAX_HINTS: usize = 2048;

/// Says the proxy's refusals again for a model: a host outside the grant is the operator's to
/// grant, through the server's flag or the skill's table, never `skillcat run`'s flag.
pub(crate) fn network_for_model(report: &mut NetworkReport, skill: &str) {
    for r in &mut report.refused {
        if r.hint.as_deref().is_some_and(|h| h.contains("--allow-net")) {
            r.hint = Some(format!(
                "this tool may not reach {t}: use a host it may reach, or ask the operator to \
                 grant it (`skillcat mcp … --allow-net {t}`, or `allow_net = [\"{t}\"]` under \
                 [skills.{skill}] in skillcat.toml)",
                t = r.target
            ));
        }
    }
}

/// The hint lines (`[hint: …]`) for a failed run's `output`, under `grant`, for the model: each
/// path the sandbox kept the script from that may be suggested, and a direct connection
/// around the proxy. Empty when there is nothing to say; at most [`MAX_HINTS`] bytes.
pub(crate) fn failure_for_model(
    output: &str,
    grant: &Grant,
    config: &RunnerConfig,
    args: &Json,
    skill: &str,
) -> String {
    let named = denial::argument_words(args);
    let mut lines: Vec<String> = Vec::new();
    if let Network::Hosts(hosts) = &grant.network
        && let Some(direct) = denial::direct_connection(output, &named)
    {
        let hosts: Vec<String> = hosts.iter().map(ToString::to_string).collect();
        let to = direct
            .target
            .map_or_else(String::new, |t| format!(" to {t}"));
        lines.push(format!(
            "[hint: the connection{to} was refused because it did not go through the proxy: \
             this tool reaches the network only through the proxy its HTTPS_PROXY names, by \
             host name, to {}; connect to the host's name through that proxy, not to an \
             address]",
            hosts.join(", ")
        ));
    }
    // Not `named`: here the arguments are the model's, and a hint for a path only they named
    // would tell a model which files exist on the host outside its grants.
    for d in denial::runner_denials(output, grant, config, &[]) {
        let Some(target) = d.grant.as_deref().map(|p| p.display().to_string()) else {
            continue;
        };
        let path = d.path.display();
        let (key, flag) = match d.reach {
            Reach::NotGranted if d.grant.as_deref() == Some(d.path.as_path()) => {
                ("allow_read", "--allow-read")
            }
            Reach::InCallerDir => ("allow_read", "--allow-read"),
            Reach::FilePermissions => {
                lines.push(format!(
                    "[hint: {path} is granted, but its file permissions keep this tool out; \
                     ask the operator to make it readable]"
                ));
                continue;
            }
            _ => ("allow_write", "--allow-write"),
        };
        let what = if flag == "--allow-read" {
            format!("this tool may not read {path}")
        } else {
            format!("this tool may not write {path}")
        };
        lines.push(format!(
            "[hint: {what} (the sandbox hides or refuses what is not granted): use a file in \
             your work directory instead, or ask the operator to grant it (`skillcat mcp … \
             {flag} {target}`, or `{key} = [\"{target}\"]` under [skills.{skill}] in \
             skillcat.toml)]"
        ));
    }
    let mut out = String::new();
    for l in lines {
        // Every line whole, within the budget: a path comes from the script's output.
        let l: String = l.chars().filter(|c| !c.is_control()).collect();
        if out.len() + l.len() + 1 > MAX_HINTS {
            break;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&l);
    }
    out
}
