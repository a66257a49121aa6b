//! A central registry for the tests: an empty registry in a temporary folder, its tokens, and
//! skill documents that carry a version.

use std::path::Path;

use super::bin::Skillcat;

/// A SKILL.md for `name` at `version`, `extra` in its body (to vary its content).
pub fn doc(name: &str, version: &str, extra: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: Does {name} things for the central registry tests.\n\
         metadata:\n  version: \"{version}\"\n---\n# {name}\n\n{extra}\n"
    )
}

/// A temporary folder holding an empty registry, `r.db`.
pub fn registry_dir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    Skillcat::new(&["registry", "init", "r.db"])
        .cwd(tmp.path())
        .run()
        .code(0);
    tmp
}

/// `skillcat token create` into `dir/tokens.toml`; returns the token.
pub fn token(dir: &Path, name: &str, scope: &str, can: &str) -> String {
    let out = Skillcat::new(&[
        "token",
        "create",
        "--tokens",
        "tokens.toml",
        "--name",
        name,
        "--scope",
        scope,
        "--can",
        can,
    ])
    .cwd(dir)
    .run();
    out.code(0);
    out.out().trim().to_string()
}

/// A throwaway CA, and a certificate it issued for `localhost` and 127.0.0.1, written as
/// `ca.pem`, `cert.pem` and `key.pem` in `dir`; a second CA's pair too, as `other-cert.pem` and
/// `other-key.pem` (a key that is not `cert.pem`'s).
pub fn certificates(dir: &Path) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "skillcat test CA");
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    std::fs::write(dir.join("ca.pem"), ca_cert.pem()).unwrap();
    std::fs::write(dir.join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), key.serialize_pem()).unwrap();
    let other = KeyPair::generate().unwrap();
    std::fs::write(dir.join("other-key.pem"), other.serialize_pem()).unwrap();
}
