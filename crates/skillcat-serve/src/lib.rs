//! Serving skills over HTTP, and exporting the same tree as static files.
//!
//! ```text
//! /.well-known/agent-skills/index.json        RFC v0.2.0 index (+ v0.1 "files", + "skillcat" extra)
//! /.well-known/agent-skills/<name>/<path>     each file by name (for clients that read "files")
//! /.well-known/skills/index.json              v0.1 index: name, description, files
//! /.well-known/skills/<name>/<path>           each file by name (v0.1)
//! /blobs/sha256/<hex>                         every file and archive by content, immutable
//! ```
//!
//! An entry of the v0.2.0 index:
//!
//! ```json
//! {"name": "pdf-forms", "type": "archive", "description": "…",
//!  "url": "../../blobs/sha256/<hex>", "digest": "sha256:<hex>", "version": "1.2.0",
//!  "files": ["SKILL.md", "scripts/fill.py"],
//!  "skillcat": {"skill_digest": "sha256:…",
//!               "files": [{"path": "SKILL.md", "digest": "sha256:…", "size": 812, "executable": false}],
//!               "signature": "untrusted comment: …" }}
//! ```
//!
//! A registry served (with [`SiteOptions::yanked`]) also lists its yanked versions, apart from
//! `skills` so that no client takes one for a skill to use: `"skillcat": {"yanked": [entry…]}`
//! at the top of the v0.2.0 index, each entry as above with `"yanked": true`, its archive served
//! as a blob. skillcat reads one only when asked for it by `NAME@VERSION`.
//!
//! - `url` is relative to the index and names the content-addressed blob of the skill's
//!   reproducible `.tar.gz` ([`crate::pack::write_tar_gz`], the skill at the archive root), so
//!   an index and the archives it names can never disagree on a CDN: a new version is a new
//!   URL. `digest` is the sha256 of those archive bytes (the RFC's artifact digest); the skill
//!   digest, per-file digests and signature ride in `skillcat`, which other clients ignore.
//! - Indexes and files by name: `Cache-Control: no-cache` with a strong `ETag` (a client
//!   revalidates with `If-None-Match` and gets `304`). Blobs: `Cache-Control: public,
//!   max-age=31536000, immutable`. Every path answers `GET` and `HEAD`, a single `Range`
//!   (`206`, or `416` when it selects nothing), CORS for any origin (`OPTIONS` answers a preflight with `204`); unknown paths are `404`, other
//!   methods `405`; every answer says `X-Content-Type-Options: nosniff`.
//! - What one client may cost is bounded ([`ServeLimits`]): timeouts for a request head, an idle
//!   connection and a whole request, a cap on connections (and on those of one address), and a
//!   bounded drain on shutdown.
//! - Archives are served as `application/gzip`, Markdown as `text/markdown`, other UTF-8 as
//!   `text/plain`, the rest as `application/octet-stream` (never as HTML).
//!
//! The [`Site`] is built once from any [`Source`](crate::source::Source): only skills that
//! load and validate are served; the others come back as [`SiteProblem`]s.

mod api;
mod assemble;

// The layers below, under the names this crate's code uses.
pub(crate) use skillcat_core::{
    Error, archive, capability, digest, document, error, network, pack, path, source, version,
};
pub(crate) use skillcat_registry as registry;
pub(crate) use skillcat_registry::prepare as publish;
pub(crate) use skillcat_sign as sign;
mod export;
mod feed;
mod index_statement;
mod limits;
mod respond;
mod server;
mod site;
#[cfg(feature = "tls")]
mod tls;
pub mod web;

pub use api::{
    ApiFileError, ApiOptions, DEFAULT_BYTES_PER_MINUTE, DEFAULT_MAX_UPLOAD, publishing_router,
};
pub use assemble::{
    IndexSigningError, PublishingSourceError, SiteRequest, build_site, catalog_of_url,
    publishing_registry, publishing_store, registry_path, release_freed_memory,
    return_large_buffers,
};
pub use export::{Exported, export, export_signed};
pub use index_statement::{
    INDEX_STATEMENT_PATH, IndexSigning, LiveStatement, sign_index, write_for_export,
};
pub use limits::{AnswerTimeout, Conn, Guarded, LimitedListener, ServeLimits, track};
#[cfg(feature = "tls")]
pub use server::run_app_tls;
pub use server::{
    RangeRequest, answer, decode_path, etag_matches, following_router, parse_range, respond,
    router, run, run_app, shutdown_signal, signed_router, with_layers,
};
pub use site::{
    AGENT_SKILLS_INDEX, IMMUTABLE, PageInfo, REVALIDATE, RegistryVersions, RegistryYanked,
    SKILLS_INDEX, SignatureLookup, Signed, Site, SiteFile, SiteOptions, SiteProblem, SiteSkill,
    VersionLookup, VersionMeta, YankedLookup, content_type,
};
#[cfg(feature = "tls")]
pub use tls::{TlsError, TlsIo, TlsListener, server_config};
pub use web::WebOptions;
