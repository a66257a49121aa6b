//! Stores: the directory source, HTTP indexes and their cache, OCI registries, source paths, and the same answers from every store.

mod dir;
mod dir_race;
mod equivalence;
mod http;
mod http_client_abuse;
mod http_freshness;
mod oci;
mod oci_credentials;
mod paths;
