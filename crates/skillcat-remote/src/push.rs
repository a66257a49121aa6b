//! A skill into an OCI registry: the reproducible archive as the one layer of an artifact in
//! ToolHive's layout, with skillcat's annotations, and a minisign signature as its referrer.
//!
//! ```text
//! push(src, skill, oci://host/repo:tag)
//!   layer    = pack::write_tar_gz(files)            reproducible: same files, same bytes
//!   config   = image config, ToolHive's labels      (name, description, version, files, …)
//!   manifest = artifactType dev.toolhive.skills.v1, config, [layer], annotations
//!              (ToolHive's, org.opencontainers.image.created fixed, dev.skillcat.skill.digest,
//!              dev.skillcat.manifest.digest)        → the same skill gives the same digest
//!   blobs: HEAD, else POST + PUT;  manifest: PUT /v2/<repo>/manifests/<tag>
//!   latest: when the tag is the version, the same manifest under `latest` too, unless the
//!   repository holds a higher version tag (GET …/tags/list) or the caller said not to
//! attach_signature(…, minisig)
//!   referrer = artifactType application/vnd.skillcat.signature.v1, empty config,
//!              [the .minisig text], subject = the skill's manifest  → PUT by digest
//!   a registry with the referrers API indexes it itself; otherwise the tag sha256-<hex> holds
//!   an image index of the referrers, which is read, extended and written back
//! ```

use bytes::Bytes;

use crate::digest::{Manifest as SkillManifest, sha256, sha256_digest, to_hex};
use crate::document::Skill;
use crate::error::{Error, Result};
use crate::oci::Reference;
use crate::oci::client::{Client, ClientOptions};
use crate::oci::layout::{self, Descriptor, Document, Index, SkillInfo};
use crate::oci::reference::{DEFAULT_TAG, highest_version};
use crate::pack::{PackEntry, write_tar_gz};
use crate::source::{Source, SourceExt};

/// `org.opencontainers.image.created` of every push: the time of the archive's entries
/// (1980-01-01), so that the same skill pushed twice gives the same manifest.
pub const CREATED: &str = "1980-01-01T00:00:00Z";

/// What [`push`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// Where: the repository at the tag, and the manifest's digest.
    pub reference: Reference,
    /// The manifest's digest (`sha256:…`).
    pub digest: String,
    /// The manifest's descriptor (what a signature's `subject` names).
    pub descriptor: Descriptor,
    /// The layer's digest and size.
    pub layer: Descriptor,
    /// The skill's manifest (files, modes), under the version pushed: what a signature signs.
    pub skill: SkillManifest,
    /// Blobs the registry did not hold yet (of the config and the layer).
    pub uploaded: usize,
    /// What became of the tag `latest`.
    pub latest: Latest,
}

/// What a push did with the tag `latest` ([`DEFAULT_TAG`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Latest {
    /// `latest` names what was pushed now.
    Moved,
    /// Left where it was: the repository holds a higher version tag (this one).
    Higher(String),
    /// Not touched: the caller said not to (`--no-latest`), or the push named a tag other than
    /// the skill's version (a tag of its own, such as `beta`, or `latest` itself).
    Untouched,
}

/// How [`attach_signature`] made the signature findable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attached {
    /// The registry's referrers API lists it.
    ReferrersApi,
    /// The fallback tag `sha256-<hex>` lists it (the registry has no referrers API).
    FallbackTag,
}

/// The version a skill is pushed as: its `metadata.version`, else the tag.
pub fn version_of(skill: &Skill, target: &Reference) -> Option<String> {
    skill
        .version()
        .map(str::to_string)
        .or_else(|| target.tag.clone())
}

/// Pushes `skill` (discovered with its files) from `src` to `target`'s repository under its
/// tag — which defaults to the skill's version — in ToolHive's layout. When that tag is the
/// version and `move_latest`, the same manifest also goes under `latest`, unless the repository
/// holds a higher version tag: `latest` is the highest version pushed, which is what a
/// reference without a tag reads ([`OciSource`](crate::oci::OciSource)).
pub async fn push(
    src: &dyn Source,
    skill: &Skill,
    target: &Reference,
    opts: &ClientOptions,
    move_latest: bool,
) -> Result<Pushed> {
    if target.digest.is_some() {
        return Err(Error::Invalid(format!(
            "{target}: push to a tag, not a digest (the digest is what the push makes)"
        )));
    }
    let version = version_of(skill, target).ok_or_else(|| {
        Error::Invalid(format!(
            "{target}: the skill has no metadata.version, so name a tag (oci://HOST/REPO:TAG)"
        ))
    })?;
    let tag = match &target.tag {
        Some(t) => t.clone(),
        None => {
            crate::oci::reference::check_tag(&version).map_err(|why| {
                Error::Invalid(format!(
                    "{target}: the skill's version cannot be a tag ({why}); name one"
                ))
            })?;
            version.clone()
        }
    };
    let files = if skill.has_files() {
        skill.files().to_vec()
    } else {
        src.files(skill.root()).await?
    };
    let name = skill.name();
    let skill_manifest = src
        .manifest_of(skill.root(), &files, &name, &version)
        .await?;
    let mut entries = Vec::with_capacity(files.len());
    for f in &files {
        let bytes = src
            .read(&crate::path::join_path(skill.root(), &f.path))
            .await?;
        entries.push(PackEntry {
            path: f.path.clone(),
            bytes,
            executable: f.executable,
        });
    }
    let (layer, diff_id) = tokio::task::spawn_blocking(move || layer_of(&entries))
        .await
        .map_err(|e| Error::task("packing the layer", e))??;
    let allowed = skill.allowed_tools();
    let info = SkillInfo {
        name: name.clone(),
        description: skill.description().to_string(),
        version,
        allowed_tools: (!allowed.is_empty()).then(|| allowed.join(" ")),
        license: skill.license().map(str::to_string),
        files: files.iter().map(|f| f.path.clone()).collect(),
        skill_digest: skill_manifest.digest.clone(),
        manifest_digest: skill_manifest.manifest_digest(),
        created: CREATED.into(),
    };
    let (config, manifest) = layout::toolhive_manifest(&info, &layer, &diff_id);
    let layer_desc = Descriptor::of(layout::LAYER_TAR_GZIP, &layer);
    let descriptor = Descriptor::of(layout::MANIFEST_V1, &manifest);
    let target = target.with_tag(&tag);
    let client = Client::new(&target, &push_options(opts))?;
    let mut uploaded = 0;
    for blob in [Bytes::from(config), Bytes::from(layer)] {
        if client.push_blob(blob).await?.1 {
            uploaded += 1;
        }
    }
    let manifest = Bytes::from(manifest);
    let digest = client
        .push_manifest(&tag, layout::MANIFEST_V1, manifest.clone())
        .await?;
    let latest = if !move_latest || tag != skill_manifest.version || tag == DEFAULT_TAG {
        Latest::Untouched
    } else {
        // A repository whose tags cannot be listed gets `latest` moved: the push's own rule.
        let tags = client.tags().await.unwrap_or_default();
        match highest_version(tags.iter().map(String::as_str)) {
            Some(h) if skillcat_core::version::compare(h, &tag) == std::cmp::Ordering::Greater => {
                Latest::Higher(h.to_string())
            }
            _ => {
                client
                    .push_manifest(DEFAULT_TAG, layout::MANIFEST_V1, manifest)
                    .await?;
                Latest::Moved
            }
        }
    };
    Ok(Pushed {
        reference: target.with_digest(&digest),
        digest,
        descriptor,
        layer: layer_desc,
        skill: skill_manifest,
        uploaded,
        latest,
    })
}

/// The reproducible `.tar.gz` of the files, and the `sha256:` of the tar inside (the image
/// config's `diff_id`).
fn layer_of(entries: &[PackEntry]) -> Result<(Vec<u8>, String)> {
    let mut gz = Vec::new();
    write_tar_gz(entries, &mut gz).map_err(|e| Error::io("the layer", e))?;
    let mut tar = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut tar)
        .map_err(|e| Error::io("the layer", e))?;
    Ok((gz, format!("sha256:{}", to_hex(sha256(&tar)))))
}

fn push_options(opts: &ClientOptions) -> ClientOptions {
    ClientOptions {
        push: true,
        ..opts.clone()
    }
}

/// Attaches a `.minisig` text to the manifest `subject` of `target`'s repository as a
/// referrer, and makes it findable: through the referrers API when the registry has one, else
/// by adding it to the image index under the tag `sha256-<hex>` (read, extended, written back;
/// a referrer already listed is not listed twice).
pub async fn attach_signature(
    target: &Reference,
    subject: &Descriptor,
    signature: &str,
    title: &str,
    opts: &ClientOptions,
) -> Result<(String, Attached)> {
    let client = Client::new(target, &push_options(opts))?;
    let sig = Bytes::from(signature.as_bytes().to_vec());
    client.push_blob(Bytes::from_static(b"{}")).await?;
    client.push_blob(sig.clone()).await?;
    let manifest = layout::signature_manifest(subject.clone(), &sig, title);
    let digest = sha256_digest(&manifest);
    let mut entry = Descriptor::of(layout::MANIFEST_V1, &manifest);
    entry.artifact_type = Some(layout::SIGNATURE_ARTIFACT.into());
    client
        .push_manifest(&digest, layout::MANIFEST_V1, Bytes::from(manifest))
        .await?;
    // An API that does not list what was just pushed gets the fallback tag too.
    if let Some(listed) = client.referrers_api(&subject.digest).await?
        && let Ok(Document::Index(i)) = layout::parse(&listed.bytes, None)
        && i.manifests.iter().any(|d| d.digest == digest)
    {
        return Ok((digest, Attached::ReferrersApi));
    }
    let tag = layout::fallback_tag(&subject.digest);
    let mut index = match client.manifest(&tag).await {
        Ok(r) => match layout::parse(&r.bytes, None) {
            Ok(Document::Index(i)) => i,
            _ => {
                return Err(Error::Invalid(format!(
                    "{target}: the tag {tag} holds something that is not an image index; not overwriting it"
                )));
            }
        },
        Err(Error::NotFound(_)) => Index::new(),
        Err(e) => return Err(e),
    };
    if !index.manifests.iter().any(|d| d.digest == digest) {
        index.manifests.push(entry);
    }
    client
        .push_manifest(&tag, layout::INDEX_V1, Bytes::from(index.to_bytes()))
        .await?;
    Ok((digest, Attached::FallbackTag))
}
