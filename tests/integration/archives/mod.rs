//! Archives and signatures: hostile archives, archives as sources, minisign interoperability and the signature chain from pack to verify.

mod hostile;
mod sources;
mod signature_chain;
mod minisign_interop;
