//! Archives and signatures: hostile archives, archives as sources, minisign interoperability and the signature chain from pack to verify.

mod hostile;
mod minisign_interop;
mod signature_chain;
mod sources;
