//! `match` (placeholder until written).

/// `skillcat match` arguments.
#[derive(Debug, clap::Args)]
pub struct MatchArgs {}

/// `skillcat match`
pub async fn run(_a: MatchArgs) -> u8 {
    super::USAGE
}
