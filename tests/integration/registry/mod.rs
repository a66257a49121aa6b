//! Registries: the SQLite registry, the central registry's publishing API (tokens, audit, upload bounds, reliability), versions and what a served registry answers.

mod audit;
mod batch;
mod central;
mod central_operations;
mod central_reliability;
mod commands;
mod copy;
mod disk_full;
mod durable;
mod engines;
mod gc;
mod local;
mod postgres;
mod replicas;
mod served;
mod served_reads;
mod tokens;
mod upload_bounds;
mod versions;
