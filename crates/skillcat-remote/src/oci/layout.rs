//! OCI documents (image manifests, image indexes) and the skill layouts read and written.
//!
//! Pure: bytes in, checked values out (the fuzz target `oci_manifest` drives [`parse`]).
//!
//! | layout | how it is told | the skill's files |
//! | --- | --- | --- |
//! | ToolHive (written by default) | `artifactType` `dev.toolhive.skills.v1` | one `…tar+gzip` layer |
//! | Skillet (ToolHive's older RFC) | `artifactType` or config type `application/vnd.stacklok.skillet.skill.v1…` | one `…tar+gzip` layer |
//! | Agent Skills proposal | config `application/vnd.agentskills.skill.config.v1+json` | layer `application/vnd.agentskills.skill.content.v1.tar+gzip`, files under `<name>/` |
//!
//! An image index is followed to the first manifest it lists that is an image manifest (ToolHive
//! wraps its manifest in an index for linux/amd64 and linux/arm64: both are the same skill).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::reference::check_digest;

/// An OCI image manifest.
pub const MANIFEST_V1: &str = "application/vnd.oci.image.manifest.v1+json";
/// An OCI image index.
pub const INDEX_V1: &str = "application/vnd.oci.image.index.v1+json";
/// A Docker schema 2 manifest (read, never written).
pub const DOCKER_MANIFEST_V2: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// A Docker manifest list (read, never written).
pub const DOCKER_LIST_V2: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
/// What a manifest request accepts.
pub const ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json";

/// ToolHive's artifact type.
pub const TOOLHIVE_ARTIFACT: &str = "dev.toolhive.skills.v1";
/// The prefix of ToolHive's older (Skillet) media type.
pub const SKILLET_PREFIX: &str = "application/vnd.stacklok.skillet.skill.v1";
/// The prefix of the Agent Skills proposal's media types.
pub const AGENTSKILLS_PREFIX: &str = "application/vnd.agentskills.skill.";
/// The OCI image config media type (ToolHive's config).
pub const IMAGE_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
/// A gzip-compressed tar layer.
pub const LAYER_TAR_GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
/// The empty config of artifacts that have none.
pub const EMPTY_CONFIG: &str = "application/vnd.oci.empty.v1+json";
/// The digest of the two bytes `{}` (the empty config's content).
pub const EMPTY_DIGEST: &str =
    "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
/// The artifact type of a skillcat signature referrer.
pub const SIGNATURE_ARTIFACT: &str = "application/vnd.skillcat.signature.v1";
/// The media type of its one layer: the `.minisig` text.
pub const MINISIG_LAYER: &str = "application/vnd.skillcat.minisign.signature.v1";

/// ToolHive's annotation and label keys.
pub const TH_NAME: &str = "dev.toolhive.skills.name";
/// See [`TH_NAME`].
pub const TH_DESCRIPTION: &str = "dev.toolhive.skills.description";
/// See [`TH_NAME`].
pub const TH_VERSION: &str = "dev.toolhive.skills.version";
/// See [`TH_NAME`].
pub const TH_ALLOWED_TOOLS: &str = "dev.toolhive.skills.allowedTools";
/// See [`TH_NAME`].
pub const TH_LICENSE: &str = "dev.toolhive.skills.license";
/// See [`TH_NAME`].
pub const TH_FILES: &str = "dev.toolhive.skills.files";
/// The Agent Skills proposal's name annotation.
pub const AS_NAME: &str = "io.agentskills.skill.name";
/// `org.opencontainers.image.created`.
pub const OCI_CREATED: &str = "org.opencontainers.image.created";
/// `org.opencontainers.image.title`.
pub const OCI_TITLE: &str = "org.opencontainers.image.title";
/// `org.opencontainers.image.version`.
pub const OCI_VERSION: &str = "org.opencontainers.image.version";
/// skillcat's annotation: the skill digest of the layer's files.
pub const SKILLCAT_SKILL_DIGEST: &str = "dev.skillcat.skill.digest";
/// skillcat's annotation: the digest of the skill's manifest (files, sizes, modes).
pub const SKILLCAT_MANIFEST_DIGEST: &str = "dev.skillcat.manifest.digest";

/// The largest manifest or index read.
pub const MAX_MANIFEST: u64 = 4 << 20;

/// A content descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// Its media type.
    pub media_type: String,
    /// `sha256:<hex>`.
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
    /// For a manifest in an index or a referrers list: its artifact type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// For a manifest in an index: the platform it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<serde_json::Value>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl Descriptor {
    /// A descriptor of `bytes` as `media_type`.
    pub fn of(media_type: &str, bytes: &[u8]) -> Descriptor {
        Descriptor {
            media_type: media_type.to_string(),
            digest: crate::digest::sha256_digest(bytes),
            size: bytes.len() as u64,
            artifact_type: None,
            platform: None,
            annotations: BTreeMap::new(),
        }
    }
}

/// An OCI image manifest (the fields skillcat reads and writes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Always 2.
    pub schema_version: u32,
    /// [`MANIFEST_V1`] (optional in the spec; always written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The artifact type (OCI 1.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// The config blob.
    pub config: Descriptor,
    /// The layers.
    #[serde(default)]
    pub layers: Vec<Descriptor>,
    /// For a referrer: the manifest it refers to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Descriptor>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// An OCI image index (also what the referrers API and the tag fallback hold).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Index {
    /// Always 2.
    pub schema_version: u32,
    /// [`INDEX_V1`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The manifests it lists.
    #[serde(default)]
    pub manifests: Vec<Descriptor>,
}

impl Index {
    /// An empty index.
    pub fn new() -> Index {
        Index {
            schema_version: 2,
            media_type: Some(INDEX_V1.into()),
            manifests: Vec::new(),
        }
    }

    /// The index as the bytes to push.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("an index always serialises")
    }
}

impl Default for Index {
    fn default() -> Self {
        Index::new()
    }
}

/// A manifest request's answer, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Document {
    /// An image manifest.
    Manifest(Box<Manifest>),
    /// An image index.
    Index(Index),
}

/// Why a document or a layout was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LayoutError(pub String);

/// Parses a manifest request's answer: by the `mediaType` field, else the `Content-Type`
/// (`content_type`), else its shape. Descriptors must carry sha256 digests.
pub fn parse(bytes: &[u8], content_type: Option<&str>) -> Result<Document, LayoutError> {
    if bytes.len() as u64 > MAX_MANIFEST {
        return Err(LayoutError(format!(
            "the manifest is {} bytes; the limit is {MAX_MANIFEST}",
            bytes.len()
        )));
    }
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| LayoutError(format!("the manifest is not JSON: {e}")))?;
    let declared = value
        .get("mediaType")
        .and_then(|m| m.as_str())
        .map(str::to_string)
        .or_else(|| content_type.map(|c| c.split(';').next().unwrap_or(c).trim().to_string()));
    let is_index = match declared.as_deref() {
        Some(INDEX_V1 | DOCKER_LIST_V2) => true,
        Some(MANIFEST_V1 | DOCKER_MANIFEST_V2) => false,
        _ => value.get("manifests").is_some() && value.get("layers").is_none(),
    };
    let schema = value.get("schemaVersion").and_then(|v| v.as_u64());
    if schema != Some(2) {
        return Err(LayoutError(format!(
            "schemaVersion is {}, not 2",
            schema.map_or("missing".to_string(), |s| s.to_string())
        )));
    }
    let doc = if is_index {
        let index: Index = serde_json::from_value(value)
            .map_err(|e| LayoutError(format!("not an OCI image index: {e}")))?;
        for d in &index.manifests {
            check_descriptor(d)?;
        }
        Document::Index(index)
    } else {
        let m: Manifest = serde_json::from_value(value)
            .map_err(|e| LayoutError(format!("not an OCI image manifest: {e}")))?;
        check_descriptor(&m.config)?;
        for d in m.layers.iter().chain(&m.subject) {
            check_descriptor(d)?;
        }
        Document::Manifest(Box::new(m))
    };
    Ok(doc)
}

fn check_descriptor(d: &Descriptor) -> Result<(), LayoutError> {
    check_digest(&d.digest).map_err(|e| LayoutError(e.to_string()))
}

/// Which layout a skill manifest is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `dev.toolhive.skills.v1`.
    ToolHive,
    /// `application/vnd.stacklok.skillet.skill.v1…`.
    Skillet,
    /// `application/vnd.agentskills.skill.*`.
    AgentSkills,
}

impl Layout {
    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Layout::ToolHive => "ToolHive",
            Layout::Skillet => "Skillet",
            Layout::AgentSkills => "Agent Skills",
        }
    }
}

/// A skill manifest, understood: its layout and the one layer holding the files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillLayout {
    /// The layout.
    pub layout: Layout,
    /// The layer: a gzip-compressed tar of the skill's files.
    pub layer: Descriptor,
}

/// Which layout `m` is in, and its layer; an unknown layout is an error naming every media type
/// found.
pub fn skill_layout(m: &Manifest) -> Result<SkillLayout, LayoutError> {
    let kinds = [
        m.artifact_type.as_deref(),
        Some(m.config.media_type.as_str()),
    ];
    let layout = kinds.iter().flatten().find_map(|k| {
        if *k == TOOLHIVE_ARTIFACT {
            Some(Layout::ToolHive)
        } else if k.starts_with(SKILLET_PREFIX) {
            Some(Layout::Skillet)
        } else if k.starts_with(AGENTSKILLS_PREFIX) {
            Some(Layout::AgentSkills)
        } else {
            None
        }
    });
    let Some(layout) = layout else {
        return Err(LayoutError(format!(
            "not a skill in a layout skillcat reads (ToolHive `{TOOLHIVE_ARTIFACT}`, Skillet `{SKILLET_PREFIX}`, Agent Skills `{AGENTSKILLS_PREFIX}*`); found {}",
            found_types(m)
        )));
    };
    let tars: Vec<&Descriptor> = m
        .layers
        .iter()
        .filter(|l| l.media_type.ends_with("tar+gzip") || l.media_type.ends_with(".tar.gzip"))
        .collect();
    match tars[..] {
        [one] => Ok(SkillLayout {
            layout,
            layer: one.clone(),
        }),
        _ => Err(LayoutError(format!(
            "a {} skill has one tar+gzip layer; found {} ({})",
            layout.name(),
            tars.len(),
            found_types(m)
        ))),
    }
}

/// Every media type of a manifest, for messages.
fn found_types(m: &Manifest) -> String {
    let mut parts = Vec::new();
    match &m.artifact_type {
        Some(a) => parts.push(format!("artifactType {a:?}")),
        None => parts.push("no artifactType".into()),
    }
    parts.push(format!("config {:?}", m.config.media_type));
    if m.layers.is_empty() {
        parts.push("no layers".into());
    } else {
        let layers: Vec<String> = m
            .layers
            .iter()
            .map(|l| format!("{:?}", l.media_type))
            .collect();
        parts.push(format!("layers {}", layers.join(", ")));
    }
    parts.join(", ")
}

/// The manifest an index points to: the first image manifest listed (every platform of a skill
/// holds the same files), preferring one whose artifact type is a skill layout's.
pub fn pick_from_index(index: &Index) -> Result<&Descriptor, LayoutError> {
    let manifests: Vec<&Descriptor> = index
        .manifests
        .iter()
        .filter(|d| d.media_type == MANIFEST_V1 || d.media_type == DOCKER_MANIFEST_V2)
        .collect();
    manifests
        .iter()
        .find(|d| {
            d.artifact_type.as_deref().is_some_and(|a| {
                a == TOOLHIVE_ARTIFACT
                    || a.starts_with(SKILLET_PREFIX)
                    || a.starts_with(AGENTSKILLS_PREFIX)
            })
        })
        .or(manifests.first())
        .copied()
        .ok_or_else(|| {
            let types: Vec<&str> = index
                .manifests
                .iter()
                .map(|d| d.media_type.as_str())
                .collect();
            LayoutError(format!(
                "the image index lists no image manifest (found {})",
                if types.is_empty() {
                    "nothing".to_string()
                } else {
                    types.join(", ")
                }
            ))
        })
}

/// What a skill's manifest says about it: the version it was published as and skillcat's
/// digests, when the annotations carry them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Annotated {
    /// `dev.toolhive.skills.version`, else `org.opencontainers.image.version`.
    pub version: Option<String>,
    /// [`SKILLCAT_SKILL_DIGEST`].
    pub skill_digest: Option<String>,
    /// [`SKILLCAT_MANIFEST_DIGEST`].
    pub manifest_digest: Option<String>,
}

/// Reads [`Annotated`] from a manifest's annotations.
pub fn annotated(m: &Manifest) -> Annotated {
    let get = |k: &str| m.annotations.get(k).filter(|v| !v.is_empty()).cloned();
    Annotated {
        version: get(TH_VERSION).or_else(|| get(OCI_VERSION)),
        skill_digest: get(SKILLCAT_SKILL_DIGEST),
        manifest_digest: get(SKILLCAT_MANIFEST_DIGEST),
    }
}

/// What [`toolhive_manifest`] needs to know of a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillInfo {
    /// `name` of the frontmatter.
    pub name: String,
    /// `description`.
    pub description: String,
    /// The version pushed (the tag by default).
    pub version: String,
    /// `allowed-tools`, as written.
    pub allowed_tools: Option<String>,
    /// `license`.
    pub license: Option<String>,
    /// Every file's path, sorted.
    pub files: Vec<String>,
    /// The skill digest.
    pub skill_digest: String,
    /// The digest of the skill's manifest.
    pub manifest_digest: String,
    /// `org.opencontainers.image.created`: RFC 3339, fixed so pushes are reproducible.
    pub created: String,
}

/// The config blob and the manifest of a skill in ToolHive's layout, with skillcat's
/// annotations: `layer` is the gzip-compressed tar, `diff_id` the sha256 of the tar inside.
/// The same skill always gives the same bytes.
pub fn toolhive_manifest(info: &SkillInfo, layer: &[u8], diff_id: &str) -> (Vec<u8>, Vec<u8>) {
    let mut labels = serde_json::Map::new();
    labels.insert(TH_NAME.into(), info.name.clone().into());
    labels.insert(TH_DESCRIPTION.into(), info.description.clone().into());
    labels.insert(TH_VERSION.into(), info.version.clone().into());
    if let Some(t) = &info.allowed_tools {
        labels.insert(TH_ALLOWED_TOOLS.into(), t.clone().into());
    }
    if let Some(l) = &info.license {
        labels.insert(TH_LICENSE.into(), l.clone().into());
    }
    labels.insert(
        TH_FILES.into(),
        serde_json::to_string(&info.files)
            .expect("paths serialise")
            .into(),
    );
    let config = serde_json::json!({
        "architecture": "amd64",
        "os": "linux",
        "created": info.created,
        "config": { "Labels": labels },
        "rootfs": { "type": "layers", "diff_ids": [diff_id] },
    });
    let config = serde_json::to_vec(&config).expect("a config serialises");
    let mut layer_desc = Descriptor::of(LAYER_TAR_GZIP, layer);
    layer_desc
        .annotations
        .insert(OCI_TITLE.into(), "skill.tar.gz".into());
    let mut annotations = BTreeMap::new();
    annotations.insert(OCI_CREATED.into(), info.created.clone());
    annotations.insert(TH_NAME.into(), info.name.clone());
    annotations.insert(TH_DESCRIPTION.into(), info.description.clone());
    annotations.insert(TH_VERSION.into(), info.version.clone());
    annotations.insert(SKILLCAT_SKILL_DIGEST.into(), info.skill_digest.clone());
    annotations.insert(
        SKILLCAT_MANIFEST_DIGEST.into(),
        info.manifest_digest.clone(),
    );
    let manifest = Manifest {
        schema_version: 2,
        media_type: Some(MANIFEST_V1.into()),
        artifact_type: Some(TOOLHIVE_ARTIFACT.into()),
        config: Descriptor::of(IMAGE_CONFIG, &config),
        layers: vec![layer_desc],
        subject: None,
        annotations,
    };
    let manifest = serde_json::to_vec(&manifest).expect("a manifest serialises");
    (config, manifest)
}

/// The manifest of a signature referrer: artifact type [`SIGNATURE_ARTIFACT`], the empty
/// config, one layer (the `.minisig` text), `subject` = the skill's manifest.
pub fn signature_manifest(subject: Descriptor, signature: &[u8], title: &str) -> Vec<u8> {
    let mut layer = Descriptor::of(MINISIG_LAYER, signature);
    layer.annotations.insert(OCI_TITLE.into(), title.into());
    let m = Manifest {
        schema_version: 2,
        media_type: Some(MANIFEST_V1.into()),
        artifact_type: Some(SIGNATURE_ARTIFACT.into()),
        config: Descriptor::of(EMPTY_CONFIG, b"{}"),
        layers: vec![layer],
        subject: Some(Descriptor {
            artifact_type: None,
            platform: None,
            annotations: BTreeMap::new(),
            ..subject
        }),
        annotations: BTreeMap::new(),
    };
    serde_json::to_vec(&m).expect("a manifest serialises")
}

/// The tag of the referrers fallback for a manifest digest: `sha256-<hex>`.
pub fn fallback_tag(digest: &str) -> String {
    digest.replacen(':', "-", 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(media: &str) -> Descriptor {
        Descriptor::of(media, media.as_bytes())
    }

    fn manifest(artifact: Option<&str>, config: &str, layers: &[&str]) -> Manifest {
        Manifest {
            schema_version: 2,
            media_type: Some(MANIFEST_V1.into()),
            artifact_type: artifact.map(str::to_string),
            config: d(config),
            layers: layers.iter().map(|l| d(l)).collect(),
            subject: None,
            annotations: BTreeMap::new(),
        }
    }

    #[test]
    fn the_three_layouts_are_read_and_others_named() {
        let m = manifest(Some(TOOLHIVE_ARTIFACT), IMAGE_CONFIG, &[LAYER_TAR_GZIP]);
        assert_eq!(skill_layout(&m).unwrap().layout, Layout::ToolHive);
        let m = manifest(
            None,
            "application/vnd.stacklok.skillet.skill.v1+json",
            &[LAYER_TAR_GZIP],
        );
        assert_eq!(skill_layout(&m).unwrap().layout, Layout::Skillet);
        let m = manifest(
            None,
            "application/vnd.agentskills.skill.config.v1+json",
            &["application/vnd.agentskills.skill.content.v1.tar+gzip"],
        );
        assert_eq!(skill_layout(&m).unwrap().layout, Layout::AgentSkills);
        let m = manifest(
            None,
            "application/vnd.docker.agent.config.v1+json",
            &["application/yaml"],
        );
        let e = skill_layout(&m).unwrap_err().0;
        assert!(
            e.contains("application/vnd.docker.agent.config.v1+json"),
            "{e}"
        );
        assert!(e.contains("application/yaml"), "{e}");
        let m = manifest(
            Some(TOOLHIVE_ARTIFACT),
            IMAGE_CONFIG,
            &[LAYER_TAR_GZIP, LAYER_TAR_GZIP],
        );
        assert!(skill_layout(&m).unwrap_err().0.contains("found 2"));
    }

    #[test]
    fn written_manifests_parse_back_and_are_reproducible() {
        let info = SkillInfo {
            name: "pdf".into(),
            description: "PDFs".into(),
            version: "1.0.0".into(),
            allowed_tools: None,
            license: Some("MIT".into()),
            files: vec!["SKILL.md".into()],
            skill_digest: format!("sha256:{}", "1".repeat(64)),
            manifest_digest: format!("sha256:{}", "2".repeat(64)),
            created: "1980-01-01T00:00:00Z".into(),
        };
        let (c1, m1) = toolhive_manifest(&info, b"layer", "sha256:x");
        let (c2, m2) = toolhive_manifest(&info, b"layer", "sha256:x");
        assert_eq!((&c1, &m1), (&c2, &m2));
        let Document::Manifest(m) = parse(&m1, None).unwrap() else {
            panic!("a manifest")
        };
        assert_eq!(m.config.digest, crate::digest::sha256_digest(&c1));
        assert_eq!(skill_layout(&m).unwrap().layout, Layout::ToolHive);
        assert_eq!(annotated(&m).version.as_deref(), Some("1.0.0"));
        let sig = signature_manifest(Descriptor::of(MANIFEST_V1, &m1), b"sig", "pdf.minisig");
        let Document::Manifest(s) = parse(&sig, None).unwrap() else {
            panic!("a manifest")
        };
        assert_eq!(s.subject.unwrap().digest, crate::digest::sha256_digest(&m1));
    }

    #[test]
    fn bad_documents_are_refused() {
        assert!(parse(b"{", None).is_err());
        assert!(parse(br#"{"schemaVersion": 1}"#, None).is_err());
        let bad_digest = br#"{"schemaVersion":2,"config":{"mediaType":"x","digest":"md5:00","size":1},"layers":[]}"#;
        assert!(parse(bad_digest, None).is_err());
        let index = br#"{"schemaVersion":2,"manifests":[]}"#;
        let Document::Index(i) = parse(index, None).unwrap() else {
            panic!("an index")
        };
        assert!(pick_from_index(&i).is_err());
    }
}
