//! `skillcat push`: a skill into an OCI registry, signed when asked.

use std::io::Write;

use skillcat::ops::trust::{self as ops, PushStatementError};
use skillcat::push::{self, Attached, Latest};
use skillcat::source::oci::Reference;

use super::{CliResult, ExitStatus, Globals};

/// `skillcat push` arguments.
#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// Any source.
    pub source: String,
    /// The skill to push.
    pub name: String,
    /// Where: `oci://HOST[:PORT]/REPO[:TAG]` (the tag defaults to the skill's version, and then
    /// `latest` moves to it too, unless the repository holds a higher version).
    pub target: String,
    /// Leave the tag `latest` where it is (a push tagged with the version moves it otherwise).
    #[arg(long)]
    pub no_latest: bool,
    /// Sign the skill with this minisign secret key and attach the signature as a referrer.
    #[arg(long, value_name = "KEY")]
    pub sign: Option<String>,
    /// Push a skill that fails validation (never signed).
    #[arg(long)]
    pub force: bool,
}

/// `skillcat push SOURCE NAME oci://HOST/REPO[:TAG] [--sign KEY]`
pub async fn push(a: PushArgs, g: &Globals) -> CliResult {
    let target = match Reference::parse(&a.target) {
        Ok(r) => r,
        Err(e) => {
            return Err(usage!("{e}"));
        }
    };
    if a.sign.is_some() && a.force {
        return Err(usage!(
            "--sign and --force do not go together: a skill that fails validation is never signed"
        ));
    }
    // The key first: a wrong path or password costs no upload.
    let mut key = a.sign.as_deref().map(super::trust::load_key).transpose()?;
    let (src, skill) = super::read::find_skill(&a.source, &a.name, g).await?;
    super::trust::refuse_invalid(&skill, a.force, ("Pushing", "push", "pushed"), g)?;
    if g.open.offline {
        return Err(usage!("push needs the network; drop --offline"));
    }
    let opts = g.push_client_options();
    // Signed before anything is uploaded: a refused key leaves the registry as it was.
    let signature = match &mut key {
        Some(k) => {
            let statement = ops::push_statement(&*src, &skill, &target)
                .await
                .map_err(|e| match e {
                    PushStatementError::NoVersion(_) => usage!(
                        "{target}: the skill has no metadata.version, so name a tag (oci://HOST/REPO:TAG)"
                    ),
                    e => failed!("{e}"),
                })?;
            Some(super::trust::sign_with(k, &statement)?)
        }
        None => None,
    };
    let pushed = match push::push(&*src, &skill, &target, &opts, !a.no_latest).await {
        Ok(p) => p,
        Err(e) => {
            return Err(failed!(cause = e));
        }
    };
    out!(
        "Pushed {}@{} ({}) → {} ({} of 2 blobs uploaded)",
        pushed.skill.name,
        pushed.skill.version,
        pushed.skill.digest,
        pushed.reference,
        pushed.uploaded
    );
    match &pushed.latest {
        Latest::Moved => out!(
            "Tagged latest: {}@{}",
            pushed.skill.name,
            pushed.skill.version
        ),
        Latest::Higher(h) => out!(
            "latest stays at {h}, a higher version than {} (a tag without a version reads it)",
            pushed.skill.version
        ),
        Latest::Untouched => {}
    }
    if let Some(sig) = signature {
        let title = format!("{}{}", pushed.skill.name, skillcat::sign::SIGNATURE_SUFFIX);
        match push::attach_signature(&pushed.reference, &pushed.descriptor, &sig, &title, &opts)
            .await
        {
            Ok((digest, how)) => out!(
                "Signed: signature {digest} refers to {} ({})",
                pushed.digest,
                match how {
                    Attached::ReferrersApi => "listed by the referrers API",
                    Attached::FallbackTag => "listed under the tag sha256-<hex>: no referrers API",
                }
            ),
            Err(e) => {
                return Err(failed!(
                    "the skill was pushed, but its signature was not attached: {e}"
                ));
            }
        }
    }
    Ok(ExitStatus::Success)
}
