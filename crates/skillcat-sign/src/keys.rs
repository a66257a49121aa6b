//! Keys: parsing public and secret keys, generating pairs, signing.

use super::*;

pub(super) struct ParsedPublicKey {
    pub(super) key: PublicKey,
    pub(super) base64: String,
    pub(super) key_id: String,
}

pub(super) fn parse_public_key(text: &str) -> Result<ParsedPublicKey, SignError> {
    let bad = |reason: String| SignError::InvalidPublicKey { reason };
    let lines = split_lines(text.trim());
    let line = match lines.as_slice() {
        [line] => line.trim(),
        [comment, line] if comment.starts_with("untrusted comment:") => line.trim(),
        [_, _] => {
            return Err(bad(
                "the first of two lines must be `untrusted comment: …`".into()
            ));
        }
        _ => {
            return Err(bad(format!(
                "expected the base64 key line, or a .pub file (comment line + key line); \
                 found {} lines",
                lines.len()
            )));
        }
    };
    let bytes = decode_exact(line, PUBLIC_KEY_BYTES).map_err(|e| bad(format!("key line: {e}")))?;
    if bytes[..2] != ALG_ED {
        return Err(bad(format!("unsupported key algorithm {:?}", &bytes[..2])));
    }
    let key = PublicKey::from_bytes(&bytes).map_err(|e| bad(e.to_string()))?;
    Ok(ParsedPublicKey {
        key,
        base64: line.to_string(),
        key_id: key_id_hex(&bytes[2..10]),
    })
}

/// The key id of a public key (the `.pub` file or its bare base64 line): 16 uppercase hex
/// digits, as minisign prints it.
pub fn key_id_of_public_key(text: &str) -> Result<String, SignError> {
    Ok(parse_public_key(text)?.key_id)
}

/// The bare base64 line of a public key given as a `.pub` file or as that line: what a
/// keyring's `public_key` holds.
pub fn public_key_base64(text: &str) -> Result<String, SignError> {
    Ok(parse_public_key(text)?.base64)
}

pub(super) fn check_password(password: Option<&str>) -> Result<(), SignError> {
    match password {
        Some(p) if p.len() > PASSWORD_MAX_BYTES => Err(SignError::PasswordTooLong { len: p.len() }),
        _ => Ok(()),
    }
}

/// Reads a secret key file; `password` decrypts a password-protected one.
pub(super) fn load_secret_key(text: &str, password: Option<&str>) -> Result<SecretKey, SignError> {
    let bad = |reason: String| SignError::InvalidSecretKey { reason };
    check_password(password)?;
    let lines = split_lines(text.trim());
    let line = match lines.as_slice() {
        [comment, line] if comment.starts_with("untrusted comment:") => line.trim(),
        _ => {
            return Err(bad(
                "expected a minisign secret key file: `untrusted comment: …` and a key line".into(),
            ));
        }
    };
    let bytes = decode_exact(line, SECRET_KEY_BYTES).map_err(|e| bad(format!("key line: {e}")))?;
    if bytes[..2] != ALG_ED {
        return Err(bad(format!("unsupported key algorithm {:?}", &bytes[..2])));
    }
    if bytes[4..6] != CHK_BLAKE2B {
        return Err(bad(format!(
            "unsupported checksum algorithm {:?}",
            &bytes[4..6]
        )));
    }
    let encrypted = match [bytes[2], bytes[3]] {
        KDF_NONE => false,
        KDF_SCRYPT => true,
        other => {
            return Err(bad(format!(
                "unsupported key derivation algorithm {other:?}"
            )));
        }
    };
    let key_box = SecretKeyBox::from_string(&format!("{UNTRUSTED_PREFIX}secret key\n{line}\n"))
        .map_err(|e| bad(e.to_string()))?;
    match (encrypted, password) {
        // `minisign -G -W` writes an all-zero checksum and the tool never checks it for an
        // unencrypted key; the crate would call such a key corrupted. Read it as the tool does:
        // `sign` still catches a damaged key, whose signatures its own public key refuses.
        (false, None) if bytes[SECRET_KEY_BYTES - 32..].iter().all(|&b| b == 0) => {
            SecretKey::from_bytes(&bytes).map_err(|e| bad(e.to_string()))
        }
        (false, None) => SecretKey::from_unencrypted_box(key_box)
            .map_err(|e| bad(format!("{e} (checksum mismatch)"))),
        (false, Some(_)) => Err(SignError::SecretKeyNotEncrypted),
        (true, None) => Err(SignError::PasswordRequired),
        (true, Some(password)) => {
            SecretKey::from_box(key_box, Some(password.to_string())).map_err(|e| match e.kind() {
                minisign::ErrorKind::Verify => SignError::WrongPassword,
                _ => bad(e.to_string()),
            })
        }
    }
}

/// Makes a new key pair: `(public key file text, secret key file text)`, both in minisign's
/// formats. With `password` the secret key is encrypted as minisign does (scrypt); without,
/// it is stored unencrypted (as `minisign -G -W`).
pub fn generate_keypair(password: Option<&str>) -> Result<(String, String), SignError> {
    check_password(password)?;
    let pair = match password {
        None => KeyPair::generate_unencrypted_keypair(),
        Some(p) => KeyPair::generate_encrypted_keypair(Some(p.to_string())),
    }
    .map_err(crypto("key generation"))?;
    // Written as the minisign tool writes it (the crate's own box adds a colon to the comment).
    let public = format!(
        "{UNTRUSTED_PREFIX}minisign public key {}\n{}\n",
        key_id_hex(pair.pk.keynum()),
        pair.pk.to_base64()
    );
    let comment = match password {
        Some(_) => "minisign encrypted secret key",
        None => "minisign secret key (not encrypted)",
    };
    let secret = pair
        .sk
        .to_box(Some(comment))
        .map_err(crypto("key generation"))?
        .into_string();
    Ok((public, secret))
}

/// Signs a statement: returns the `.minisig` file text (prehashed, with the statement as the
/// trusted comment). `password` decrypts a password-protected secret key.
pub fn sign(
    statement: &Statement,
    secret_key_text: &str,
    password: Option<&str>,
) -> Result<String, SignError> {
    statement.check()?;
    sign_text(
        &statement.to_text(),
        &statement.to_trusted_comment(),
        secret_key_text,
        password,
    )
}

/// Signs `text` (prehashed) with `trusted` as the trusted comment: the `.minisig` text.
pub(super) fn sign_text(
    text: &str,
    trusted: &str,
    secret_key_text: &str,
    password: Option<&str>,
) -> Result<String, SignError> {
    let secret = load_secret_key(secret_key_text, password)?;
    let public = PublicKey::from_secret_key(&secret).map_err(crypto("signing"))?;
    // Passing the public key makes minisign check the new signature before returning it.
    let signature = minisign::sign(
        Some(&public),
        &secret,
        Cursor::new(text.as_bytes()),
        Some(trusted),
        Some(UNTRUSTED_COMMENT),
    )
    .map_err(|e| match e.kind() {
        minisign::ErrorKind::Verify => SignError::InvalidSecretKey {
            reason: "its own public key does not verify its signatures (corrupted key)".into(),
        },
        _ => crypto("signing")(e),
    })?;
    Ok(signature.into_string())
}

/// Where the detached signature of `archive` lives: `<archive>.minisig`.
pub fn signature_path(archive: &Path) -> PathBuf {
    let mut path = archive.as_os_str().to_owned();
    path.push(SIGNATURE_SUFFIX);
    PathBuf::from(path)
}

/// The two files of a key pair `skillcat keygen -o BASE` writes: `BASE.pub` and `BASE.key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFiles {
    /// The public key (`BASE.pub`), readable by all.
    pub public: PathBuf,
    /// The secret key (`BASE.key`), readable by its owner only.
    pub secret: PathBuf,
}

/// Why a key pair was not written.
#[derive(Debug, thiserror::Error)]
pub enum KeygenError {
    /// A file of the pair exists and overwriting was not asked for.
    #[error("{} exists", .0.display())]
    Exists(PathBuf),
    /// The keys could not be made (a password minisign refuses, say).
    #[error(transparent)]
    Generate(#[from] SignError),
    /// A file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl KeyFiles {
    /// The files of the pair named `base`.
    pub fn new(base: &str) -> KeyFiles {
        KeyFiles {
            public: PathBuf::from(format!("{base}.pub")),
            secret: PathBuf::from(format!("{base}.key")),
        }
    }

    /// Checks that neither file exists unless `overwrite`: said before a password is asked.
    pub fn check_free(&self, overwrite: bool) -> Result<(), KeygenError> {
        for p in [&self.public, &self.secret] {
            if p.exists() && !overwrite {
                return Err(KeygenError::Exists(p.clone()));
            }
        }
        Ok(())
    }

    /// Makes a new key pair ([`generate_keypair`], the secret key encrypted with `password`
    /// when given) and writes it: the secret key first, mode 0600 (also when it replaces a file
    /// others could read), then the public key. Returns the key id.
    pub fn generate(&self, password: Option<&str>) -> Result<String, KeygenError> {
        use std::io::Write;
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let (public, secret) = generate_keypair(password)?;
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&self.secret)
            .and_then(|mut f| {
                // `mode` applies only to a file created here: an existing one may be readable
                // by others, so restrict it before the secret goes in.
                f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
                f.write_all(secret.as_bytes())
            });
        let at = |path: &PathBuf| {
            let path = path.clone();
            move |source| KeygenError::Write { path, source }
        };
        written.map_err(at(&self.secret))?;
        std::fs::write(&self.public, &public).map_err(at(&self.public))?;
        Ok(key_id_of_public_key(&public).unwrap_or_default())
    }
}
