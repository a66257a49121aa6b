//! skillcat over the network: the HTTP and OCI sources of Agent Skills, each reading through a
//! verify-before-store cache, and pushing skills to OCI registries.
//!
//! | module | what |
//! | --- | --- |
//! | [`client`] | the one HTTP client: timeouts, redirects, TLS roots, proxies, retries |
//! | [`central`] | a central registry's client (`publish`, `yank`) and the tokens `login` keeps |
//! | [`http`] | an Agent Skills discovery index over HTTP(S), and the content-addressed cache |
//! | [`options`] | what a remote source is opened with; the verifier of a signed index |
//! | [`oci`] | `oci://HOST/REPO[:TAG|@sha256:…]`: skills stored as OCI artifacts |
//! | [`push`] | a skill into an OCI registry, signature as a referrer |
//! | [`search`] | a served catalog's search API (`skillcat search URL QUERY`) |

pub mod central;
pub mod client;
pub mod http;
pub mod oci;
pub mod options;
pub mod push;
pub mod search;

// The core's modules, under the names this crate's code uses.
pub(crate) use skillcat_core::source;
pub(crate) use skillcat_core::{archive, digest, document, error, pack, path};
