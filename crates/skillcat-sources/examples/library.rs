//! Every skill of a source, validated, with its digest and summary.

use skillcat_core::document::ValidateOptions;
use skillcat_core::source::{self, SourceExt};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), skillcat_core::error::Error> {
    let src = skillcat_sources::open("fixtures/skills")?; // a directory, an archive, a registry, a URL, git…
    let found = source::discover(&*src).await?; // every skill *and* every fault
    assert!(found.faults.is_empty());
    for skill in &found.skills {
        assert!(skill.validate(&ValidateOptions::default()).is_empty());
        let manifest = src
            .manifest(skill.root(), &skill.name(), skill.version().unwrap_or(""))
            .await?;
        println!("{}  {}", manifest.digest, skill.summary());
    }
    Ok(())
}
