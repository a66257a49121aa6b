//! Registries: the SQLite registry, the central registry's publishing API (tokens, audit, upload bounds, reliability), versions and what a served registry answers.

mod local;
mod commands;
mod audit;
mod tokens;
mod central_operations;
mod central;
mod central_reliability;
mod upload_bounds;
mod served;
mod versions;
mod disk_full;
